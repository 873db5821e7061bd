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
  runCycle,
  steerableProvider,
} from "./billing-helpers.ts";
import {
  createApiKey,
  createFeature,
  createPlan,
  createPrice,
  entitlementsFor,
  grant,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { type Account, call, expectError, register } from "./helpers.ts";

// The billing money rules, driven over HTTP (and the billing cycle at
// injected instants): usage survives plan changes, paused time is not
// billed, void and reissue, money received for nothing becomes a credit,
// and overlapping cycles bill once.

const MINUTE = 60_000;
let admin: Account;
let money: MoneyPlan;
/** Two plans granting the same features: a HARD monthly quota, a NEVER quota and METERED calls. */
let alpha: { planId: string; priceId: string };
let beta: { planId: string; priceId: string };
const keys = { hard: "", lifetime: "", calls: "" };

beforeAll(async () => {
  admin = await platformAdmin();
  money = await buildMoneyPlan(admin, 2900);
  const hard = await createFeature(admin, "QUOTA");
  const lifetime = await createFeature(admin, "QUOTA");
  const calls = await createFeature(admin, "METERED");
  keys.hard = hard.lookupKey;
  keys.lifetime = lifetime.lookupKey;
  keys.calls = calls.lookupKey;
  const make = async (amount: number) => {
    const plan = await createPlan(admin);
    const price = await createPrice(admin, plan.id, { interval: "MONTHLY", amount });
    await grant(admin, plan.id, hard.id, {
      limit: 100,
      limitBehavior: "HARD",
      resetPeriod: "MONTHLY",
    });
    await grant(admin, plan.id, lifetime.id, {
      limit: 10,
      limitBehavior: "HARD",
      resetPeriod: "NEVER",
    });
    await grant(admin, plan.id, calls.id, {
      includedAmount: 1000,
      overagePrice: 100,
      resetPeriod: "MONTHLY",
    });
    return { planId: plan.id, priceId: price.id };
  };
  alpha = await make(2900);
  beta = await make(4900);
});

const changePlan = (owner: Account, target: { planId: string; priceId: string }, at?: Date) =>
  at
    ? atWallClock(at, owner, (session) =>
        call("/api/v1/subscriptions", {
          token: session.accessToken,
          tenant: owner.tenant.id,
          body: target,
        }),
      )
    : call("/api/v1/subscriptions", {
        token: owner.accessToken,
        tenant: owner.tenant.id,
        body: target,
      });

describe("usage belongs to the tenant and the feature", () => {
  it("A -> B -> A in one period: a HARD limit of 100 allows 100 units in all, a NEVER quota never restarts", async () => {
    const owner = await register();
    await subscribe(owner, alpha.planId, alpha.priceId);
    const api = entitlementsFor(await createApiKey(owner));
    expect((await api.consume(keys.hard, 60)).status).toBe(200);
    expect((await api.consume(keys.lifetime, 10)).status).toBe(200);

    expect((await changePlan(owner, beta)).status).toBe(201);
    // The units used before the change count against the new plan's limit.
    expect((await api.check(keys.hard)).body).toMatchObject({
      used: 60,
      remaining: 40,
      limit: 100,
    });
    expect((await api.check(keys.lifetime)).body).toMatchObject({
      used: 10,
      remaining: 0,
      allowed: false,
    });
    expect((await api.consume(keys.hard, 40)).status).toBe(200);
    expectError(await api.consume(keys.hard, 1), 403, /limit/i);

    expect((await changePlan(owner, alpha)).status).toBe(201);
    expect((await api.check(keys.hard)).body).toMatchObject({
      used: 100,
      remaining: 0,
      allowed: false,
    });
    expectError(await api.consume(keys.hard, 1), 403);
    expectError(await api.consume(keys.lifetime, 1), 403);
    // 100 units in the window, over three subscriptions.
    const stored = await env.DB.prepare(
      "SELECT sum(amount) AS units FROM usage_aggregates WHERE tenant_id = ? AND feature_lookup_key = ?",
    )
      .bind(owner.tenant.id, keys.hard)
      .first<{ units: number }>();
    await call("/api/v1/entitlements/x/check"); // (any call: flushes are asynchronous)
    expect(stored?.units ?? 0).toBeLessThanOrEqual(100);
  });

  it("bills every unit exactly once across the old plan's final invoice and the new plan's first, sharing the included amount by time", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    const subscription = await subscribe(owner, alpha.planId, alpha.priceId);
    const t0 = new Date(subscription.startedAt);
    const e1 = addMonthsClamped(t0, 1);
    const change = new Date(t0.getTime() + 10 * MS_PER_DAY);
    await consumeAt(tenantId, keys.calls, 1500, new Date(t0.getTime() + MS_PER_DAY));
    expect((await changePlan(owner, beta, change)).status).toBe(201);
    await consumeAt(tenantId, keys.calls, 700, new Date(change.getTime() + MS_PER_DAY));
    const { provider } = steerableProvider("pending");
    await runCycle(new Date(e1.getTime() + MINUTE), provider, [tenantId]);

    const invoices = (await asTenant(owner, tenantId)("/api/v1/invoices?limit=100")).body.data;
    const usage = invoices.flatMap(
      (invoice: {
        kind: string;
        lineItems: { kind: string; quantity: number; amount: number }[];
      }) =>
        invoice.lineItems
          .filter((line) => line.kind === "USAGE")
          .map((line) => ({ ...line, kind: invoice.kind })),
    );
    // The window [t0, e1) is shared by time: alpha had 10 days of it, beta the rest.
    const windowMs = e1.getTime() - t0.getTime();
    const alphaShare = Math.round((1000 * (change.getTime() - t0.getTime())) / windowMs);
    const betaShare = Math.round((1000 * (e1.getTime() - change.getTime())) / windowMs);
    const byKind = Object.fromEntries(
      usage.map((line: { kind: string; quantity: number }) => [line.kind, line.quantity]),
    );
    expect(byKind).toEqual({ PRORATION: 1500 - alphaShare, PERIOD: 700 - betaShare });
    // 2,200 units used, 1,000 included over the whole window (to a unit of rounding).
    expect(byKind.PRORATION + byKind.PERIOD).toBe(2200 - alphaShare - betaShare);
    expect(Math.abs(alphaShare + betaShare - 1000)).toBeLessThanOrEqual(1);
    console.log(
      `[money] plan change after 10 of ${Math.round(windowMs / MS_PER_DAY)} days: included ${alphaShare} + ${betaShare}; billed ${JSON.stringify(
        invoices.map(
          (invoice: {
            kind: string;
            total: number;
            lineItems: { kind: string; quantity: number; amount: number }[];
          }) => ({
            kind: invoice.kind,
            total: invoice.total,
            lines: invoice.lineItems.map((line) => [line.kind, line.quantity, line.amount]),
          }),
        ),
      )}`,
    );
    // Rerunning the cycle bills nothing again.
    const before = await moneySnapshot(tenantId);
    await runCycle(new Date(e1.getTime() + 2 * MINUTE), provider, [tenantId]);
    expect((await moneySnapshot(tenantId)).invoices).toEqual(before.invoices);
  });
});

describe("pause and resume", () => {
  it("bills up to the pause, never the paused time, and starts a new period on the resume date", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    const subscription = await subscribe(owner, money.planId, money.priceId);
    const t0 = new Date(subscription.startedAt);
    const e1 = addMonthsClamped(t0, 1);
    const pauseAt = new Date(t0.getTime() + 10 * MS_PER_DAY);
    const paused = await atWallClock(pauseAt, owner, (session) =>
      call(`/api/v1/subscriptions/${subscription.id}/pause`, {
        token: session.accessToken,
        tenant: tenantId,
        body: {},
      }),
    );
    expect(paused.body).toMatchObject({
      status: "PAUSED",
      currentPeriodEnd: pauseAt.toISOString(),
    });
    const { provider } = steerableProvider("succeeded");
    // Months pass while paused: one invoice, for the ten days before the pause.
    await runCycle(new Date(e1.getTime() + MINUTE), provider, [tenantId]);
    await runCycle(new Date(addMonthsClamped(t0, 3).getTime()), provider, [tenantId]);
    const readInvoices = async () =>
      (await asTenant(owner, tenantId)("/api/v1/invoices?limit=100")).body.data.reverse();
    let invoices = await readInvoices();
    const tenDays = Math.round((2900 * 10 * MS_PER_DAY) / (e1.getTime() - t0.getTime()));
    expect(
      invoices.map((invoice: { periodStart: string; periodEnd: string; total: number }) => [
        invoice.periodStart,
        invoice.periodEnd,
        invoice.total,
      ]),
    ).toEqual([[t0.toISOString(), pauseAt.toISOString(), tenDays]]);

    const resumeAt = new Date(addMonthsClamped(t0, 3).getTime() + 5 * MS_PER_DAY);
    const resumed = await atWallClock(resumeAt, owner, (session) =>
      call(`/api/v1/subscriptions/${subscription.id}/resume`, {
        token: session.accessToken,
        tenant: tenantId,
        body: {},
      }),
    );
    expect(resumed.body).toMatchObject({
      status: "ACTIVE",
      currentPeriodStart: resumeAt.toISOString(),
      currentPeriodEnd: addMonthsClamped(resumeAt, 1).toISOString(),
    });
    await runCycle(new Date(addMonthsClamped(resumeAt, 1).getTime() + MINUTE), provider, [
      tenantId,
    ]);
    invoices = await readInvoices();
    expect(
      invoices.map((invoice: { periodStart: string; total: number }) => [
        invoice.periodStart,
        invoice.total,
      ]),
    ).toEqual([
      [t0.toISOString(), tenDays],
      [resumeAt.toISOString(), 2900],
    ]);
    console.log(
      `[money] paused after 10 days, resumed 3 months + 5 days later: ${JSON.stringify(
        invoices.map((invoice: { periodStart: string; periodEnd: string; total: number }) => [
          invoice.periodStart,
          invoice.periodEnd,
          invoice.total,
        ]),
      )}`,
    );
  });

  it("a resume before the cron closed the paused period bills it first; a plan change from PAUSED never bills the paused time", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    const subscription = await subscribe(owner, money.planId, money.priceId);
    const t0 = new Date(subscription.startedAt);
    const cycleMs = addMonthsClamped(t0, 1).getTime() - t0.getTime();
    const at = (days: number) => new Date(t0.getTime() + days * MS_PER_DAY);
    const act = (when: Date, path: string, body: unknown = {}) =>
      atWallClock(when, owner, (session) =>
        call(path, { token: session.accessToken, tenant: tenantId, body }),
      );
    await act(at(4), `/api/v1/subscriptions/${subscription.id}/pause`);
    const resumed = await act(at(6), `/api/v1/subscriptions/${subscription.id}/resume`);
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(201);
    const first = (await asTenant(owner, tenantId)("/api/v1/invoices")).body.data;
    expect(
      first.map(
        (invoice: { periodStart: string; periodEnd: string; total: number; status: string }) => [
          invoice.periodEnd,
          invoice.total,
          invoice.status,
        ],
      ),
    ).toEqual([[at(4).toISOString(), Math.round((2900 * 4 * MS_PER_DAY) / cycleMs), "OPEN"]]);

    // Paused again at day 10, then changed to another plan at day 20 while paused.
    await act(at(10), `/api/v1/subscriptions/${subscription.id}/pause`);
    const other = await buildMoneyPlan(admin, 4900);
    const changed = await act(at(20), "/api/v1/subscriptions", {
      planId: other.planId,
      priceId: other.priceId,
    });
    expect(changed.status).toBe(201);
    const { provider } = steerableProvider("pending");
    await runCycle(new Date(at(20).getTime() + MINUTE), provider, [tenantId]);
    const invoices = (
      await asTenant(owner, tenantId)("/api/v1/invoices?limit=100")
    ).body.data.reverse();
    // After the resume at day 6 a new cycle began: [6, 10) is billed as its part (4 of its days), [10, 20) is not.
    const resumedCycleMs = addMonthsClamped(at(6), 1).getTime() - at(6).getTime();
    expect(
      invoices.map((invoice: { periodStart: string; periodEnd: string; total: number }) => [
        invoice.periodStart,
        invoice.periodEnd,
        invoice.total,
      ]),
    ).toEqual([
      [t0.toISOString(), at(4).toISOString(), Math.round((2900 * 4 * MS_PER_DAY) / cycleMs)],
      [
        at(6).toISOString(),
        at(10).toISOString(),
        Math.round((2900 * 4 * MS_PER_DAY) / resumedCycleMs),
      ],
    ]);
  });
});

describe("void and reissue", () => {
  it("after a void the platform reissues the period with a new number, and its usage appears once", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    await subscribe(owner, money.planId, money.priceId);
    await consumeAt(tenantId, money.keys.calls, 1200, new Date());
    const api = asTenant(admin, tenantId);
    const draft = (await api("/api/v1/invoices/generate", { method: "POST" })).body;
    const first = (await api(`/api/v1/invoices/${draft.id}/finalize`, { method: "POST" })).body;
    // 2,900 + 200 calls x 15 micro-cents = 30 cents
    expect(first).toMatchObject({ status: "OPEN", total: 2930 });
    expectError(await api("/api/v1/invoices/generate", { method: "POST" }), 409, /already exists/);
    expect((await api(`/api/v1/invoices/${draft.id}/void`, { method: "POST" })).body.status).toBe(
      "VOID",
    );
    // Only a VOID invoice can be replaced.
    const reissued = await api("/api/v1/invoices/generate", {
      body: { replacesInvoiceId: draft.id },
    });
    expect(reissued.status, JSON.stringify(reissued.body)).toBe(201);
    expect(reissued.body).toMatchObject({
      status: "DRAFT",
      periodStart: first.periodStart,
      periodEnd: first.periodEnd,
      total: 2930,
    });
    const usage = reissued.body.lineItems.filter((line: { kind: string }) => line.kind === "USAGE");
    expect(usage).toEqual([expect.objectContaining({ quantity: 200, amount: 30 })]);
    const second = (await api(`/api/v1/invoices/${reissued.body.id}/finalize`, { method: "POST" }))
      .body;
    expect(second.invoiceNumber).toMatch(/^INV-\d{4}-\d{6}$/);
    expect(second.invoiceNumber).not.toBe(first.invoiceNumber);
    expectError(
      await api("/api/v1/invoices/generate", { body: { replacesInvoiceId: reissued.body.id } }),
      409,
      /Only a VOID invoice can be replaced/,
    );
    expectError(
      await api("/api/v1/invoices/generate", { body: { replacesInvoiceId: "nope" } }),
      400,
    );
    expectError(await api("/api/v1/invoices/generate", { body: { other: 1 } }), 400);
    // A tenant cannot reissue either.
    expectError(
      await asTenant(owner, tenantId)("/api/v1/invoices/generate", {
        body: { replacesInvoiceId: draft.id },
      }),
      403,
    );
    // Ledger: CHARGE 2,930, CREDIT 2,930 (void), CHARGE 2,930: the tenant owes 2,930 once.
    expect((await api("/api/v1/billing/balance")).body.balance).toBe(2930);
  });
});

describe("money received that no invoice needs", () => {
  it("becomes a credit with the provider reference, and the next invoice uses it", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    const subscription = await subscribe(owner, money.planId, money.priceId);
    const api = asTenant(admin, tenantId);
    const draft = (await api("/api/v1/invoices/generate", { method: "POST" })).body;
    await api(`/api/v1/invoices/${draft.id}/finalize`, { method: "POST" });
    const attempt = (await api("/api/v1/billing/payments")).body.data[0];
    // Paid by bank transfer, then the provider's charge also succeeds: money for nothing.
    await api(`/api/v1/invoices/${draft.id}/mark-paid`, { method: "POST" });
    const fake = await call("/api/v1/webhooks/fake", {
      body: {
        type: "payment.succeeded",
        providerPaymentId: attempt.providerPaymentId,
        amount: 2900,
        currency: "usd",
      },
    });
    expect(fake.status).toBe(200);
    const credit = await (async () => {
      for (let i = 0; i < 100; i++) {
        const entries = (await api("/api/v1/billing/ledger?type=CREDIT")).body.data;
        if (entries.length > 0) return entries[0];
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error("no CREDIT");
    })();
    expect(credit).toMatchObject({ credit: 2900, externalReference: attempt.providerPaymentId });
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: -2900,
      creditBalance: 2900,
    });

    // The next period's invoice (3,050: 2,900 + 1,000 calls beyond) takes the credit.
    const end = new Date(subscription.currentPeriodEnd);
    await consumeAt(tenantId, money.keys.calls, 2000, new Date(end.getTime() + MS_PER_DAY));
    const { provider } = steerableProvider("succeeded");
    await runCycle(new Date(end.getTime() + MINUTE), provider, [tenantId]);
    await runCycle(new Date(addMonthsClamped(end, 1).getTime() + MINUTE), provider, [tenantId]);
    const invoices = (await api("/api/v1/invoices?limit=100")).body.data;
    const next = invoices.find(
      (invoice: { periodStart: string }) => invoice.periodStart === end.toISOString(),
    );
    expect(next).toMatchObject({ subtotal: 3050, total: 150, status: "PAID" });
    expect(next.lineItems.at(-1)).toMatchObject({ kind: "CREDIT_APPLIED", amount: -2900 });
    const adjustments = (await api("/api/v1/billing/ledger?type=ADJUSTMENT")).body.data;
    expect(adjustments).toEqual([expect.objectContaining({ debit: 2900, invoiceId: next.id })]);
    // Only 150 was charged to the provider for it.
    expect(provider.requests.map((request) => request.amount)).toContain(150);
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: 0,
      creditBalance: 0,
    });
  });
});

describe("the billing cycle run twice at once", () => {
  it("bills, charges and advances each subscription exactly once", async () => {
    const owners = await Promise.all([1, 2, 3].map(() => register()));
    const subscriptions = await Promise.all(
      owners.map((owner) => subscribe(owner, money.planId, money.priceId)),
    );
    const tenantIds = owners.map((owner) => owner.tenant.id);
    for (const tenantId of tenantIds) {
      await consumeAt(tenantId, money.keys.calls, 1500, new Date(Date.now() + MS_PER_DAY));
    }
    const latestEnd = Math.max(...subscriptions.map((s) => Date.parse(s.currentPeriodEnd)));
    const at = new Date(latestEnd + MINUTE);
    const { provider } = steerableProvider("succeeded");
    const [first, second] = await Promise.all([
      runCycle(at, provider, tenantIds),
      runCycle(at, provider, tenantIds),
    ]);
    expect(first.rolled + second.rolled).toBe(3);
    expect(provider.requests).toHaveLength(3);
    for (const [index, tenantId] of tenantIds.entries()) {
      const snapshot = await moneySnapshot(tenantId);
      expect(snapshot.invoices).toHaveLength(1);
      // 2,900 + 500 calls x 15 micro-cents = 75 cents
      expect(snapshot.invoices?.[0]).toMatchObject({ status: "PAID", total: 2975 });
      expect(snapshot.ledger?.map((entry) => entry.type).sort()).toEqual(["CHARGE", "PAYMENT"]);
      expect(snapshot.attempts).toHaveLength(1);
      expect(snapshot.subscriptions?.[0]).toMatchObject({
        current_period_start: subscriptions[index].currentPeriodEnd,
      });
    }
  });

  it("leaves every attempt finishable when the provider is down during the cycle", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    const subscription = await subscribe(owner, money.planId, money.priceId);
    const { provider, state } = steerableProvider("unavailable");
    const at = new Date(Date.parse(subscription.currentPeriodEnd) + MINUTE);
    await Promise.all([runCycle(at, provider, [tenantId]), runCycle(at, provider, [tenantId])]);
    let snapshot = await moneySnapshot(tenantId);
    expect(snapshot.invoices).toEqual([expect.objectContaining({ status: "OPEN", total: 2900 })]);
    expect(snapshot.attempts).toEqual([
      expect.objectContaining({
        status: "FAILED",
        next_retry_at: new Date(at.getTime() + 15 * MINUTE).toISOString(),
      }),
    ]);
    state.outcome = "succeeded";
    await runCycle(new Date(at.getTime() + 15 * MINUTE), provider, [tenantId]);
    snapshot = await moneySnapshot(tenantId);
    expect(snapshot.invoices).toEqual([expect.objectContaining({ status: "PAID" })]);
    const attempts = [...(snapshot.attempts ?? [])].sort(
      (a, b) => Number(a.attempt_number) - Number(b.attempt_number),
    );
    expect(attempts.map((attempt) => attempt.status)).toEqual(["FAILED", "SUCCEEDED"]);
  });
});
