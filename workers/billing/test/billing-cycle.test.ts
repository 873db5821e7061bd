import { env } from "cloudflare:workers";
import { addMonthsClamped, MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import { beforeAll, describe, expect, it } from "vitest";
import {
  asTenant,
  atWallClock,
  buildMoneyPlan,
  consumeAt,
  type MoneyPlan,
  moneySnapshot,
  paymentIntentEvent,
  runCycle,
  signedWebhook,
  steerableProvider,
  waitForWebhook,
} from "./billing-helpers.ts";
import { createPrice, platformAdmin, subscribe } from "./catalog-helpers.ts";
import { type Account, call, register } from "./helpers.ts";

// A simulated quarter, end to end: the Cron Trigger's jobs run at injected
// instants (months of billing in seconds), usage goes through the tenant's
// counter object at injected instants, and every amount is computed by hand
// in the comments.

const MINUTE = 60_000;
let admin: Account;
let growth: MoneyPlan;
let scale: MoneyPlan;

beforeAll(async () => {
  admin = await platformAdmin();
  growth = await buildMoneyPlan(admin, 2900);
  scale = await buildMoneyPlan(admin, 9900);
});

const INVOICE_NUMBER = /^INV-\d{4}-\d{6}$/;

async function invoicesOf(owner: Account) {
  const result = await asTenant(owner, owner.tenant.id)("/api/v1/invoices?limit=100");
  expect(result.status, JSON.stringify(result.body)).toBe(200);
  // Oldest first, for reading the quarter in order.
  return [...result.body.data].reverse();
}

async function attemptsOf(owner: Account, invoiceId: string) {
  const result = await asTenant(owner, owner.tenant.id)("/api/v1/billing/payments?limit=100");
  expect(result.status).toBe(200);
  return result.body.data
    .filter((attempt: { invoiceId: string }) => attempt.invoiceId === invoiceId)
    .sort(
      (a: { attemptNumber: number }, b: { attemptNumber: number }) =>
        a.attemptNumber - b.attemptNumber,
    );
}

async function subscriptionStatus(id: string) {
  const row = await env.DB.prepare("SELECT status FROM subscriptions WHERE id = ?")
    .bind(id)
    .first<{ status: string }>();
  return row?.status;
}

describe("a simulated quarter", () => {
  it("bills three period ends by hand-computed numbers, pays, dunns, recovers, prorates a plan change on the kept cycle and ends at a zero balance", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    const api = asTenant(owner, tenantId);
    const { provider, state } = steerableProvider("pending");
    const subscription = await subscribe(owner, growth.planId, growth.priceId);
    const t0 = new Date(subscription.startedAt);
    const e1 = addMonthsClamped(t0, 1);
    const e2 = addMonthsClamped(t0, 2);
    const e3 = addMonthsClamped(t0, 3);
    const e4 = addMonthsClamped(t0, 4);

    // --- Period 1: 8 seats (limit 5) and 2,010 calls (1,000 included).
    await consumeAt(tenantId, growth.keys.seats, 8, new Date(t0.getTime() + MS_PER_DAY));
    await consumeAt(tenantId, growth.keys.calls, 2010, new Date(t0.getTime() + MS_PER_DAY));
    await consumeAt(tenantId, growth.keys.hard, 10, new Date(t0.getTime() + MS_PER_DAY));

    const close1 = new Date(e1.getTime() + MINUTE);
    const report1 = await runCycle(close1, provider, [tenantId]);
    expect(report1).toMatchObject({ closed: 1, rolled: 1, closeFailures: 0 });
    let invoices = await invoicesOf(owner);
    expect(invoices).toHaveLength(1);
    const [first] = invoices;
    expect(first).toMatchObject({
      kind: "PERIOD",
      status: "OPEN",
      currency: "usd",
      periodStart: t0.toISOString(),
      periodEnd: e1.toISOString(),
      // 2,900 base + 152 calls + 1,500 seats
      subtotal: 4552,
      total: 4552,
    });
    expect(first.invoiceNumber).toMatch(INVOICE_NUMBER);
    expect(
      first.lineItems.map(
        (line: {
          kind: string;
          featureLookupKey: string | null;
          quantity: number;
          unitPriceMicroCents: number;
          amount: number;
        }) => [
          line.kind,
          line.featureLookupKey,
          line.quantity,
          line.unitPriceMicroCents,
          line.amount,
        ],
      ),
    ).toEqual([
      ["BASE", null, 1, 290_000, 2900],
      // 1,010 calls x 15 micro-cents = 15,150 micro-cents = 151.5 cents -> 152 (half up)
      ["USAGE", growth.keys.calls, 1010, 15, 152],
      // 3 seats x 50,000 micro-cents = 1,500 cents; the HARD quota is never billed
      ["USAGE", growth.keys.seats, 3, 50_000, 1500],
    ]);
    expect(first.lineItems[1].description).toMatch(/\(2,010 used, 1,000 included\)$/);

    // The period moved on exactly once; running the same moment again changes nothing.
    const active = (await api("/api/v1/subscriptions/active")).body;
    expect(active.currentPeriodStart).toBe(e1.toISOString());
    expect(active.currentPeriodEnd).toBe(e2.toISOString());
    const before = await moneySnapshot(tenantId);
    const rerun = await runCycle(close1, provider, [tenantId]);
    expect(rerun).toMatchObject({ closed: 0, rolled: 0, activated: 0, ended: 0 });
    expect(await moneySnapshot(tenantId)).toEqual(before);

    // --- Pay invoice 1 by a signed provider webhook (pending until then).
    const [attempt1] = await attemptsOf(owner, first.id);
    expect(attempt1).toMatchObject({ status: "PENDING", attemptNumber: 1, amount: 4552 });
    const paid = paymentIntentEvent("payment_intent.succeeded", attempt1.providerPaymentId, {
      amount: 4552,
      currency: "usd",
    });
    const delivered = await signedWebhook(paid);
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);
    await waitForWebhook(paid.id);
    expect((await api(`/api/v1/invoices/${first.id}`)).body.status).toBe("PAID");

    // --- Period 2: 3,000 calls, 5 seats (at the limit: nothing to bill).
    await consumeAt(tenantId, growth.keys.calls, 3000, new Date(e1.getTime() + 2 * MS_PER_DAY));
    await consumeAt(tenantId, growth.keys.seats, 5, new Date(e1.getTime() + 2 * MS_PER_DAY));
    state.outcome = "failed";
    let at = new Date(e2.getTime() + MINUTE);
    await runCycle(at, provider, [tenantId]);
    invoices = await invoicesOf(owner);
    const second = invoices[1];
    // 2,900 base + 2,000 calls x 15 = 30,000 micro-cents = 300 cents
    expect(second).toMatchObject({
      status: "OPEN",
      total: 3200,
      periodStart: e2 === null ? "" : e1.toISOString(),
    });
    expect(second.lineItems.map((line: { amount: number }) => line.amount)).toEqual([2900, 300]);

    // Retries after 1, 3 and 5 days; the fourth failure makes the subscription PAST_DUE.
    for (const [index, delayDays] of [1, 3, 5].entries()) {
      const attempts = await attemptsOf(owner, second.id);
      expect(attempts).toHaveLength(index + 1);
      const last = attempts[index];
      expect(last).toMatchObject({ status: "FAILED", failureReason: "Card declined" });
      expect(last.nextRetryAt).toBe(new Date(at.getTime() + delayDays * MS_PER_DAY).toISOString());
      // One minute early: nothing happens yet.
      await runCycle(new Date(at.getTime() + delayDays * MS_PER_DAY - MINUTE), provider, [
        tenantId,
      ]);
      expect(await attemptsOf(owner, second.id)).toHaveLength(index + 1);
      at = new Date(at.getTime() + delayDays * MS_PER_DAY);
      await runCycle(at, provider, [tenantId]);
    }
    const exhausted = await attemptsOf(owner, second.id);
    expect(
      exhausted.map((a: { attemptNumber: number; status: string }) => [a.attemptNumber, a.status]),
    ).toEqual([
      [1, "FAILED"],
      [2, "FAILED"],
      [3, "FAILED"],
      [4, "FAILED"],
    ]);
    expect(exhausted[3].nextRetryAt).toBeNull();
    expect(exhausted[3].retryOf).toBe(exhausted[2].id);
    expect(await subscriptionStatus(subscription.id)).toBe("PAST_DUE");
    // Dunning never moved the period: still period 2 -> 3.
    expect((await api("/api/v1/subscriptions/active")).body.currentPeriodStart).toBe(
      e2.toISOString(),
    );

    // Recovered: the provider reports a late success of the last attempt (fake webhook).
    const recovered = await call("/api/v1/webhooks/fake", {
      body: {
        type: "payment.succeeded",
        providerPaymentId: exhausted[3].providerPaymentId,
        amount: 3200,
        currency: "usd",
      },
    });
    expect(recovered.status, JSON.stringify(recovered.body)).toBe(200);
    await waitForWebhook(recovered.body.eventId, "fake");
    expect((await api(`/api/v1/invoices/${second.id}`)).body.status).toBe("PAID");
    expect(await subscriptionStatus(subscription.id)).toBe("ACTIVE");

    // --- Period 3: 1,500 calls and 6 seats, then a plan change exactly half way through.
    await consumeAt(tenantId, growth.keys.calls, 1500, new Date(e2.getTime() + 10 * MS_PER_DAY));
    await consumeAt(tenantId, growth.keys.seats, 6, new Date(e2.getTime() + 10 * MS_PER_DAY));
    const midpoint = new Date(e2.getTime() + (e3.getTime() - e2.getTime()) / 2);
    const changed = await atWallClock(midpoint, owner, (session) =>
      call("/api/v1/subscriptions", {
        token: session.accessToken,
        tenant: tenantId,
        body: { planId: scale.planId, priceId: scale.priceId },
      }),
    );
    expect(changed.status, JSON.stringify(changed.body)).toBe(201);
    // Same interval: the new plan keeps the billing cycle. Its first period
    // is the rest of period 3; later ones fall on the same days as before.
    expect(changed.body).toMatchObject({
      status: "ACTIVE",
      startedAt: midpoint.toISOString(),
      currentPeriodStart: midpoint.toISOString(),
      currentPeriodEnd: e3.toISOString(),
      billingAnchor: subscription.billingAnchor,
      trialEndsAt: null,
    });
    expect(await subscriptionStatus(subscription.id)).toBe("CANCELLED");

    // The new plan's features are its own (Scale's calls are another
    // feature than Growth's): its usage starts at 0 in the window that runs
    // to the end of period 3. (A feature both plans grant keeps counting:
    // see money-rules.test.ts.)
    const newPlanUsage = await consumeAt(
      tenantId,
      scale.keys.calls,
      1600,
      new Date(midpoint.getTime() + MS_PER_DAY),
    );
    expect(newPlanUsage).toMatchObject({ used: 1600, overage: true, resetAt: e3.toISOString() });

    state.outcome = "succeeded";
    await runCycle(new Date(midpoint.getTime() + MINUTE), provider, [tenantId]);
    invoices = await invoicesOf(owner);
    const proration = invoices.find((invoice: { kind: string }) => invoice.kind === "PRORATION");
    expect(proration).toMatchObject({
      subscriptionId: subscription.id,
      periodStart: e2.toISOString(),
      periodEnd: midpoint.toISOString(),
      status: "PAID",
      // 2,900 base - 1,450 unused half + 150 calls + 1,500 seats
      total: 3100,
    });
    const lineTuples = (invoice: {
      lineItems: { kind: string; quantity: number; unitPriceMicroCents: number; amount: number }[];
    }) =>
      invoice.lineItems.map((line) => [
        line.kind,
        line.quantity,
        line.unitPriceMicroCents,
        line.amount,
      ]);
    expect(lineTuples(proration)).toEqual([
      ["BASE", 1, 290_000, 2900],
      // the credit for the unused part of the old plan: exactly half of period 3 was
      // unused, 2,900 x 1/2 = 1,450
      ["PRORATION_CREDIT", 1, -145_000, -1450],
      // The old plan had half of period 3, so half of what it includes:
      // 1,500 calls - 500 = 1,000 x 15 = 15,000 micro-cents = 150 cents
      ["USAGE", 1000, 15, 150],
      // 6 seats - round(5 x 1/2) = 3 beyond, x 50,000 micro-cents = 1,500 cents
      ["USAGE", 3, 50_000, 1500],
    ]);
    // Nothing of the new plan is billed before its first period ends.
    expect(
      invoices.filter(
        (invoice: { subscriptionId: string }) => invoice.subscriptionId === changed.body.id,
      ),
    ).toEqual([]);

    // --- End of period 3, the third period end of the quarter: the new plan's first period.
    await runCycle(new Date(e3.getTime() + MINUTE), provider, [tenantId]);
    invoices = await invoicesOf(owner);
    const newPlanInvoices = () =>
      invoices.filter(
        (invoice: { subscriptionId: string; kind: string }) =>
          invoice.subscriptionId === changed.body.id && invoice.kind === "PERIOD",
      );
    const [rest] = newPlanInvoices();
    expect(rest).toMatchObject({
      status: "PAID",
      periodStart: midpoint.toISOString(),
      periodEnd: e3.toISOString(),
      // 4,950 prorated base + 165 calls
      total: 5115,
    });
    expect(lineTuples(rest)).toEqual([
      // the charge for the rest of the new plan: the same half of period 3,
      // 9,900 x 1/2 = 4,950 (unit price = the amount, in micro-cents)
      ["BASE", 1, 495_000, 4950],
      // the new plan's half of the window includes 500 calls: 1,100 beyond
      // x 15 micro-cents = 16,500 micro-cents = 165 cents
      ["USAGE", 1100, 15, 165],
    ]);
    const totalDays = Math.round((e3.getTime() - e2.getTime()) / MS_PER_DAY);
    const restDays = Math.round((e3.getTime() - midpoint.getTime()) / MS_PER_DAY);
    expect(rest.lineItems[0].description).toBe(
      `${scale.name} plan - monthly (prorated: ${restDays}/${totalDays} days)`,
    );
    // Period 3's base fees: the old plan's used half plus the new plan's rest,
    // each plan paying its own half once.
    expect(
      proration.lineItems[0].amount + proration.lineItems[1].amount + rest.lineItems[0].amount,
    ).toBe(1450 + 4950);

    // The new subscription moved on to period 4 of the original cycle.
    const renewed = (await api("/api/v1/subscriptions/active")).body;
    expect(renewed).toMatchObject({
      id: changed.body.id,
      currentPeriodStart: e3.toISOString(),
      currentPeriodEnd: e4.toISOString(),
    });

    // --- Period 4: a whole period of the new plan at its full price; usage starts afresh.
    const period4Usage = await consumeAt(
      tenantId,
      scale.keys.calls,
      100,
      new Date(e3.getTime() + MS_PER_DAY),
    );
    expect(period4Usage).toMatchObject({ used: 100, overage: false, resetAt: e4.toISOString() });
    await runCycle(new Date(e4.getTime() + MINUTE), provider, [tenantId]);
    invoices = await invoicesOf(owner);
    const [, full] = newPlanInvoices();
    expect(full).toMatchObject({
      status: "PAID",
      periodStart: e3.toISOString(),
      periodEnd: e4.toISOString(),
      total: 9900,
    });
    expect(lineTuples(full)).toEqual([["BASE", 1, 990_000, 9900]]);

    // Five invoices, numbered without gaps, all PAID; the balance is zero.
    expect(invoices.map((invoice: { status: string }) => invoice.status)).toEqual([
      "PAID",
      "PAID",
      "PAID",
      "PAID",
      "PAID",
    ]);
    const numbers = invoices.map((invoice: { invoiceNumber: string }) => invoice.invoiceNumber);
    expect(new Set(numbers).size).toBe(5);
    for (const number of numbers) expect(number).toMatch(INVOICE_NUMBER);
    const charged = 4552 + 3200 + 3100 + 5115 + 9900;
    const balance = await api("/api/v1/billing/balance");
    expect(balance.body).toMatchObject({
      tenantId,
      currency: "usd",
      balance: 0,
      totalCharged: charged,
      totalPaid: charged,
      unit: "cents",
    });
    const ledger = await api("/api/v1/billing/ledger?limit=100");
    const byType = (type: string) =>
      ledger.body.data.filter((entry: { type: string }) => entry.type === type).length;
    expect(byType("CHARGE")).toBe(5);
    expect(byType("PAYMENT")).toBe(5);
    expect(ledger.body.meta.total).toBe(10);
  }, 30_000);
});

describe("plan changes at fixed instants", () => {
  // The old plan: monthly from 31 January 2031 10:00, so its first period is
  // [31 Jan 10:00, 28 Feb 10:00), 28 days = 2,419,200,000 ms. The change on
  // 10 February 00:00 leaves 18 days 10 hours = 1,591,200,000 ms unused.
  const start = new Date("2031-01-31T10:00:00.000Z");
  const change = new Date("2031-02-10T00:00:00.000Z");

  async function changePlan(owner: Account, planId: string, priceId: string, at: Date) {
    const result = await atWallClock(at, owner, (session) =>
      call("/api/v1/subscriptions", {
        token: session.accessToken,
        tenant: owner.tenant.id,
        body: { planId, priceId },
      }),
    );
    expect(result.status, JSON.stringify(result.body)).toBe(201);
    return result.body;
  }

  it("keeps a month-end cycle: the rest of February is prorated, then the 31st comes back", async () => {
    const owner = await register();
    const { provider } = steerableProvider("succeeded");
    const old = await changePlan(owner, growth.planId, growth.priceId, start);
    expect(old.currentPeriodEnd).toBe("2031-02-28T10:00:00.000Z");
    const changed = await changePlan(owner, scale.planId, scale.priceId, change);
    expect(changed).toMatchObject({
      currentPeriodStart: change.toISOString(),
      currentPeriodEnd: "2031-02-28T10:00:00.000Z",
      billingAnchor: 28,
    });

    await runCycle(new Date("2031-03-01T00:00:00.000Z"), provider, [owner.tenant.id]);
    const invoices = await invoicesOf(owner);
    const amounts = (invoice: { lineItems: { kind: string; amount: number }[] }) =>
      invoice.lineItems.map((line) => [line.kind, line.amount]);
    const [closing] = invoices.filter((i: { kind: string }) => i.kind === "PRORATION");
    // credit: 2,900 x 1,591,200,000 / 2,419,200,000 = 1,907.44 -> 1,907
    expect(amounts(closing)).toEqual([
      ["BASE", 2900],
      ["PRORATION_CREDIT", -1907],
    ]);
    expect(closing).toMatchObject({ total: 993, status: "PAID" });
    const [rest] = invoices.filter((i: { kind: string }) => i.kind === "PERIOD");
    // charge for the rest: 9,900 x 1,591,200,000 / 2,419,200,000 = 6,511.61 -> 6,512
    expect(amounts(rest)).toEqual([["BASE", 6512]]);
    expect(rest).toMatchObject({
      subscriptionId: changed.id,
      periodStart: change.toISOString(),
      periodEnd: "2031-02-28T10:00:00.000Z",
      total: 6512,
      status: "PAID",
    });
    expect(rest.lineItems[0].description).toBe(
      `${scale.name} plan - monthly (prorated: 18/28 days)`,
    );
    // The next period is the old cycle's: it ends on the 31st, not the 28th.
    const active = (await asTenant(owner, owner.tenant.id)("/api/v1/subscriptions/active")).body;
    expect([active.currentPeriodStart, active.currentPeriodEnd]).toEqual([
      "2031-02-28T10:00:00.000Z",
      "2031-03-31T10:00:00.000Z",
    ]);
  });

  it("starts a fresh cycle at the change on an interval change, with the old plan's credit only", async () => {
    const owner = await register();
    const { provider } = steerableProvider("succeeded");
    const annual = await createPrice(admin, scale.planId, {
      interval: "ANNUALLY",
      amount: 99_000,
    });
    await changePlan(owner, growth.planId, growth.priceId, start);
    const changed = await changePlan(owner, scale.planId, annual.id, change);
    expect(changed).toMatchObject({
      currentPeriodStart: change.toISOString(),
      currentPeriodEnd: "2032-02-10T00:00:00.000Z",
      billingAnchor: 10,
    });

    await runCycle(new Date(change.getTime() + MINUTE), provider, [owner.tenant.id]);
    let invoices = await invoicesOf(owner);
    expect(invoices).toHaveLength(1);
    expect(invoices[0]).toMatchObject({ kind: "PRORATION", total: 993 });

    await runCycle(new Date("2032-02-10T00:01:00.000Z"), provider, [owner.tenant.id]);
    invoices = await invoicesOf(owner);
    const first = invoices.find((i: { subscriptionId: string }) => i.subscriptionId === changed.id);
    // A whole annual period from the change: not prorated.
    expect(first).toMatchObject({
      periodStart: change.toISOString(),
      periodEnd: "2032-02-10T00:00:00.000Z",
      total: 99_000,
    });
    expect(first.lineItems[0].description).toBe(
      `${scale.name} plan - annually (2031-02-10 to 2032-02-10)`,
    );
  });
});
