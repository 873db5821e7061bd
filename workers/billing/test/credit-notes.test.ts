import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { database } from "@edge-platform/shared/db/client";
import { beforeAll, describe, expect, it } from "vitest";
import { SYSTEM_AUDIT } from "../src/audit/index.ts";
import { CreditNoteService } from "../src/credit-notes/index.ts";
import { DevelopmentPaymentProvider } from "../src/payments/providers/development-provider.ts";
import { auditRowsFor } from "./audit-helpers.ts";
import {
  asTenant,
  buildMoneyPlan,
  chargeRefunded,
  type MoneyPlan,
  paymentIntentEvent,
  runCycle,
  signedWebhook,
  steerableProvider,
  waitForWebhook,
} from "./billing-helpers.ts";
import {
  createFeature,
  createPlan,
  createPrice,
  grant,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { type Account, call, expectError, type Json, register } from "./helpers.ts";

// Credit notes driven through the API as the platform and the tenant use it.
// Every amount is derived by hand in the comments.

const MINUTE = 60_000;
const CN_NUMBER = /^CN-(\d{4})-(\d{6})$/;
let admin: Account;
let growth: MoneyPlan;
let fifty: MoneyPlan;

beforeAll(async () => {
  admin = await platformAdmin();
  growth = await buildMoneyPlan(admin, 2900);
  fifty = await buildMoneyPlan(admin, 5000);
});

async function setTaxRate(tenantId: string, taxRate: number) {
  const put = await call(`/api/v1/tenants/${tenantId}/billing-details`, {
    method: "PUT",
    token: admin.accessToken,
    body: {
      taxRate,
      legalName: "Analytical Engines Ltd",
      address: { line1: "1 Engine Row", city: "London", postalCode: "EC1A 1AA", country: "gb" },
    },
  });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
}

/** A tenant with a finalized invoice for its current period and the first attempt PENDING. */
async function openInvoice(plan: MoneyPlan, taxRate?: number) {
  const owner = await register();
  if (taxRate !== undefined) await setTaxRate(owner.tenant.id, taxRate);
  const subscription = await subscribe(owner, plan.planId, plan.priceId);
  const api = asTenant(admin, owner.tenant.id);
  const draft = (await api("/api/v1/invoices/generate", { method: "POST" })).body;
  const invoice = (await api(`/api/v1/invoices/${draft.id}/finalize`, { method: "POST" })).body;
  const attempt = (await api("/api/v1/billing/payments")).body.data[0];
  expect(attempt).toMatchObject({ status: "PENDING", invoiceId: invoice.id });
  return { owner, subscription, api, invoice, attempt };
}

async function providerSays(type: string, providerPaymentId: string, extra: Json = {}) {
  const event = paymentIntentEvent(type, providerPaymentId, extra);
  expect((await signedWebhook(event)).status).toBe(200);
  expect((await waitForWebhook(event.id)).status).toBe("PROCESSED");
}

async function paidInvoice(plan: MoneyPlan, taxRate?: number) {
  const opened = await openInvoice(plan, taxRate);
  await providerSays("payment_intent.succeeded", opened.attempt.providerPaymentId, {
    amount: opened.invoice.total,
    currency: "usd",
  });
  const invoice = (await opened.api(`/api/v1/invoices/${opened.invoice.id}`)).body;
  expect(invoice.status).toBe("PAID");
  return { ...opened, invoice };
}

const lineOf = (invoice: Json, kind: string) =>
  invoice.lineItems.find((line: Json) => line.kind === kind);

function issue(
  api: ReturnType<typeof asTenant>,
  invoiceId: string,
  body: Json,
  headers: Record<string, string> = {},
) {
  return api(`/api/v1/invoices/${invoiceId}/credit-notes`, { method: "POST", body, headers });
}

async function ledgerOf(api: ReturnType<typeof asTenant>) {
  return (await api("/api/v1/billing/ledger?limit=100")).body.data as Json[];
}

async function tenantEventTypes(tenantId: string) {
  const rows = await env.DB.prepare("SELECT type, data FROM tenant_events WHERE tenant_id = ?")
    .bind(tenantId)
    .all<{ type: string; data: string }>();
  return rows.results;
}

describe("POST /invoices/{id}/credit-notes", () => {
  it("a partial REFUND note on a paid invoice with tax: tax in proportion, refunded through the provider, the ledger balanced", async () => {
    // 2,900 base at 10% tax: 290 tax, 3,190 total, paid.
    const { owner, api, invoice, attempt } = await paidInvoice(growth, 10);
    expect(invoice).toMatchObject({ subtotal: 2900, tax: 290, total: 3190, creditedTotal: 0 });
    const base = lineOf(invoice, "BASE");
    // 1,000 of the base fee: tax 1,000 x 290 / 2,900 = 100; total 1,100.
    const created = await issue(api, invoice.id, {
      reason: "PRODUCT_UNSATISFACTORY",
      settlement: "REFUND",
      lines: [{ lineItemId: base.id, amount: 1000 }],
      memo: "Outage on the 3rd",
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const note = created.body;
    expect(note).toMatchObject({
      invoiceId: invoice.id,
      reason: "PRODUCT_UNSATISFACTORY",
      settlement: "REFUND",
      currency: "usd",
      subtotal: 1000,
      tax: 100,
      total: 1100,
      memo: "Outage on the 3rd",
      refundStatus: "SUCCEEDED",
      lines: [{ lineItemId: base.id, description: base.description, amount: 1000 }],
    });
    expect(note.number).toMatch(CN_NUMBER);

    const after = (await api(`/api/v1/invoices/${invoice.id}`)).body;
    expect(after).toMatchObject({ status: "PAID", creditedTotal: 1100, amountDue: 0 });
    const entries = await ledgerOf(api);
    expect(entries.find((entry) => entry.type === "CREDIT_NOTE")).toMatchObject({
      credit: 1100,
      externalReference: `credit-note:${note.id}`,
    });
    expect(entries.find((entry) => entry.type === "REFUND")).toMatchObject({
      debit: 1100,
      externalReference: `credit-note:${note.id}`,
    });
    // 3,190 charged - 3,190 paid - 1,100 credited + 1,100 refunded = 0.
    const balance = (await api("/api/v1/billing/balance")).body;
    expect(balance).toMatchObject({ balance: 0, creditBalance: 0 });

    const events = await tenantEventTypes(owner.tenant.id);
    const created_ = events.find((event) => event.type === "credit_note.created");
    expect(JSON.parse(created_?.data ?? "{}")).toMatchObject({
      id: note.id,
      number: note.number,
      total: 1100,
    });
    expect(events.map((event) => event.type)).toContain("refund.succeeded");
    expect(await auditRowsFor(note.id, "credit_note.created")).toHaveLength(1);
    expect(await auditRowsFor(note.id, "refund.succeeded")).toHaveLength(1);
    expect(attempt.providerPaymentId).toBeTruthy();

    // The rest: 3,190 - 1,100 = 2,090 = 1,900 + 190 tax; then nothing is left.
    const rest = await issue(api, invoice.id, {
      reason: "OTHER",
      settlement: "REFUND",
      lines: [{ lineItemId: base.id, amount: 1900 }],
    });
    expect(rest.status, JSON.stringify(rest.body)).toBe(201);
    expect(rest.body).toMatchObject({ subtotal: 1900, tax: 190, total: 2090 });
    const more = await issue(api, invoice.id, {
      reason: "OTHER",
      settlement: "CREDIT",
      lines: [{ lineItemId: base.id, amount: 1 }],
    });
    expectError(more, 409);
    expect((await api(`/api/v1/invoices/${invoice.id}`)).body.creditedTotal).toBe(3190);
  });

  it("the tenant's money readers list, read and download its notes; only the platform issues them", async () => {
    const { owner, api, invoice } = await paidInvoice(growth);
    const base = lineOf(invoice, "BASE");
    const body = {
      reason: "DUPLICATE",
      settlement: "CREDIT",
      lines: [{ lineItemId: base.id, amount: 400 }],
    };
    const ownerApi = asTenant(owner, owner.tenant.id);
    expectError(await issue(ownerApi, invoice.id, body), 403);
    const note = (await issue(api, invoice.id, body)).body;

    const listed = await ownerApi(`/api/v1/credit-notes?invoiceId=${invoice.id}`);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((row: Json) => row.id)).toEqual([note.id]);
    expect(listed.body.meta).toMatchObject({ total: 1, page: 1 });
    expect((await ownerApi(`/api/v1/credit-notes/${note.id}`)).body).toEqual(note);
    const pdf = await ownerApi(`/api/v1/credit-notes/${note.id}/pdf`);
    expect(pdf.status).toBe(200);
    expect(pdf.headers.get("content-type")).toBe("application/pdf");
    expect(pdf.headers.get("content-disposition")).toContain(`${note.number}.pdf`);

    const stranger = await register();
    expectError(
      await asTenant(stranger, stranger.tenant.id)(`/api/v1/credit-notes/${note.id}`),
      404,
    );
    expectError(await issue(asTenant(admin, stranger.tenant.id), invoice.id, body), 404);
  });

  it("a REDUCE note lowers what is due: the next attempt charges the reduced amount", async () => {
    const { owner, api, invoice, attempt } = await openInvoice(growth);
    const base = lineOf(invoice, "BASE");
    const reduce = {
      reason: "ORDER_CHANGE",
      settlement: "REDUCE",
      lines: [{ lineItemId: base.id, amount: 900 }],
    };
    // While the first attempt waits at the provider, what is due cannot change.
    expectError(await issue(api, invoice.id, reduce), 409);
    await providerSays("payment_intent.payment_failed", attempt.providerPaymentId, {
      last_payment_error: { message: "Card declined" },
    });
    const note = await issue(api, invoice.id, reduce);
    expect(note.status, JSON.stringify(note.body)).toBe(201);
    expect(note.body).toMatchObject({ total: 900, refundStatus: null });
    const reduced = (await api(`/api/v1/invoices/${invoice.id}`)).body;
    // 2,900 - 900 = 2,000 due.
    expect(reduced).toMatchObject({
      status: "OPEN",
      total: 2900,
      creditedTotal: 900,
      amountDue: 2000,
    });

    const retry = (await api("/api/v1/billing/payments")).body.data[0];
    const { provider } = steerableProvider("succeeded");
    await runCycle(new Date(Date.parse(retry.nextRetryAt) + MINUTE), provider, [owner.tenant.id]);
    expect(provider.requests.at(-1)?.amount).toBe(2000);
    const paid = (await api(`/api/v1/invoices/${invoice.id}`)).body;
    expect(paid).toMatchObject({ status: "PAID", amountDue: 0 });
    const payment = (await ledgerOf(api)).find((entry) => entry.type === "PAYMENT");
    expect(payment.credit).toBe(2000);
    // 2,900 charged - 900 credited - 2,000 paid = 0.
    expect((await api("/api/v1/billing/balance")).body.balance).toBe(0);
  });

  it("a REDUCE note of everything due settles the invoice without a payment", async () => {
    const { owner, api, invoice, attempt } = await openInvoice(growth);
    await providerSays("payment_intent.payment_failed", attempt.providerPaymentId);
    const base = lineOf(invoice, "BASE");
    const note = await issue(api, invoice.id, {
      reason: "FRAUDULENT",
      settlement: "REDUCE",
      lines: [{ lineItemId: base.id, amount: 2900 }],
    });
    expect(note.status, JSON.stringify(note.body)).toBe(201);
    const after = (await api(`/api/v1/invoices/${invoice.id}`)).body;
    expect(after).toMatchObject({ status: "PAID", creditedTotal: 2900, amountDue: 0 });
    expect((await api("/api/v1/billing/balance")).body.balance).toBe(0);
    const types = (await tenantEventTypes(owner.tenant.id)).map((event) => event.type);
    expect(types).toContain("invoice.paid");
    // A corrected invoice is not voided as well.
    expectError(await api(`/api/v1/invoices/${invoice.id}/void`, { method: "POST" }), 400);
  });

  it("a CREDIT note goes to the credit balance and the next period invoice uses it", async () => {
    const owner = await register();
    await subscribe(owner, growth.planId, growth.priceId);
    const api = asTenant(admin, owner.tenant.id);
    const { provider } = steerableProvider("succeeded");
    const ownerApi = asTenant(owner, owner.tenant.id);
    const periodEnd = async () =>
      Date.parse((await ownerApi("/api/v1/subscriptions/active")).body.currentPeriodEnd);
    const firstEnd = await periodEnd();
    await runCycle(new Date(firstEnd + MINUTE), provider, [owner.tenant.id]);
    const first = (await api("/api/v1/invoices")).body.data[0];
    expect(first).toMatchObject({ status: "PAID", total: 2900 });

    const note = await issue(api, first.id, {
      reason: "PRODUCT_UNSATISFACTORY",
      settlement: "CREDIT",
      lines: [{ lineItemId: lineOf(first, "BASE").id, amount: 500 }],
    });
    expect(note.status, JSON.stringify(note.body)).toBe(201);
    // The tenant is owed 500, held as credit balance.
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: -500,
      creditBalance: 500,
    });

    const secondEnd = await periodEnd();
    await runCycle(new Date(secondEnd + MINUTE), provider, [owner.tenant.id]);
    const second = (await api("/api/v1/invoices")).body.data[0];
    expect(second.id).not.toBe(first.id);
    // 2,900 - 500 credit applied = 2,400, paid.
    expect(lineOf(second, "CREDIT_APPLIED").amount).toBe(-500);
    expect(second).toMatchObject({ total: 2400, status: "PAID" });
    expect(provider.requests.at(-1)?.amount).toBe(2400);
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: 0,
      creditBalance: 0,
    });
  });

  it("10 concurrent notes of 1,000 cents on a 5,000-cent invoice: exactly 5 are written, numbered without gaps", async () => {
    const { api, invoice } = await paidInvoice(fifty);
    expect(invoice.total).toBe(5000);
    const base = lineOf(invoice, "BASE");
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        issue(api, invoice.id, {
          reason: "DUPLICATE",
          settlement: "CREDIT",
          lines: [{ lineItemId: base.id, amount: 1000 }],
        }),
      ),
    );
    const statuses = results.map((result) => result.status).sort();
    expect(statuses).toEqual([201, 201, 201, 201, 201, 409, 409, 409, 409, 409]);
    for (const refused of results.filter((result) => result.status === 409)) {
      expectError(refused, 409);
    }
    const sequence = results
      .filter((result) => result.status === 201)
      .map((result) => Number(CN_NUMBER.exec(result.body.number)?.[2]))
      .sort((a, b) => a - b);
    const first = sequence[0] ?? 0;
    expect(sequence).toEqual([first, first + 1, first + 2, first + 3, first + 4]);
    const after = (await api(`/api/v1/invoices/${invoice.id}`)).body;
    expect(after.creditedTotal).toBe(5000);
    const notes = await env.DB.prepare(
      "SELECT sum(total) AS total FROM credit_notes WHERE invoice_id = ?",
    )
      .bind(invoice.id)
      .first<{ total: number }>();
    expect(notes?.total).toBe(5000);
  });

  it("an Idempotency-Key replays the note instead of writing another", async () => {
    const { api, invoice } = await paidInvoice(growth);
    const body = {
      reason: "OTHER",
      settlement: "CREDIT",
      lines: [{ lineItemId: lineOf(invoice, "BASE").id, amount: 100 }],
    };
    const first = await issue(api, invoice.id, body, { "idempotency-key": "cn-1" });
    const again = await issue(api, invoice.id, body, { "idempotency-key": "cn-1" });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect((await api(`/api/v1/invoices/${invoice.id}`)).body.creditedTotal).toBe(100);
  });

  it("refuses what cannot be credited with clear errors, writing nothing", async () => {
    const { api, invoice } = await paidInvoice(growth, 10);
    const base = lineOf(invoice, "BASE");
    const tax = lineOf(invoice, "TAX");
    const note = (lines: Json, settlement = "CREDIT", reason = "OTHER") =>
      issue(api, invoice.id, { reason, settlement, lines });
    expectError(
      await note([{ lineItemId: crypto.randomUUID(), amount: 1 }]),
      400,
      /not a line of this invoice/,
    );
    expectError(await note([{ lineItemId: tax.id, amount: 1 }]), 400, /not a charge/);
    expectError(
      await note([
        { lineItemId: base.id, amount: 1 },
        { lineItemId: base.id, amount: 1 },
      ]),
      400,
      /named twice/,
    );
    expectError(await note([{ lineItemId: base.id, amount: 2901 }]), 409, /2900 cents left/);
    expectError(await note([{ lineItemId: base.id, amount: 1 }], "REDUCE"), 409, /REDUCE/);
    expectError(await note([{ lineItemId: base.id, amount: 0 }]), 400);
    expectError(await note([]), 400);
    expectError(await note([{ lineItemId: base.id, amount: 1 }], "CREDIT", "BECAUSE"), 400);
    expectError(
      await api(`/api/v1/invoices/${invoice.id}/credit-notes`, {
        method: "POST",
        body: {
          reason: "OTHER",
          settlement: "CREDIT",
          lines: [{ lineItemId: base.id, amount: 1 }],
          extra: 1,
        },
      }),
      400,
    );
    expect((await api(`/api/v1/invoices/${invoice.id}`)).body.creditedTotal).toBe(0);
    expect((await api("/api/v1/credit-notes")).body.data).toEqual([]);

    const open = await openInvoice(growth);
    expectError(
      await issue(open.api, open.invoice.id, {
        reason: "OTHER",
        settlement: "REFUND",
        lines: [{ lineItemId: lineOf(open.invoice, "BASE").id, amount: 1 }],
      }),
      409,
      /REFUND/,
    );
    const credited = await issue(open.api, open.invoice.id, {
      reason: "OTHER",
      settlement: "CREDIT",
      lines: [{ lineItemId: lineOf(open.invoice, "BASE").id, amount: 100 }],
    });
    expect(credited.status).toBe(201);
    expectError(
      await open.api(`/api/v1/invoices/${open.invoice.id}/void`, { method: "POST" }),
      409,
      /credit notes/,
    );
  });
});

async function deliver(event: Json) {
  expect((await signedWebhook(event)).status).toBe(200);
  return waitForWebhook(event.id);
}

/** The credit-note service over a development provider whose refunds answer `outcome`. */
function serviceRefunding(outcome: "succeeded" | "pending" | "failed" | "unavailable") {
  const provider = new DevelopmentPaymentProvider(undefined, undefined, () => outcome);
  const service = new CreditNoteService(
    database(env.DB),
    env.DB,
    provider,
    { reserve: () => Promise.resolve(null) },
    SYSTEM_AUDIT,
  );
  return { provider, service };
}

describe("refunds", () => {
  it("a refund of a payment that became credit balance (its invoice was voided) comes out of that balance", async () => {
    const { api, invoice, attempt } = await openInvoice(growth);
    expect((await api(`/api/v1/invoices/${invoice.id}/void`, { method: "POST" })).status).toBe(201);
    await providerSays("payment_intent.succeeded", attempt.providerPaymentId, {
      amount: 2900,
      currency: "usd",
    });
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: -2900,
      creditBalance: 2900,
    });

    // 1,000 refunded, then the same report again, then everything.
    expect((await deliver(chargeRefunded(attempt.providerPaymentId, 1000))).status).toBe(
      "PROCESSED",
    );
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: -1900,
      creditBalance: 1900,
    });
    await deliver(chargeRefunded(attempt.providerPaymentId, 1000));
    expect((await api("/api/v1/billing/balance")).body.creditBalance).toBe(1900);
    await deliver(chargeRefunded(attempt.providerPaymentId, 2900));
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: 0,
      creditBalance: 0,
    });
    const refunds = (await ledgerOf(api)).filter((entry) => entry.type === "REFUND");
    expect(refunds.map((entry) => entry.debit).sort()).toEqual([1000, 1900]);
  });

  it("a payment collected after a REDUCE note lowered what was due puts the difference on the credit balance", async () => {
    const { api, invoice, attempt } = await openInvoice(growth);
    await providerSays("payment_intent.payment_failed", attempt.providerPaymentId);
    const reduce = await issue(api, invoice.id, {
      reason: "ORDER_CHANGE",
      settlement: "REDUCE",
      lines: [{ lineItemId: lineOf(invoice, "BASE").id, amount: 899 }],
    });
    expect(reduce.status, JSON.stringify(reduce.body)).toBe(201);
    // The declined attempt's payment goes through after all, for the old 2,900.
    await providerSays("payment_intent.succeeded", attempt.providerPaymentId, {
      amount: 2900,
      currency: "usd",
    });
    expect((await api(`/api/v1/invoices/${invoice.id}`)).body.status).toBe("PAID");
    const entries = await ledgerOf(api);
    expect(entries.find((entry) => entry.type === "PAYMENT")?.credit).toBe(2001);
    // 2,900 charged - 899 credited - 2,001 paid - 899 beyond what was due = -899, held as credit.
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: -899,
      creditBalance: 899,
    });
    // Refunded in full: 2,001 of the invoice is owed again, the 899 comes out of the credit.
    await deliver(chargeRefunded(attempt.providerPaymentId, 2900));
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: 2001,
      creditBalance: 0,
    });
  });

  it("a provider refund of a paid invoice first takes back what its CREDIT notes put on the credit balance", async () => {
    const { api, invoice, attempt } = await paidInvoice(growth);
    const credit = await issue(api, invoice.id, {
      reason: "OTHER",
      settlement: "CREDIT",
      lines: [{ lineItemId: lineOf(invoice, "BASE").id, amount: 500 }],
    });
    expect(credit.status).toBe(201);
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: -500,
      creditBalance: 500,
    });
    // All 2,900 back at the provider: the 500 of credit goes with it, 2,400 is owed again.
    await deliver(chargeRefunded(attempt.providerPaymentId, 2900));
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: 2400,
      creditBalance: 0,
    });
    await deliver(chargeRefunded(attempt.providerPaymentId, 2900));
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: 2400,
      creditBalance: 0,
    });
    const refunds = (await ledgerOf(api)).filter((entry) => entry.type === "REFUND");
    expect(refunds.map((entry) => entry.debit).sort((a, b) => a - b)).toEqual([500, 2400]);
  });

  it("a REFUND note the provider settles later is completed by its refund webhook, once", async () => {
    const { owner, api, invoice, attempt } = await paidInvoice(growth);
    const { service } = serviceRefunding("pending");
    const context = { tenant: { id: owner.tenant.id } } as never;
    const note = await service.create(context, invoice.id, {
      reason: "DUPLICATE",
      settlement: "REFUND",
      lines: [{ lineItemId: lineOf(invoice, "BASE").id, amount: 700 }],
    });
    expect(note).toMatchObject({ total: 700, refundStatus: "PENDING" });
    // Waiting: the payment has 2,900 - 700 = 2,200 left to refund.
    expectError(
      await issue(api, invoice.id, {
        reason: "OTHER",
        settlement: "REFUND",
        lines: [{ lineItemId: lineOf(invoice, "BASE").id, amount: 2201 }],
      }),
      409,
    );
    await deliver(chargeRefunded(attempt.providerPaymentId, 700));
    expect((await service.get(context, note.id)).refundStatus).toBe("SUCCEEDED");
    await deliver(chargeRefunded(attempt.providerPaymentId, 700));
    const refunds = (await ledgerOf(api)).filter((entry) => entry.type === "REFUND");
    expect(refunds).toHaveLength(1);
    expect(refunds[0]).toMatchObject({ debit: 700, externalReference: `credit-note:${note.id}` });
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: 0,
      creditBalance: 0,
    });
    const types = (await tenantEventTypes(owner.tenant.id)).map((event) => event.type);
    expect(types.filter((type) => type === "refund.succeeded")).toHaveLength(1);
  });

  it("a refund the provider declines leaves the note's total on the tenant's credit balance", async () => {
    const { owner, api, invoice } = await paidInvoice(growth);
    const { service } = serviceRefunding("failed");
    const context = { tenant: { id: owner.tenant.id } } as never;
    const note = await service.create(context, invoice.id, {
      reason: "OTHER",
      settlement: "REFUND",
      lines: [{ lineItemId: lineOf(invoice, "BASE").id, amount: 600 }],
    });
    expect(note).toMatchObject({ refundStatus: "FAILED", refundFailureReason: expect.any(String) });
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: -600,
      creditBalance: 600,
    });
    const types = (await tenantEventTypes(owner.tenant.id)).map((event) => event.type);
    expect(types).toContain("refund.failed");
    expect(await auditRowsFor(note.id, "refund.failed")).toHaveLength(1);
  });

  it("a refund the provider cannot be asked for stays PENDING and the scheduled run sends it", async () => {
    const { owner, invoice } = await paidInvoice(growth);
    const down = serviceRefunding("unavailable");
    const context = { tenant: { id: owner.tenant.id } } as never;
    const note = await down.service.create(context, invoice.id, {
      reason: "OTHER",
      settlement: "REFUND",
      lines: [{ lineItemId: lineOf(invoice, "BASE").id, amount: 300 }],
    });
    expect(note.refundStatus).toBe("PENDING");
    const up = serviceRefunding("succeeded");
    expect(await up.service.sendUnsentRefunds()).toBeGreaterThanOrEqual(1);
    expect(up.provider.refunds.map((refund) => refund.idempotencyKey)).toContain(note.id);
    expect((await up.service.get(context, note.id)).refundStatus).toBe("SUCCEEDED");
  });
});

describe("TOP_UP invoices", () => {
  /** A tenant whose METERED usage costs 100 cents a unit, with 10,000 credits bought for 10,000 cents and paid through the provider. */
  async function boughtCredit() {
    const plan = await createPlan(admin, { name: "Credit notes top-up" });
    const price = await createPrice(admin, plan.id, { amount: 0 });
    const feature = await createFeature(admin, "METERED");
    await grant(admin, plan.id, feature.id, {
      includedAmount: 0,
      overagePrice: 10_000,
      resetPeriod: "MONTHLY",
    });
    const owner = await register();
    await subscribe(owner, plan.id, price.id);
    const api = asTenant(admin, owner.tenant.id);
    const created = await api("/api/v1/credit-grants", {
      body: { amount: 10_000, currency: "usd", category: "paid" },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const attempt = (await api("/api/v1/billing/payments")).body.data[0];
    await providerSays("payment_intent.succeeded", attempt.providerPaymentId, {
      amount: 10_000,
      currency: "usd",
    });
    const invoice = (await api(`/api/v1/invoices/${created.body.invoiceId}`)).body;
    expect(invoice).toMatchObject({ kind: "TOP_UP", status: "PAID", total: 10_000 });
    // 30 units spend 3,000 of the credits.
    const spent = await asTenant(owner, owner.tenant.id)(
      `/api/v1/entitlements/${feature.lookupKey}/consume`,
      {
        body: { amount: 30 },
      },
    );
    expect(spent.status, JSON.stringify(spent.body)).toBe(200);
    return { owner, api, invoice, attempt, grantId: created.body.id as string };
  }

  const grantRow = (id: string) =>
    env.DB.prepare(
      "SELECT status, amount, drawn, written_off AS writtenOff FROM credit_grants WHERE id = ?",
    )
      .bind(id)
      .first<{ status: string; amount: number; drawn: number; writtenOff: number }>();

  it("a REFUND note credits at most the unspent credit, which it takes back from the grant; the spent part is refused", async () => {
    const { owner, api, invoice, grantId } = await boughtCredit();
    const purchase = lineOf(invoice, "CREDIT_PURCHASE");
    const refund = (amount: number) =>
      issue(api, invoice.id, {
        reason: "OTHER",
        settlement: "REFUND",
        lines: [{ lineItemId: purchase.id, amount }],
      });
    const tooMuch = await refund(8000);
    expectError(tooMuch, 409, /7000 cents/);

    const note = await refund(7000);
    expect(note.status, JSON.stringify(note.body)).toBe(201);
    expect(note.body).toMatchObject({ total: 7000, refundStatus: "SUCCEEDED" });
    await entitlementCounter(env.ENTITLEMENT_COUNTER, owner.tenant.id).flush();
    // 3,000 drawn + 7,000 taken back + 0 remaining = 10,000.
    expect(await grantRow(grantId)).toMatchObject({
      status: "VOIDED",
      drawn: 3000,
      writtenOff: 7000,
      amount: 10_000,
    });
    expect((await api("/api/v1/credits")).body.balance).toBe(0);
    const writeOff = (await ledgerOf(api)).find((entry) => entry.type === "CREDIT_WRITE_OFF");
    expect(writeOff).toMatchObject({ debit: 7000, invoiceId: invoice.id });
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: 0,
      creditBalance: 0,
    });
    expectError(await refund(1), 409);
  });

  it("a refund the provider reports on a TOP_UP payment takes back the unspent credit with a credit note; the spent part is owed again", async () => {
    const { owner, api, invoice, attempt, grantId } = await boughtCredit();
    const event = chargeRefunded(attempt.providerPaymentId, 10_000);
    await deliver(event);
    await deliver({ ...event, id: `${event.id}_again` });
    await entitlementCounter(env.ENTITLEMENT_COUNTER, owner.tenant.id).flush();
    expect(await grantRow(grantId)).toMatchObject({
      status: "VOIDED",
      drawn: 3000,
      writtenOff: 7000,
    });
    const notes = (await api(`/api/v1/credit-notes?invoiceId=${invoice.id}`)).body.data;
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({
      settlement: "REFUND",
      total: 7000,
      refundStatus: "SUCCEEDED",
    });
    const refunds = (await ledgerOf(api)).filter((entry) => entry.type === "REFUND");
    expect(refunds.map((entry) => entry.debit).sort((a, b) => a - b)).toEqual([3000, 7000]);
    // 10,000 charged - 10,000 paid - 7,000 credited + 10,000 refunded: the 3,000 of credit spent is owed.
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: 3000,
      creditBalance: 0,
    });
  });
});
