import { env } from "cloudflare:workers";
import { addMonthsClamped, MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import { invoiceContent } from "@edge-platform/shared/testing/invoice-content";
import { beforeAll, describe, expect, it } from "vitest";
import { finalizeInvoice } from "../src/invoicing/service.ts";
import { asTenant, consumeAt, runCycle, steerableProvider } from "./billing-helpers.ts";
import { platformAdmin, subscribe, uniqueKey } from "./catalog-helpers.ts";
import { type Account, call, type Json, register } from "./helpers.ts";
import {
  invoicesOfKind,
  linesOf,
  type ProgressivePlan,
  progressiveInvoices,
  progressivePlan,
} from "./progressive-helpers.ts";

// No invoice total below zero. Volume pricing bills every unit at the tier
// the total reaches, so the period's own invoice can cost less than what its
// progressive invoices billed at a dearer tier; the difference is the
// tenant's credit balance, not a negative invoice.

const MINUTE = 60_000;
// Units 1-100 at 10 cents each, every unit at 5 cents from the 101st.
const VOLUME = {
  model: "volume",
  tiers: [
    { upTo: 100, unitPrice: 1000 },
    { upTo: null, unitPrice: 500 },
  ],
};

let admin: Account;
let volumePlan: ProgressivePlan;
beforeAll(async () => {
  admin = await platformAdmin();
  volumePlan = await progressivePlan(admin, {
    amount: 0,
    pricing: VOLUME,
    usageThresholds: [{ amount: 800 }],
  });
});

/**
 * A tenant on the volume plan whose 80 units on day 1 reached the
 * threshold (a PROGRESSIVE invoice of 80 x 10 = 800) and who used 70 more
 * on day 2: 150 units, every one at 5 cents, 750 for the whole period.
 */
async function pastTheCheaperTier(extra: Record<string, unknown> = {}) {
  const owner: Account = await register();
  const tenantId = owner.tenant.id as string;
  const subscription = await subscribe(owner, volumePlan.planId, volumePlan.priceId, extra);
  const t0 = new Date(subscription.startedAt);
  await consumeAt(tenantId, volumePlan.key, 80, new Date(t0.getTime() + MS_PER_DAY));
  const [progressive] = (await progressiveInvoices(owner, 1)) as [Json];
  await consumeAt(tenantId, volumePlan.key, 70, new Date(t0.getTime() + 2 * MS_PER_DAY));
  return { owner, tenantId, t0, progressive };
}

const excessCredits = (tenantId: string) =>
  env.DB.prepare(
    `SELECT invoice_id AS invoiceId, credit, external_reference AS reference FROM ledger_entries
     WHERE tenant_id = ? AND type = 'CREDIT' AND external_reference LIKE 'invoice-excess:%'`,
  )
    .bind(tenantId)
    .all<{ invoiceId: string; credit: number; reference: string }>();

const attemptsOn = async (invoiceId: string) =>
  (
    await env.DB.prepare("SELECT count(*) AS attempts FROM payment_attempts WHERE invoice_id = ?")
      .bind(invoiceId)
      .first<{ attempts: number }>()
  )?.attempts;

describe("a period invoice that costs less than its progressive invoices billed", () => {
  it("is issued at 0 and PAID without a payment attempt; the 50 cents billed beyond the period's cost become credit that the next invoice applies", async () => {
    const { owner, tenantId, t0, progressive } = await pastTheCheaperTier();
    expect(linesOf(progressive)).toEqual([["USAGE", 800]]);
    expect(progressive).toMatchObject({ subtotal: 800, total: 800 });
    const upcoming = await asTenant(owner, tenantId)("/api/v1/invoices/upcoming");
    expect(upcoming.status, JSON.stringify(upcoming.body)).toBe(200);

    const provider = steerableProvider("pending").provider;
    const report = await runCycle(new Date(addMonthsClamped(t0, 1).getTime() + MINUTE), provider, [
      tenantId,
    ]);
    expect(report).toMatchObject({ closed: 1, closeFailures: 0 });
    const [period] = (await invoicesOfKind(owner, "PERIOD")) as [Json];
    // 750 - 800 = -50: the invoice is floored at 0 by the 50 billed beyond the period's charges.
    expect(linesOf(period)).toEqual([
      ["BASE", 0],
      ["USAGE", 750],
      ["PROGRESSIVE_BILLED", -800],
      ["PROGRESSIVE_BILLED", 50],
    ]);
    expect(period).toMatchObject({ subtotal: 0, discount: 0, tax: 0, total: 0, status: "PAID" });
    expect(invoiceContent(upcoming.body)).toEqual(invoiceContent(period));
    expect(await attemptsOn(period.id)).toBe(0);
    expect((await excessCredits(tenantId)).results).toEqual([
      { invoiceId: period.id, credit: 50, reference: `invoice-excess:${period.id}` },
    ]);
    const balance = await asTenant(owner, tenantId)("/api/v1/billing/balance");
    expect(balance.body.creditBalance, JSON.stringify(balance.body)).toBe(50);

    // Next period: 10 units at 10 cents = 100, less the 50 of credit.
    await consumeAt(
      tenantId,
      volumePlan.key,
      10,
      new Date(addMonthsClamped(t0, 1).getTime() + MS_PER_DAY),
    );
    await runCycle(new Date(addMonthsClamped(t0, 2).getTime() + MINUTE), provider, [tenantId]);
    const next = (await invoicesOfKind(owner, "PERIOD"))[1] as Json;
    expect(linesOf(next)).toEqual([
      ["BASE", 0],
      ["USAGE", 100],
      ["CREDIT_APPLIED", -50],
    ]);
    expect(next).toMatchObject({ subtotal: 100, total: 50 });
    const after = await asTenant(owner, tenantId)("/api/v1/billing/balance");
    expect(after.body.creditBalance).toBe(0);
  });

  it("with a coupon and tax, the credit is what the progressive invoice charged beyond what the whole period costs", async () => {
    const created = await call("/api/v1/coupons", {
      token: admin.accessToken,
      body: {
        code: uniqueKey("c").toUpperCase().slice(0, 40),
        percentOff: 20,
        duration: "forever",
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const owner: Account = await register();
    const details = await call(`/api/v1/tenants/${owner.tenant.id}/billing-details`, {
      method: "PUT",
      token: admin.accessToken,
      body: {
        taxRate: 10,
        legalName: "Difference Engines Ltd",
        address: { line1: "2 Engine Row", city: "London", country: "GB" },
      },
    });
    expect(details.status, JSON.stringify(details.body)).toBe(200);
    const subscription = await subscribe(owner, volumePlan.planId, volumePlan.priceId, {
      couponCode: created.body.code,
    });
    const t0 = new Date(subscription.startedAt);
    await consumeAt(owner.tenant.id, volumePlan.key, 80, new Date(t0.getTime() + MS_PER_DAY));
    const [progressive] = (await progressiveInvoices(owner, 1)) as [Json];
    // 800, 20% off = 160, 10% tax on 640 = 64: 704 charged.
    expect(progressive).toMatchObject({ subtotal: 800, discount: 160, tax: 64, total: 704 });
    await consumeAt(owner.tenant.id, volumePlan.key, 70, new Date(t0.getTime() + 2 * MS_PER_DAY));
    await runCycle(
      new Date(addMonthsClamped(t0, 1).getTime() + MINUTE),
      steerableProvider("pending").provider,
      [owner.tenant.id],
    );
    const [period] = (await invoicesOfKind(owner, "PERIOD")) as [Json];
    // The whole period: 750, 20% off = 150, 10% tax on 600 = 60: 660. The
    // progressive invoice charged 704, so 44 go back: 50 - 10 of discount + 4 of tax.
    expect(period).toMatchObject({ subtotal: 0, discount: 0, tax: 0, total: 0, status: "PAID" });
    expect(linesOf(period).map(([kind]: [string]) => kind)).toEqual([
      "BASE",
      "USAGE",
      "PROGRESSIVE_BILLED",
      "PROGRESSIVE_BILLED",
      "DISCOUNT",
      "TAX",
    ]);
    expect((await excessCredits(owner.tenant.id)).results).toEqual([
      { invoiceId: period.id, credit: 44, reference: `invoice-excess:${period.id}` },
    ]);
  });

  it("an invoice voided and issued again moves the excess to the credit balance once", async () => {
    const { owner, tenantId } = await pastTheCheaperTier();
    const settle = asTenant(admin, tenantId);
    // Issued early and left OPEN (finalized without its payment step).
    const draft = await settle("/api/v1/invoices/generate", { method: "POST" });
    expect(draft.status, JSON.stringify(draft.body)).toBe(201);
    expect(await finalizeInvoice(env.DB, { id: draft.body.id, tenantId }, new Date())).toBe(true);
    expect((await excessCredits(tenantId)).results.map((row) => row.credit)).toEqual([50]);
    const voided = await settle(`/api/v1/invoices/${draft.body.id}/void`, { method: "POST" });
    expect(voided.status, JSON.stringify(voided.body)).toBe(201);

    const replacement = await settle("/api/v1/invoices/generate", {
      body: { replacesInvoiceId: draft.body.id },
    });
    expect(replacement.status, JSON.stringify(replacement.body)).toBe(201);
    const issued = await settle(`/api/v1/invoices/${replacement.body.id}/finalize`, {
      method: "POST",
    });
    expect(issued.body).toMatchObject({ total: 0, status: "PAID" });
    expect((await excessCredits(tenantId)).results).toEqual([
      { invoiceId: draft.body.id, credit: 50, reference: `invoice-excess:${draft.body.id}` },
    ]);
    const balance = await asTenant(owner, tenantId)("/api/v1/billing/balance");
    expect(balance.body.creditBalance).toBe(50);
  });
});
