import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { addMonthsClamped, MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { invoiceContent } from "@edge-platform/shared/testing/invoice-content";
import { withShard } from "@edge-platform/shared/usage-log/client";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { auditRowsFor } from "./audit-helpers.ts";
import {
  asTenant,
  atWallClock,
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
import { type Account, addMember, call, expectError, type Json, register } from "./helpers.ts";
import { usageLogObject } from "./usage-log-helpers.ts";

// Prepaid credits: grants, the balance the tenant's counter draws down, the
// 402 of a prepaid price, and the CREDITS lines on the period's invoice.

const MINUTE = 60_000;
let admin: Account;

beforeAll(async () => {
  admin = await platformAdmin();
});

/**
 * A monthly price of `amount` (prepaid or not) with METERED features, nothing
 * included, 100 cents a unit (overagePrice 10,000 micro-cents).
 */
async function creditPlan(options: {
  prepaid: boolean;
  features?: number;
  amount?: number;
  usageThresholds?: { amount: number; recurring?: boolean }[];
}) {
  const plan = await createPlan(admin, { name: "Prepaid" });
  const price = await createPrice(admin, plan.id, {
    amount: options.amount ?? 0,
    prepaid: options.prepaid,
    ...(options.usageThresholds ? { usageThresholds: options.usageThresholds } : {}),
  });
  const keys: string[] = [];
  for (let index = 0; index < (options.features ?? 1); index++) {
    const feature = await createFeature(admin, "METERED");
    await grant(admin, plan.id, feature.id, {
      includedAmount: 0,
      overagePrice: 10_000,
      resetPeriod: "MONTHLY",
    });
    keys.push(feature.lookupKey);
  }
  return { planId: plan.id, priceId: price.id, keys };
}

async function subscribedTenant(plan: { planId: string; priceId: string }) {
  const owner = await register();
  const subscription = await subscribe(owner, plan.planId, plan.priceId);
  return { owner, tenantId: owner.tenant.id as string, subscription };
}

const asAdmin = (tenantId: string) => asTenant(admin, tenantId);

async function createGrant(tenantId: string, body: Record<string, unknown>) {
  const result = await asAdmin(tenantId)("/api/v1/credit-grants", {
    body: { currency: "usd", ...body },
  });
  expect(result.status, JSON.stringify(result.body)).toBe(201);
  return result.body;
}

/** A consume as the tenant's OWNER would make it. */
const consume = (owner: Account, key: string, amount: number) =>
  asTenant(owner, owner.tenant.id)(`/api/v1/entitlements/${key}/consume`, { body: { amount } });

/** 402 in the billing error shape plus `code` and `creditBalance`. */
function expectCreditsExhausted(result: { status: number; body: Json }, creditBalance: number) {
  expect(result.status, JSON.stringify(result.body)).toBe(402);
  expect(Object.keys(result.body).sort()).toEqual([
    "code",
    "correlationId",
    "creditBalance",
    "error",
    "message",
    "path",
    "statusCode",
    "timestamp",
  ]);
  expect(result.body).toMatchObject({
    statusCode: 402,
    error: "Payment Required",
    code: "CREDITS_EXHAUSTED",
    creditBalance,
  });
}

const credits = async (tenantId: string) => (await asAdmin(tenantId)("/api/v1/credits")).body;

/** Events of `type` the tenant's counter stored in its outbox (credits.depleted comes from there). */
const counterEvents = (tenantId: string, type: string) =>
  runInDurableObject(
    env.ENTITLEMENT_COUNTER.get(env.ENTITLEMENT_COUNTER.idFromName(tenantId)),
    (_instance, state) =>
      state.storage.sql
        .exec<{ id: string }>("SELECT id FROM tenant_event_outbox WHERE type = ?", type)
        .toArray()
        .map((row) => row.id),
  );

const remainingOf = (balance: Json, id: string) =>
  balance.grants.find((g: Json) => g.id === id)?.remaining;

describe("the worked example: a prepaid price with a promotional and a paid grant", () => {
  it("draws 5,000 then 7,000, refuses 31 units whole, lets exactly 30 of 40 racing units through, and invoices usage minus credits", async () => {
    const plan = await creditPlan({ prepaid: true });
    const [calls] = plan.keys as [string];
    const { owner, tenantId, subscription } = await subscribedTenant(plan);

    const promotional = await createGrant(tenantId, {
      amount: 5_000,
      category: "promotional",
      priority: 10,
    });
    expect(promotional).toMatchObject({
      amount: 5_000,
      remaining: 5_000,
      status: "ACTIVE",
      priority: 10,
      invoiceId: null,
    });
    const paid = await createGrant(tenantId, { amount: 10_000, category: "paid" });
    expect(paid).toMatchObject({ status: "PENDING", priority: 50, paidAmount: 10_000 });
    // The paid grant is a TOP_UP invoice of 10,000, finalized and charged like any other.
    const topUp = (await asAdmin(tenantId)(`/api/v1/invoices/${paid.invoiceId}`)).body;
    expect(topUp).toMatchObject({ kind: "TOP_UP", status: "OPEN", total: 10_000 });
    expect(topUp.lineItems.map((line: Json) => [line.kind, line.amount])).toEqual([
      ["CREDIT_PURCHASE", 10_000],
    ]);
    // Not usable before it is paid: 5,000 covers 50 units, not 51.
    expect((await credits(tenantId)).balance).toBe(5_000);
    expectCreditsExhausted(await consume(owner, calls, 51), 5_000);

    const markPaid = await asAdmin(tenantId)(`/api/v1/invoices/${paid.invoiceId}/mark-paid`, {
      body: {},
    });
    expect(markPaid.body.status, JSON.stringify(markPaid.body)).toBe("PAID");
    const before = await credits(tenantId);
    expect(before.balance).toBe(15_000);
    expect(before.grants.map((g: Json) => [g.id, g.status])).toEqual([
      [promotional.id, "ACTIVE"],
      [paid.id, "ACTIVE"],
    ]);

    // 120 units x 100 cents = 12,000: all 5,000 of the promotional grant, 7,000 of the paid one.
    const first = await consume(owner, calls, 120);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const afterFirst = await credits(tenantId);
    expect(afterFirst.balance).toBe(3_000);
    expect(afterFirst.grants.map((g: Json) => [g.remaining, g.status])).toEqual([
      [0, "EXHAUSTED"],
      [3_000, "ACTIVE"],
    ]);

    // 31 units cost 3,100 > 3,000: refused whole, nothing counted or drawn.
    expectCreditsExhausted(await consume(owner, calls, 31), 3_000);
    expect((await credits(tenantId)).balance).toBe(3_000);
    const check = await asTenant(owner, tenantId)(`/api/v1/entitlements/${calls}/check`);
    expect(check.body).toMatchObject({ allowed: true, used: 120, creditBalance: 3_000 });

    // 40 racing consumes of 1 unit (100 cents each) against 3,000: exactly 30 succeed.
    const racing = await Promise.all(Array.from({ length: 40 }, () => consume(owner, calls, 1)));
    const statuses = racing.map((result) => result.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(30);
    expect(statuses.filter((status) => status === 402)).toHaveLength(10);
    expect((await credits(tenantId)).balance).toBe(0);
    // The draw that took the balance to 0 stored one credits.depleted, named by the paid grant.
    expect(await counterEvents(tenantId, "credits.depleted")).toEqual([
      `evt_credits_depleted_${paid.id}`,
    ]);
    const exhausted = await asTenant(owner, tenantId)(`/api/v1/entitlements/${calls}/check`);
    expect(exhausted.body).toMatchObject({
      allowed: false,
      used: 150,
      code: "CREDITS_EXHAUSTED",
      creditBalance: 0,
    });

    // The period's invoice: usage 150 x 100 = 15,000; CREDITS -5,000 and -10,000; total 0.
    const upcoming = (await asTenant(owner, tenantId)("/api/v1/invoices/upcoming")).body;
    expect(upcoming.lineItems.map((line: Json) => [line.kind, line.amount])).toEqual([
      ["BASE", 0],
      ["USAGE", 15_000],
      ["CREDITS", -5_000],
      ["CREDITS", -10_000],
    ]);
    expect(
      upcoming.lineItems
        .filter((l: Json) => l.kind === "CREDITS")
        .map((l: Json) => l.creditGrantId),
    ).toEqual([promotional.id, paid.id]);
    expect(upcoming).toMatchObject({ subtotal: 0, total: 0 });

    const periodEnd = addMonthsClamped(new Date(subscription.startedAt), 1);
    await runCycle(new Date(periodEnd.getTime() + MINUTE), steerableProvider("pending").provider, [
      tenantId,
    ]);
    const invoices = (await asTenant(owner, tenantId)("/api/v1/invoices")).body.data;
    const period = invoices.find((invoice: Json) => invoice.kind === "PERIOD");
    expect(period).toMatchObject({ status: "PAID", subtotal: 0, total: 0 });
    expect(invoiceContent(upcoming)).toEqual(invoiceContent(period));
  });
});

describe("prepaid exactness", () => {
  it("300 racing consumes against a balance that covers 100 units succeed exactly 100 times", async () => {
    const plan = await creditPlan({ prepaid: true });
    const [calls] = plan.keys as [string];
    const { tenantId } = await subscribedTenant(plan);
    await createGrant(tenantId, { amount: 10_000, category: "promotional" });
    const results = await Promise.all(
      Array.from({ length: 300 }, () =>
        entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId).consume(calls, 1),
      ),
    );
    expect(results.filter((result) => result.status === "consumed")).toHaveLength(100);
    expect(results.filter((result) => result.status === "credits_exhausted")).toHaveLength(200);
    expect((await credits(tenantId)).balance).toBe(0);
    const check = await entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId).check(calls);
    expect(check).toMatchObject({ used: 100, allowed: false, code: "CREDITS_EXHAUSTED" });
  });
});

describe("burn-down rules", () => {
  it("draws three grants by priority, then soonest expiry, then age", async () => {
    const plan = await creditPlan({ prepaid: false });
    const [calls] = plan.keys as [string];
    const { owner, tenantId } = await subscribedTenant(plan);
    const later = new Date(Date.now() + 20 * MS_PER_DAY).toISOString();
    const sooner = new Date(Date.now() + 10 * MS_PER_DAY).toISOString();
    const noExpiry = await createGrant(tenantId, { amount: 1_000, category: "promotional" });
    const expiresLater = await createGrant(tenantId, {
      amount: 1_000,
      category: "promotional",
      expiresAt: later,
    });
    const expiresSooner = await createGrant(tenantId, {
      amount: 1_000,
      category: "promotional",
      expiresAt: sooner,
    });
    // 15 units = 1,500 cents: the sooner-expiring grant, then half of the later one.
    expect((await consume(owner, calls, 15)).status).toBe(200);
    let balance = await credits(tenantId);
    expect(remainingOf(balance, expiresSooner.id)).toBe(0);
    expect(remainingOf(balance, expiresLater.id)).toBe(500);
    expect(remainingOf(balance, noExpiry.id)).toBe(1_000);
    // A grant with a lower priority number comes before all of them.
    const first = await createGrant(tenantId, {
      amount: 300,
      category: "promotional",
      priority: 0,
    });
    expect((await consume(owner, calls, 5)).status).toBe(200);
    balance = await credits(tenantId);
    expect(remainingOf(balance, first.id)).toBe(0);
    expect(remainingOf(balance, expiresLater.id)).toBe(300);
    expect(balance.grants.map((g: Json) => g.id)).toEqual([
      first.id,
      expiresSooner.id,
      expiresLater.id,
      noExpiry.id,
    ]);
    // Not prepaid: usage beyond the balance is taken and billed on the invoice.
    expect((await consume(owner, calls, 20)).status).toBe(200);
    expect((await credits(tenantId)).balance).toBe(0);
  });

  it("a grant limited to one feature pays only for that feature", async () => {
    const plan = await creditPlan({ prepaid: true, features: 2 });
    const [calls, storage] = plan.keys as [string, string];
    const { owner, tenantId } = await subscribedTenant(plan);
    const limited = await createGrant(tenantId, {
      amount: 1_000,
      category: "promotional",
      features: [calls],
    });
    expect(limited.features).toEqual([calls]);
    expectCreditsExhausted(await consume(owner, storage, 1), 0);
    expect((await consume(owner, calls, 10)).status).toBe(200);
    expect((await credits(tenantId)).balance).toBe(0);
  });
});

describe("paid grants", () => {
  it("a tenant tops up itself; the grant is VOIDED with its unpaid TOP_UP invoice", async () => {
    const plan = await creditPlan({ prepaid: true });
    const [calls] = plan.keys as [string];
    const { owner, tenantId } = await subscribedTenant(plan);
    const bought = await asTenant(owner, tenantId)("/api/v1/credits/top-up", {
      body: { amount: 2_500 },
    });
    expect(bought.status, JSON.stringify(bought.body)).toBe(201);
    expect(bought.body).toMatchObject({ category: "paid", status: "PENDING", currency: "usd" });
    const voided = await asAdmin(tenantId)(`/api/v1/invoices/${bought.body.invoiceId}/void`, {
      body: {},
    });
    expect(voided.status, JSON.stringify(voided.body)).toBeLessThan(300);
    const grants = (await asTenant(owner, tenantId)("/api/v1/credit-grants")).body.data;
    expect(grants[0]).toMatchObject({ id: bought.body.id, status: "VOIDED", remaining: 0 });
    expectCreditsExhausted(await consume(owner, calls, 1), 0);
  });

  it("only administrators grant credit; bad grants get clear 400s", async () => {
    const { owner, tenantId } = await subscribedTenant(await creditPlan({ prepaid: false }));
    expectError(
      await asTenant(owner, tenantId)("/api/v1/credit-grants", {
        body: { amount: 100, currency: "usd", category: "promotional" },
      }),
      403,
    );
    const bad = async (body: Record<string, unknown>, message: RegExp) => {
      const result = await asAdmin(tenantId)("/api/v1/credit-grants", { body });
      expectError(result, 400);
      expect(JSON.stringify(result.body.message)).toMatch(message);
    };
    await bad({ amount: 0, currency: "usd", category: "paid" }, /from 1 to 1,000,000,000/);
    await bad({ amount: 10, currency: "usd", category: "gift" }, /promotional.*paid/);
    await bad({ amount: 10, currency: "usd", category: "paid", priority: 101 }, /0 to 100/);
    await bad(
      { amount: 10, currency: "usd", category: "promotional", paidAmount: 5 },
      /paid grants only/,
    );
    await bad(
      { amount: 10, currency: "usd", category: "promotional", expiresAt: "2020-01-01T00:00:00Z" },
      /in the future/,
    );
  });
});

describe("expiry and void", () => {
  it("writes off what an expired or voided grant held, with a ledger entry, and the balance drops", async () => {
    const plan = await creditPlan({ prepaid: true });
    const [calls] = plan.keys as [string];
    const { owner, tenantId } = await subscribedTenant(plan);
    const expiresAt = new Date(Date.now() + 60 * MINUTE);
    const expiring = await createGrant(tenantId, {
      amount: 2_000,
      category: "promotional",
      expiresAt: expiresAt.toISOString(),
    });
    const lasting = await createGrant(tenantId, { amount: 1_000, category: "promotional" });
    // 5 units before the expiry come from the expiring grant (soonest expiry first).
    expect((await consume(owner, calls, 5)).status).toBe(200);
    // After its expiry, inside the same period, it no longer pays.
    const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);
    const afterExpiry = expiresAt.getTime() + MINUTE;
    expect(await counter.consume(calls, 11, afterExpiry)).toMatchObject({
      status: "credits_exhausted",
      creditBalance: 1_000,
    });

    const { expireCreditGrants } = await import("../src/services.ts");
    expect(await expireCreditGrants(env, new Date(afterExpiry))).toBeGreaterThanOrEqual(1);
    const grants = (await asAdmin(tenantId)("/api/v1/credit-grants")).body.data;
    expect(grants.find((g: Json) => g.id === expiring.id)).toMatchObject({
      status: "EXPIRED",
      remaining: 0,
      writtenOff: 1_500,
    });
    const voided = await asAdmin(tenantId)(`/api/v1/credit-grants/${lasting.id}/void`, {
      body: {},
    });
    expect(voided.body).toMatchObject({ status: "VOIDED", writtenOff: 1_000, remaining: 0 });
    expectError(
      await asAdmin(tenantId)(`/api/v1/credit-grants/${lasting.id}/void`, { body: {} }),
      409,
    );
    expect((await credits(tenantId)).balance).toBe(0);

    const ledger = (await asTenant(owner, tenantId)("/api/v1/billing/ledger?type=CREDIT_WRITE_OFF"))
      .body.data;
    expect(ledger.map((entry: Json) => entry.debit).sort()).toEqual([1_000, 1_500]);
    const owed = (await asTenant(owner, tenantId)("/api/v1/billing/balance?currency=usd")).body;
    expect(owed.balance).toBe(0);
    const event = await env.DB.prepare("SELECT type FROM tenant_events WHERE id = ?")
      .bind(`evt_credits_expired_${expiring.id}`)
      .first<{ type: string }>();
    expect(event?.type).toBe("credits.expired");
  });
});

describe("usage from the pipeline", () => {
  it("is counted beyond the balance, draws what the balance holds, and the shortfall is billed", async () => {
    const plan = await creditPlan({ prepaid: true });
    const [calls] = plan.keys as [string];
    const { owner, tenantId, subscription } = await subscribedTenant(plan);
    await createGrant(tenantId, { amount: 1_000, category: "promotional" });
    const now = new Date();
    const started = new Date(subscription.startedAt);
    const windowEnd = addMonthsClamped(started, 1);
    const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);
    const recorded = await counter.record([
      {
        eventId: crypto.randomUUID(),
        subscriptionId: subscription.id,
        featureKey: calls,
        periodKey: started.toISOString(),
        periodStart: started.toISOString(),
        periodEnd: windowEnd.toISOString(),
        amount: 25,
        occurredAt: now.toISOString(),
      },
    ]);
    expect(recorded).toEqual({ recorded: 1, duplicates: 0 });
    expect((await credits(tenantId)).balance).toBe(0);
    // 25 units = 2,500 cents: 1,000 from credit, a shortfall of 1,500 billed.
    const upcoming = (await asTenant(owner, tenantId)("/api/v1/invoices/upcoming")).body;
    expect(upcoming.lineItems.map((line: Json) => [line.kind, line.amount])).toEqual([
      ["BASE", 0],
      ["USAGE", 2_500],
      ["CREDITS", -1_000],
    ]);
    expect(upcoming.total).toBe(1_500);
  });
});

describe("units the counter takes back", () => {
  it("return what they drew to their grants, once; the invoice credits what stays drawn", async () => {
    const plan = await creditPlan({ prepaid: false });
    const [calls] = plan.keys as [string];
    const { owner, tenantId, subscription } = await subscribedTenant(plan);
    const promotional = await createGrant(tenantId, { amount: 1_000, category: "promotional" });
    const second = await createGrant(tenantId, {
      amount: 5_000,
      category: "promotional",
      priority: 60,
    });
    const now = new Date();
    const started = new Date(subscription.startedAt);
    const window = {
      periodKey: started.toISOString(),
      periodStart: started.toISOString(),
      periodEnd: addMonthsClamped(started, 1).toISOString(),
    };
    // Logged events: one the flush claims (5 units), one a later delivery
    // rejected meanwhile (17 units): the counter counts both, then takes the
    // rejected one's units back when its flush cannot claim it.
    const claimed = { id: withShard(crypto.randomUUID(), 0), amount: 5, status: "VALIDATED" };
    const rejected = { id: withShard(crypto.randomUUID(), 0), amount: 17, status: "REJECTED" };
    await usageLogObject(tenantId).import({
      tenantId,
      shard: 0,
      events: [claimed, rejected].map((row) => ({
        id: row.id,
        eventId: crypto.randomUUID(),
        feature: calls,
        amount: row.amount,
        timestamp: now.toISOString(),
        receivedAt: now.toISOString(),
        status: row.status as "VALIDATED",
        reason: null,
        message: null,
        subscriptionId: row.status === "REJECTED" ? null : subscription.id,
        periodKey: row.status === "REJECTED" ? null : window.periodKey,
        periodStart: row.status === "REJECTED" ? null : window.periodStart,
        periodEnd: row.status === "REJECTED" ? null : window.periodEnd,
        validatedAt: null,
        aggregatedAt: null,
        metadata: {},
      })),
    });
    const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);
    const entries = [claimed, rejected].map((row) => ({
      eventId: row.id,
      usageEventId: row.id,
      subscriptionId: subscription.id,
      featureKey: calls,
      ...window,
      amount: row.amount,
      occurredAt: now.toISOString(),
    }));
    expect(await counter.record(entries)).toEqual({ recorded: 2, duplicates: 0 });
    // 22 units = 2,200 cents: 1,000 from the promotional grant, 1,200 from the next.
    expect((await credits(tenantId)).balance).toBe(3_800);
    await counter.flush();
    await counter.flush();

    // The 17 units taken back return their 1,700 cents, last drawn first:
    // 1,200 to the second grant, 500 to the first. 500 stays drawn for 5 units.
    const balance = await credits(tenantId);
    expect(balance.balance).toBe(5_500);
    expect(remainingOf(balance, promotional.id)).toBe(500);
    expect(remainingOf(balance, second.id)).toBe(5_000);
    const drawn = await env.DB.prepare(
      "SELECT id, drawn FROM credit_grants WHERE tenant_id = ? ORDER BY priority",
    )
      .bind(tenantId)
      .all<{ id: string; drawn: number }>();
    expect(drawn.results.map((row) => row.drawn)).toEqual([500, 0]);
    const draws = await env.DB.prepare(
      "SELECT sum(amount) AS amount FROM credit_draws WHERE tenant_id = ?",
    )
      .bind(tenantId)
      .first<{ amount: number }>();
    expect(draws?.amount).toBe(500);

    const periodEnd = addMonthsClamped(started, 1);
    await runCycle(new Date(periodEnd.getTime() + MINUTE), steerableProvider("pending").provider, [
      tenantId,
    ]);
    const invoices = (await asTenant(owner, tenantId)("/api/v1/invoices")).body.data;
    const period = invoices.find((invoice: Json) => invoice.kind === "PERIOD");
    expect(period.lineItems.map((line: Json) => [line.kind, line.amount])).toEqual([
      ["BASE", 0],
      ["USAGE", 500],
      ["CREDITS", -500],
    ]);
    expect(period).toMatchObject({ total: 0 });
  });
});

describe("a plan change inside a usage window", () => {
  // A monthly cycle from 1 January 2032 (a 31-day window). The change on
  // 16 January leaves the new subscription 16 of 31 days of the window:
  // its share of the 100 included units is round(100 x 16 / 31) = 52.
  const start = new Date("2032-01-01T00:00:00.000Z");
  const change = new Date("2032-01-16T00:00:00.000Z");

  it("draws for the units beyond the new subscription's included share, and its invoice credits all of it", async () => {
    const calls = await createFeature(admin, "METERED");
    const planWith = async (name: string) => {
      const plan = await createPlan(admin, { name });
      const price = await createPrice(admin, plan.id, { amount: 0 });
      await grant(admin, plan.id, calls.id, {
        includedAmount: 100,
        overagePrice: 10_000,
        resetPeriod: "MONTHLY",
      });
      return { planId: plan.id, priceId: price.id };
    };
    const [first, second] = [await planWith("Starter"), await planWith("Growth")];
    const owner = await register();
    const tenantId = owner.tenant.id as string;
    const subscribeAt = (target: { planId: string; priceId: string }, at: Date) =>
      atWallClock(at, owner, (session) =>
        call("/api/v1/subscriptions", {
          token: session.accessToken,
          tenant: tenantId,
          body: target,
        }),
      );
    expect((await subscribeAt(first, start)).status).toBe(201);
    await createGrant(tenantId, { amount: 100_000, category: "promotional" });
    const changed = await subscribeAt(second, change);
    expect(changed.status, JSON.stringify(changed.body)).toBe(201);

    // 80 units after the change: 28 beyond the share of 52, 2,800 cents drawn.
    const consumed = await atWallClock(new Date("2032-01-20T00:00:00.000Z"), owner, (session) =>
      call(`/api/v1/entitlements/${calls.lookupKey}/consume`, {
        token: session.accessToken,
        tenant: tenantId,
        body: { amount: 80 },
      }),
    );
    expect(consumed.status, JSON.stringify(consumed.body)).toBe(200);
    expect((await credits(tenantId)).balance).toBe(97_200);

    await runCycle(new Date("2032-02-01T00:01:00.000Z"), steerableProvider("succeeded").provider, [
      tenantId,
    ]);
    const invoices = (await asTenant(owner, tenantId)("/api/v1/invoices")).body.data;
    const period = invoices.find(
      (invoice: Json) => invoice.kind === "PERIOD" && invoice.subscriptionId === changed.body.id,
    );
    expect(period.lineItems.map((line: Json) => [line.kind, line.amount])).toEqual([
      ["BASE", 0],
      ["USAGE", 2_800],
      ["CREDITS", -2_800],
    ]);
    expect(period).toMatchObject({ subtotal: 0, total: 0 });
    expect((await credits(tenantId)).balance).toBe(97_200);
  });
});

describe("automatic top-up", () => {
  const autoGrants = (tenantId: string) =>
    env.DB.prepare(
      "SELECT id, amount, status, invoice_id FROM credit_grants WHERE tenant_id = ? AND auto_top_up = 1",
    )
      .bind(tenantId)
      .all<{ id: string; amount: number; status: string; invoice_id: string }>();

  it("fires once under 50 concurrent consumes, and a declined charge turns the rule off", async () => {
    const plan = await creditPlan({ prepaid: true });
    const [calls] = plan.keys as [string];
    const { owner, tenantId } = await subscribedTenant(plan);
    await createGrant(tenantId, { amount: 6_000, category: "promotional" });
    const rule = await asTenant(owner, tenantId)("/api/v1/credits/auto-top-up", {
      method: "PUT",
      body: { enabled: true, threshold: 2_000, amount: 10_000 },
    });
    expect(rule.status, JSON.stringify(rule.body)).toBe(200);
    expect(rule.body).toMatchObject({ enabled: true, threshold: 2_000, amount: 10_000 });

    // 50 consumes of 1 unit (100 cents) take the balance from 6,000 to 1,000, below 2,000.
    const racing = await Promise.all(Array.from({ length: 50 }, () => consume(owner, calls, 1)));
    expect(racing.every((result) => result.status === 200)).toBe(true);
    const created = await vi.waitFor(
      async () => {
        const { results } = await autoGrants(tenantId);
        if (results.length === 0) throw new Error("no automatic top-up yet");
        return results;
      },
      { timeout: 10_000, interval: 100 },
    );
    // Still one after more consumes below the threshold while it is pending.
    expect((await consume(owner, calls, 1)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await autoGrants(tenantId)).results).toHaveLength(1);
    expect(created[0]).toMatchObject({ amount: 10_000, status: "PENDING" });
    const lowEvents = await env.DB.prepare(
      "SELECT count(*) AS n FROM tenant_events WHERE tenant_id = ? AND type = 'credits.balance_low'",
    )
      .bind(tenantId)
      .first<{ n: number }>();
    expect(lowEvents?.n).toBe(1);

    // The top-up's charge is declined: the rule turns itself off.
    const attempt = await env.DB.prepare(
      "SELECT provider_payment_id AS providerPaymentId FROM payment_attempts WHERE invoice_id = ?",
    )
      .bind(created[0]?.invoice_id)
      .first<{ providerPaymentId: string }>();
    const declined = paymentIntentEvent(
      "payment_intent.payment_failed",
      attempt?.providerPaymentId ?? "",
      { last_payment_error: { message: "Card declined" } },
    );
    await signedWebhook(declined);
    await waitForWebhook(declined.id);
    const balance = await credits(tenantId);
    expect(balance.autoTopUp).toMatchObject({
      enabled: false,
      disabledReason: "The top-up charge was declined: Card declined",
    });
    const failed = await env.DB.prepare(
      "SELECT count(*) AS n FROM tenant_events WHERE tenant_id = ? AND type = 'credits.top_up_failed'",
    )
      .bind(tenantId)
      .first<{ n: number }>();
    expect(failed?.n).toBe(1);
    // Off: spending further starts no other top-up.
    expect((await consume(owner, calls, 5)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await autoGrants(tenantId)).results).toHaveLength(1);
  });
});

describe("a tenant that is not ACTIVE", () => {
  for (const status of ["SUSPENDED", "CANCELLED"]) {
    it(`${status.toLowerCase()}: its automatic top-up rule is refused like every other write, and stays as it was`, async () => {
      const plan = await creditPlan({ prepaid: true });
      const { owner, tenantId } = await subscribedTenant(plan);
      const setRule = (body: Record<string, unknown>) =>
        asTenant(owner, tenantId)("/api/v1/credits/auto-top-up", { method: "PUT", body });
      const before = await setRule({ enabled: true, threshold: 2_000, amount: 10_000 });
      expect(before.status, JSON.stringify(before.body)).toBe(200);
      await env.DB.prepare("UPDATE tenants SET status = ? WHERE id = ?")
        .bind(status, tenantId)
        .run();

      const refused = `Tenant is ${status.toLowerCase()}: it can be read but not changed`;
      expectError(await setRule({ enabled: true, threshold: 500, amount: 50_000 }), 403, refused);
      // The same answer as the tenant's other writes.
      expectError(
        await asTenant(owner, tenantId)("/api/v1/credits/top-up", { body: { amount: 1_000 } }),
        403,
        refused,
      );
      expectError(
        await call("/api/v1/api-keys", {
          token: owner.accessToken,
          tenant: tenantId,
          body: { name: "k" },
        }),
        403,
        refused,
      );
      expect((await credits(tenantId)).autoTopUp).toMatchObject({
        enabled: true,
        threshold: 2_000,
        amount: 10_000,
      });
      expect(await auditRowsFor(tenantId, "credit_auto_top_up.updated")).toHaveLength(1);
    });
  }
});

describe("progressive billing", () => {
  const progressiveInvoices = (tenantId: string) =>
    env.DB.prepare(
      "SELECT id, status, subtotal, total FROM invoices WHERE tenant_id = ? AND kind = 'PROGRESSIVE'",
    )
      .bind(tenantId)
      .all<{ id: string; status: string; subtotal: number; total: number }>();

  it("50 concurrent consumes crossing a threshold issue one PROGRESSIVE invoice; the period's invoice is usage minus progressive minus credits", async () => {
    const plan = await creditPlan({
      prepaid: false,
      amount: 2_900,
      usageThresholds: [{ amount: 2_000 }, { amount: 100_000, recurring: true }],
    });
    const [calls] = plan.keys as [string];
    const { owner, tenantId, subscription } = await subscribedTenant(plan);
    const promotional = await createGrant(tenantId, { amount: 500, category: "promotional" });

    // 50 x 100 cents = 5,000 of priced usage passes 2,000 (once).
    const racing = await Promise.all(Array.from({ length: 50 }, () => consume(owner, calls, 1)));
    expect(racing.every((result) => result.status === 200)).toBe(true);
    const [progressive] = await vi.waitFor(
      async () => {
        const { results } = await progressiveInvoices(tenantId);
        if (results.length === 0) throw new Error("no progressive invoice yet");
        return results;
      },
      { timeout: 10_000, interval: 100 },
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await progressiveInvoices(tenantId)).results).toHaveLength(1);
    if (!progressive) throw new Error("unreachable");
    expect(progressive.status).toBe("OPEN");
    // It bills the usage counted when it was issued (at least the 2,000 that passed the
    // threshold), less the 500 of credit drawn first, and no base fee.
    const issued = (await asTenant(owner, tenantId)(`/api/v1/invoices/${progressive.id}`)).body;
    const usageOn = (invoice: Json) =>
      invoice.lineItems
        .filter((line: Json) => line.kind === "USAGE")
        .reduce((sum: number, line: Json) => sum + line.amount, 0);
    const progressiveUsage = usageOn(issued);
    expect(progressiveUsage).toBeGreaterThanOrEqual(2_000);
    expect(issued.lineItems.some((line: Json) => line.kind === "BASE")).toBe(false);
    expect(issued.lineItems.find((line: Json) => line.kind === "CREDITS")).toMatchObject({
      amount: -500,
      creditGrantId: promotional.id,
    });
    expect(issued.subtotal).toBe(progressiveUsage - 500);
    const event = await env.DB.prepare("SELECT type FROM tenant_events WHERE id = ?")
      .bind(`evt_progressive_${progressive.id}`)
      .first<{ type: string }>();
    expect(event?.type).toBe("invoice.progressive_issued");

    // 10 more units after it.
    expect((await consume(owner, calls, 10)).status).toBe(200);
    const periodEnd = addMonthsClamped(new Date(subscription.startedAt), 1);
    await runCycle(new Date(periodEnd.getTime() + MINUTE), steerableProvider("pending").provider, [
      tenantId,
    ]);
    const invoices = (await asTenant(owner, tenantId)("/api/v1/invoices")).body.data;
    const period = invoices.find((invoice: Json) => invoice.kind === "PERIOD");
    // Usage 60 x 100 = 6,000 in full, credits 500, progressive what the PROGRESSIVE invoice billed.
    expect(period.lineItems.map((line: Json) => [line.kind, line.amount])).toEqual([
      ["BASE", 2_900],
      ["USAGE", 6_000],
      ["CREDITS", -500],
      ["PROGRESSIVE_BILLED", -issued.subtotal],
    ]);
    expect(period.total).toBe(2_900 + 6_000 - issued.subtotal - 500);
    // Every unit billed once: what the two invoices bill for usage is 6,000 less the credit.
    expect(issued.subtotal + (period.total - 2_900)).toBe(6_000 - 500);
  });

  it("refuses thresholds that do not increase", async () => {
    const plan = await createPlan(admin, { name: "Thresholds" });
    const result = await asAdmin("00000000-0000-4000-8000-000000000000")(
      `/api/v1/plans/${plan.id}/prices`,
      { body: { interval: "MONTHLY", amount: 0, usageThresholds: [{ amount: 5 }, { amount: 5 }] } },
    );
    expectError(result, 400);
    expect(JSON.stringify(result.body.message)).toMatch(/strictly increase/);
  });
});

describe("keys, audit and the API document", () => {
  it("replays a grant with its Idempotency-Key, audits every write, and documents the routes", async () => {
    const { owner, tenantId } = await subscribedTenant(await creditPlan({ prepaid: false }));
    const grantOnce = () =>
      asAdmin(tenantId)("/api/v1/credit-grants", {
        body: { amount: 700, currency: "usd", category: "promotional" },
        headers: { "idempotency-key": `grant-${tenantId}` },
      });
    const first = await grantOnce();
    const again = await grantOnce();
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.id).toBe(first.body.id);
    expect((await asAdmin(tenantId)("/api/v1/credit-grants")).body.data).toHaveLength(1);

    const created = await auditRowsFor(first.body.id, "credit_grant.created");
    expect(created).toHaveLength(1);
    expect(JSON.parse(created[0]?.changes ?? "{}")).toMatchObject({
      amount: { after: 700 },
      category: { after: "promotional" },
    });
    await asAdmin(tenantId)(`/api/v1/credit-grants/${first.body.id}/void`, { body: {} });
    expect(await auditRowsFor(first.body.id, "credit_grant.voided")).toHaveLength(1);
    await asTenant(owner, tenantId)("/api/v1/credits/auto-top-up", {
      method: "PUT",
      body: { enabled: true, threshold: 100, amount: 1_000 },
    });
    expect(await auditRowsFor(tenantId, "credit_auto_top_up.updated")).toHaveLength(1);

    const doc = (await call("/api/docs-json")).body;
    for (const path of [
      "/api/v1/credit-grants",
      "/api/v1/credit-grants/{id}/void",
      "/api/v1/credits",
      "/api/v1/credits/top-up",
      "/api/v1/credits/auto-top-up",
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    expect(
      doc.paths["/api/v1/entitlements/{featureKey}/consume"].post.responses["402"],
    ).toBeDefined();
  });

  it("a DEVELOPER reads no credits and buys none", async () => {
    const { owner, tenantId } = await subscribedTenant(await creditPlan({ prepaid: false }));
    const developer = await addMember(owner, "DEVELOPER");
    expectError(await asTenant(developer, tenantId)("/api/v1/credits"), 403);
    expectError(
      await asTenant(developer, tenantId)("/api/v1/credits/top-up", { body: { amount: 100 } }),
      403,
    );
  });
});
