import { addMonthsClamped, MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import { invoiceContent } from "@edge-platform/shared/testing/invoice-content";
import { beforeAll, describe, expect, it } from "vitest";
import { auditRowsFor } from "./audit-helpers.ts";
import {
  asTenant,
  buildMoneyPlan,
  consumeAt,
  type MoneyPlan,
  runCycle,
  steerableProvider,
} from "./billing-helpers.ts";
import { platformAdmin, subscribe } from "./catalog-helpers.ts";
import { type Account, call, expectError, type Json, register } from "./helpers.ts";

// PUT /api/v1/tenants/{id}/billing-details and the TAX line it puts on invoices.

const MINUTE = 60_000;
const ADDRESS = { line1: "1 Engine Row", city: "London", postalCode: "EC1A 1AA", country: "gb" };
let admin: Account;
let growth: MoneyPlan;

beforeAll(async () => {
  admin = await platformAdmin();
  growth = await buildMoneyPlan(admin, 2900);
});

const putDetails = (tenantId: string, body: unknown, account: Account = admin, key?: string) =>
  call(`/api/v1/tenants/${tenantId}/billing-details`, {
    method: "PUT",
    token: account.accessToken,
    body,
    ...(key ? { headers: { "idempotency-key": key } } : {}),
  });

const details = (taxRate: number) => ({
  taxRate,
  taxId: "GB123456789",
  legalName: "Analytical Engines Ltd",
  address: ADDRESS,
});

describe("PUT /api/v1/tenants/{id}/billing-details", () => {
  it("sets the rate and legal details, replays with an Idempotency-Key, and records the change", async () => {
    const owner = await register();
    const put = await putDetails(owner.tenant.id, details(8.875), admin, "details-1");
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toMatchObject({
      tenantId: owner.tenant.id,
      taxRate: 8.875,
      taxId: "GB123456789",
      legalName: "Analytical Engines Ltd",
      address: { ...ADDRESS, country: "GB", line2: null, region: null },
    });
    const replay = await putDetails(owner.tenant.id, details(8.875), admin, "details-1");
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    const reused = await putDetails(owner.tenant.id, details(9), admin, "details-1");
    expectError(reused, 422);

    const changed = await putDetails(owner.tenant.id, { ...details(10), taxId: null });
    expect(changed.body).toMatchObject({ taxRate: 10, taxId: null });
    const read = await call(`/api/v1/tenants/${owner.tenant.id}/billing-details`, {
      token: admin.accessToken,
    });
    expect(read.body).toEqual(changed.body);

    const rows = await auditRowsFor(owner.tenant.id, "tenant.billing_details_updated");
    expect(rows).toHaveLength(2);
    expect(rows.map((row) => JSON.parse(row.changes))).toContainEqual({
      taxRate: { before: 8.875, after: 10 },
      taxId: { before: "GB123456789", after: null },
    });
  });

  it("is for platform administrators; 404 for an unknown tenant; clear 400s", async () => {
    const owner = await register();
    expectError(await putDetails(owner.tenant.id, details(10), owner), 403);
    expectError(
      await putDetails("00000000-0000-4000-8000-000000000000", details(10)),
      404,
      /not found/,
    );
    const bad = async (body: unknown, message: RegExp) => {
      const result = await putDetails(owner.tenant.id, body);
      expectError(result, 400);
      expect(JSON.stringify(result.body.message)).toMatch(message);
    };
    await bad(details(8.87501), /at most 4 decimals/);
    await bad(details(100.5), /from 0 to 100/);
    await bad(details(-1), /from 0 to 100/);
    await bad({ ...details(10), taxRate: "10" }, /taxRate must be a number/);
    await bad({ ...details(10), legalName: " " }, /legalName should not be empty/);
    await bad({ ...details(10), address: { ...ADDRESS, country: "GBR" } }, /2-letter/);
    await bad({ taxRate: 10, legalName: "X", address: ADDRESS, vat: 1 }, /vat/);
    expectError(
      await call(`/api/v1/tenants/${owner.tenant.id}/billing-details`, {
        token: admin.accessToken,
      }),
      404,
      /no billing details/,
    );
  });
});

describe("tax on invoices", () => {
  it("adds a TAX line on the subtotal, rounded half up once, and the upcoming invoice equals the issued one", async () => {
    const owner = await register();
    expect((await putDetails(owner.tenant.id, details(10))).status).toBe(200);
    const subscription = await subscribe(owner, growth.planId, growth.priceId);
    const t0 = new Date(subscription.startedAt);
    // 1,350 calls, 1,000 included: 350 x 15 micro-cents = 52.5 -> 53 cents.
    await consumeAt(owner.tenant.id, growth.keys.calls, 1350, new Date(t0.getTime() + MS_PER_DAY));

    const upcoming = (await asTenant(owner, owner.tenant.id)("/api/v1/invoices/upcoming")).body;
    const subtotal = 2900 + 53;
    // 10% of 2,953 = 295.3 -> 295.
    expect(upcoming).toMatchObject({ subtotal, discount: 0, tax: 295, taxRate: 10 });
    expect(upcoming.total).toBe(subtotal + 295);
    expect(upcoming.lineItems.at(-1)).toMatchObject({
      kind: "TAX",
      description: "Tax (10%)",
      amount: 295,
    });

    await runCycle(
      new Date(addMonthsClamped(t0, 1).getTime() + MINUTE),
      steerableProvider("pending").provider,
      [owner.tenant.id],
    );
    const list = await asTenant(owner, owner.tenant.id)("/api/v1/invoices");
    const [issued] = list.body.data;
    expect(issued).toMatchObject({ status: "OPEN", tax: 295, total: 3248 });
    expect(invoiceContent(upcoming)).toEqual(invoiceContent(issued));
    // The CHARGE is the taxed total.
    const ledger = await asTenant(owner, owner.tenant.id)("/api/v1/billing/ledger");
    expect(ledger.body.data.find((entry: Json) => entry.type === "CHARGE").debit).toBe(3248);
  });

  it("uses the rate in force at finalization, which then stays on the invoice", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    await putDetails(tenantId, details(10));
    await subscribe(owner, growth.planId, growth.priceId);
    const settle = asTenant(admin, tenantId);
    const draft = await settle("/api/v1/invoices/generate", { body: {} });
    expect(draft.status, JSON.stringify(draft.body)).toBe(201);
    expect(draft.body).toMatchObject({ subtotal: 2900, tax: 0, taxRate: null });

    await putDetails(tenantId, details(19.6));
    const finalized = await settle(`/api/v1/invoices/${draft.body.id}/finalize`, {
      method: "POST",
    });
    expect(finalized.status, JSON.stringify(finalized.body)).toBe(201);
    // 19.6% of 2,900 = 568.4 -> 568.
    expect(finalized.body).toMatchObject({ tax: 568, taxRate: 19.6, total: 2900 + 568 });
    expect(finalized.body.lineItems.at(-1)).toMatchObject({
      kind: "TAX",
      description: "Tax (19.6%)",
      amount: 568,
      unitPriceMicroCents: 56_800,
    });

    await putDetails(tenantId, details(5));
    const later = await settle(`/api/v1/invoices/${draft.body.id}`);
    expect(later.body).toMatchObject({ tax: 568, taxRate: 19.6, total: 3468 });
  });

  it("a tenant without billing details, or at 0%, gets no TAX line", async () => {
    const owner = await register();
    await subscribe(owner, growth.planId, growth.priceId);
    const upcoming = (await asTenant(owner, owner.tenant.id)("/api/v1/invoices/upcoming")).body;
    expect(upcoming).toMatchObject({ tax: 0, taxRate: null, total: 2900 });
    await putDetails(owner.tenant.id, details(0));
    const zero = (await asTenant(owner, owner.tenant.id)("/api/v1/invoices/upcoming")).body;
    expect(zero).toMatchObject({ tax: 0, taxRate: 0, total: 2900 });
    expect(zero.lineItems.map((line: Json) => line.kind)).toEqual(["BASE"]);
  });
});
