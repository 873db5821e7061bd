import { env } from "cloudflare:workers";
import { addMonthsClamped, MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import {
  type InvoiceLineBody,
  invoiceContent,
} from "@edge-platform/shared/testing/invoice-content";
import { beforeAll, describe, expect, it } from "vitest";
import {
  asTenant,
  atWallClock,
  buildMoneyPlan,
  consumeAt,
  type MoneyPlan,
  runCycle,
  steerableProvider,
} from "./billing-helpers.ts";
import { platformAdmin, subscribe } from "./catalog-helpers.ts";
import { type Account, addMember, call, expectError, register } from "./helpers.ts";

// GET /api/v1/invoices/upcoming: what the current period would bill if it
// closed now. The proof is the billing cycle itself: after the period closes
// with the same usage, the real invoice has the same lines and totals.

const MINUTE = 60_000;
let admin: Account;
let growth: MoneyPlan;
let scale: MoneyPlan;

beforeAll(async () => {
  admin = await platformAdmin();
  growth = await buildMoneyPlan(admin, 2900);
  scale = await buildMoneyPlan(admin, 9900);
});

async function storedInvoiceCounts(tenantId: string) {
  const row = await env.DB.prepare(
    `SELECT (SELECT count(*) FROM invoices WHERE tenant_id = ?1) AS invoices,
            (SELECT coalesce(sum(last_value), 0) FROM invoice_sequences) AS numbers`,
  )
    .bind(tenantId)
    .first<{ invoices: number; numbers: number }>();
  return row?.invoices ?? -1;
}

async function upcomingOf(account: { accessToken: string }, tenantId: string) {
  const result = await asTenant(account, tenantId)("/api/v1/invoices/upcoming");
  expect(result.status, JSON.stringify(result.body)).toBe(200);
  return result.body;
}

async function closedPeriodInvoice(owner: Account, periodStart: string) {
  const list = await asTenant(owner, owner.tenant.id)("/api/v1/invoices?limit=100");
  expect(list.status).toBe(200);
  const found = list.body.data.filter(
    (invoice: { kind: string; periodStart: string }) =>
      invoice.kind === "PERIOD" && invoice.periodStart === periodStart,
  );
  expect(found).toHaveLength(1);
  return found[0];
}

function expectSameInvoice(upcoming: Record<string, unknown>, closed: Record<string, unknown>) {
  expect(invoiceContent(upcoming)).toEqual(invoiceContent(closed));
}

describe("GET /api/v1/invoices/upcoming", () => {
  it("equals the invoice the billing cycle issues when the period closes with the same usage, and stores nothing", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    const subscription = await subscribe(owner, growth.planId, growth.priceId);
    const t0 = new Date(subscription.startedAt);
    const day1 = new Date(t0.getTime() + MS_PER_DAY);
    // 8 seats (limit 5, SOFT), 2,010 calls (1,000 included), 10 HARD units (never billed).
    await consumeAt(tenantId, growth.keys.seats, 8, day1);
    await consumeAt(tenantId, growth.keys.calls, 2010, day1);
    await consumeAt(tenantId, growth.keys.hard, 10, day1);

    const before = await storedInvoiceCounts(tenantId);
    const upcoming = await upcomingOf(owner, tenantId);
    expect(upcoming).toMatchObject({
      tenantId,
      subscriptionId: subscription.id,
      kind: "PERIOD",
      currency: "usd",
      periodStart: subscription.currentPeriodStart,
      periodEnd: subscription.currentPeriodEnd,
      // 2,900 base + 3 seats x 500 + 1,010 calls x 15 micro-cents (151.5 -> 152)
      subtotal: 2900 + 1500 + 152,
      total: 2900 + 1500 + 152,
    });
    expect(upcoming.lineItems.map((line: InvoiceLineBody) => [line.kind, line.amount])).toEqual([
      ["BASE", 2900],
      ["USAGE", 152],
      ["USAGE", 1500],
    ]);
    // Asking twice stores nothing and takes no invoice number.
    const again = await upcomingOf(owner, tenantId);
    expect(again.lineItems).toEqual(upcoming.lineItems);
    expect(await storedInvoiceCounts(tenantId)).toBe(before);
    expect(before).toBe(0);

    const close = new Date(addMonthsClamped(t0, 1).getTime() + MINUTE);
    const report = await runCycle(close, steerableProvider("pending").provider, [tenantId]);
    expect(report).toMatchObject({ closed: 1, closeFailures: 0 });
    const closed = await closedPeriodInvoice(owner, subscription.currentPeriodStart);
    expect(closed.status).toBe("OPEN");
    expectSameInvoice(upcoming, closed);
  });

  it("previews the prorated base of a kept cycle and the credit balance finalize applies, as the closed invoice has them", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    const subscribeAt = (planId: string, priceId: string, at: Date) =>
      atWallClock(at, owner, (session) =>
        call("/api/v1/subscriptions", {
          token: session.accessToken,
          tenant: tenantId,
          body: { planId, priceId },
        }),
      );
    expect(
      (await subscribeAt(growth.planId, growth.priceId, new Date("2031-01-31T10:00:00.000Z")))
        .status,
    ).toBe(201);
    const changed = await subscribeAt(
      scale.planId,
      scale.priceId,
      new Date("2031-02-10T00:00:00.000Z"),
    );
    expect(changed.status, JSON.stringify(changed.body)).toBe(201);
    await consumeAt(tenantId, scale.keys.calls, 1500, new Date("2031-02-12T00:00:00.000Z"));
    // Money the provider collected that no invoice took: the tenant's credit balance.
    await env.DB.prepare(
      `INSERT INTO ledger_entries (id, tenant_id, invoice_id, type, description, debit, credit, currency, external_reference, created_at)
       VALUES (?, ?, NULL, 'CREDIT', 'Overpayment', 0, 500, 'usd', ?, ?)`,
    )
      .bind(crypto.randomUUID(), tenantId, `pi_${crypto.randomUUID()}`, new Date().toISOString())
      .run();

    const upcoming = await upcomingOf(owner, tenantId);
    expect(upcoming.periodStart).toBe("2031-02-10T00:00:00.000Z");
    // 9,900 x 18d10h / 28d = 6,511.61 -> 6,512; the calls window is the whole
    // cycle's, so the new plan's 1,000 included calls are prorated likewise.
    expect(upcoming.lineItems[0]).toMatchObject({ kind: "BASE", amount: 6512 });
    expect(upcoming.lineItems.at(-1)).toMatchObject({ kind: "CREDIT_APPLIED", amount: -500 });
    expect(upcoming.total).toBe(upcoming.subtotal - 500);

    await runCycle(new Date("2031-03-01T00:00:00.000Z"), steerableProvider("pending").provider, [
      tenantId,
    ]);
    const closed = await closedPeriodInvoice(owner, "2031-02-10T00:00:00.000Z");
    expectSameInvoice(upcoming, closed);
  });

  it("while paused, equals the invoice resume issues for the period cut at the pause", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    const api = asTenant(owner, tenantId);
    const subscription = await subscribe(owner, growth.planId, growth.priceId);
    await consumeAt(tenantId, growth.keys.calls, 1234, new Date(subscription.startedAt));
    const paused = await api(`/api/v1/subscriptions/${subscription.id}/pause`, { body: {} });
    expect(paused.status, JSON.stringify(paused.body)).toBe(201);
    const upcoming = await upcomingOf(owner, tenantId);
    expect(upcoming.periodEnd).toBe(paused.body.currentPeriodEnd);
    expect(await storedInvoiceCounts(tenantId)).toBe(0);
    const resumed = await api(`/api/v1/subscriptions/${subscription.id}/resume`, { body: {} });
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(201);
    expectSameInvoice(upcoming, await closedPeriodInvoice(owner, subscription.currentPeriodStart));
  });

  it("leaves out a manual DRAFT of the period, as the cycle rebuilds it, and 409s once the period's invoice is issued", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    const subscription = await subscribe(owner, growth.planId, growth.priceId);
    const t0 = new Date(subscription.startedAt);
    await consumeAt(tenantId, growth.keys.seats, 7, new Date(t0.getTime() + MS_PER_DAY));
    const draft = await asTenant(admin, tenantId)("/api/v1/invoices/generate", { body: {} });
    expect(draft.status, JSON.stringify(draft.body)).toBe(201);
    await consumeAt(tenantId, growth.keys.seats, 2, new Date(t0.getTime() + 2 * MS_PER_DAY));

    const upcoming = await upcomingOf(owner, tenantId);
    // 9 seats now: 4 beyond the limit, none billed yet (a DRAFT bills nothing).
    expect(upcoming.lineItems.map((line: InvoiceLineBody) => [line.kind, line.quantity])).toEqual([
      ["BASE", 1],
      ["USAGE", 4],
    ]);
    expect(await storedInvoiceCounts(tenantId)).toBe(1);

    const finalized = await asTenant(admin, tenantId)(
      `/api/v1/invoices/${draft.body.id}/finalize`,
      { method: "POST" },
    );
    expect(finalized.status, JSON.stringify(finalized.body)).toBe(201);
    const refused = await asTenant(owner, tenantId)("/api/v1/invoices/upcoming");
    expectError(refused, 409, /already issued/);
  });

  it("is for OWNER, ADMIN, BILLING and platform administrators; 404 without a subscription; 409 in a trial", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    const noSubscription = await asTenant(owner, tenantId)("/api/v1/invoices/upcoming");
    expectError(noSubscription, 404, /No active subscription/);

    await subscribe(owner, growth.planId, growth.priceId);
    const developer = await addMember(owner, "DEVELOPER");
    const billing = await addMember(owner, "BILLING");
    const adminMember = await addMember(owner, "ADMIN");
    expectError(
      await asTenant(developer, tenantId)("/api/v1/invoices/upcoming"),
      403,
      /OWNER, ADMIN/,
    );
    await upcomingOf(billing, tenantId);
    await upcomingOf(adminMember, tenantId);
    // A platform administrator reads any tenant's with x-tenant-id.
    await upcomingOf(admin, tenantId);
    // A member of another tenant does not.
    const stranger = await register();
    expectError(await asTenant(stranger, tenantId)("/api/v1/invoices/upcoming"), 403);
    expectError(await call("/api/v1/invoices/upcoming", { tenant: tenantId }), 401);

    const trialing = await register();
    const trialPlan = await buildMoneyPlan(admin, 1900, { trialDays: 14 });
    await subscribe(trialing, trialPlan.planId, trialPlan.priceId);
    expectError(
      await asTenant(trialing, trialing.tenant.id)("/api/v1/invoices/upcoming"),
      409,
      /trial/,
    );
  });
});
