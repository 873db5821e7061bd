import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { addMonthsClamped } from "@edge-platform/shared/billing/billing-period";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { withShard } from "@edge-platform/shared/usage-log/client";
import { beforeAll, describe, expect, it } from "vitest";
import { CreditBalance } from "../src/entitlements/counter/credit-balance.ts";
import type { EntitlementCounter } from "../src/index.ts";
import { asTenant } from "./billing-helpers.ts";
import {
  createFeature,
  createPlan,
  createPrice,
  grant,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { type Account, type Json, register } from "./helpers.ts";
import { usageLogObject } from "./usage-log-helpers.ts";

// Draws that a flush later returns (the units of a logged event it could not
// claim go back out of the counter, and their credit back to the grants):
// what they may start, what they leave counted, and where the cents go when
// their grant ended meanwhile.

const HOUR = 3_600_000;
let admin: Account;

beforeAll(async () => {
  admin = await platformAdmin();
});

/** METERED usage at 100 cents a unit, nothing included. */
async function creditPlan(options: { usageThresholds?: { amount: number }[] } = {}) {
  const plan = await createPlan(admin, { name: "Credits" });
  const price = await createPrice(admin, plan.id, {
    amount: 0,
    ...(options.usageThresholds ? { usageThresholds: options.usageThresholds } : {}),
  });
  const feature = await createFeature(admin, "METERED");
  await grant(admin, plan.id, feature.id, {
    includedAmount: 0,
    overagePrice: 10_000,
    resetPeriod: "MONTHLY",
  });
  return { planId: plan.id, priceId: price.id, key: feature.lookupKey as string };
}

async function subscribedTenant(plan: { planId: string; priceId: string }) {
  const owner = await register();
  const subscription = await subscribe(owner, plan.planId, plan.priceId);
  return { owner, tenantId: owner.tenant.id as string, subscription };
}

async function createGrant(tenantId: string, body: Record<string, unknown>) {
  const result = await asTenant(admin, tenantId)("/api/v1/credit-grants", {
    body: { currency: "usd", ...body },
  });
  expect(result.status, JSON.stringify(result.body)).toBe(201);
  return result.body;
}

const credits = async (tenantId: string) =>
  (await asTenant(admin, tenantId)("/api/v1/credits")).body;

const counterOf = (tenantId: string) =>
  env.ENTITLEMENT_COUNTER.get(env.ENTITLEMENT_COUNTER.idFromName(tenantId));

const counterSql = <T>(tenantId: string, read: (sql: SqlStorage) => T) =>
  runInDurableObject(counterOf(tenantId), (_instance: EntitlementCounter, state) =>
    read(state.storage.sql),
  );

/**
 * Logs events in the tenant's usage log (a REJECTED one is what a later
 * delivery rejected meanwhile: no flush can claim it), records them in the
 * counter, and moves the counter's alarm an hour away, so that only the
 * test's own flushes settle them.
 */
async function recordLogged(
  tenantId: string,
  subscription: Json,
  key: string,
  events: { amount: number; status: "VALIDATED" | "REJECTED" }[],
) {
  const now = new Date();
  const started = new Date(subscription.startedAt);
  const window = {
    periodKey: started.toISOString(),
    periodStart: started.toISOString(),
    periodEnd: addMonthsClamped(started, 1).toISOString(),
  };
  const rows = events.map((event) => ({ ...event, id: withShard(crypto.randomUUID(), 0) }));
  await usageLogObject(tenantId).import({
    tenantId,
    shard: 0,
    events: rows.map((row) => {
      const validated = row.status === "VALIDATED";
      return {
        id: row.id,
        eventId: crypto.randomUUID(),
        feature: key,
        amount: row.amount,
        timestamp: now.toISOString(),
        receivedAt: now.toISOString(),
        status: row.status as "VALIDATED",
        reason: null,
        message: null,
        subscriptionId: validated ? subscription.id : null,
        periodKey: validated ? window.periodKey : null,
        periodStart: validated ? window.periodStart : null,
        periodEnd: validated ? window.periodEnd : null,
        validatedAt: null,
        aggregatedAt: null,
        metadata: {},
      };
    }),
  });
  await runInDurableObject(counterOf(tenantId), async (instance: EntitlementCounter, state) => {
    const recorded = await instance.record({
      tenantId,
      entries: rows.map((row) => ({
        eventId: row.id,
        usageEventId: row.id,
        subscriptionId: subscription.id,
        featureKey: key,
        ...window,
        amount: row.amount,
        occurredAt: now.toISOString(),
      })),
    });
    expect(recorded).toEqual({ recorded: rows.length, duplicates: 0 });
    await state.storage.setAlarm(Date.now() + HOUR);
  });
}

const pendingTopUp = (tenantId: string) =>
  counterSql(
    tenantId,
    (sql) =>
      sql
        .exec<{ pending_grant_id: string | null }>("SELECT pending_grant_id FROM credit_rule")
        .toArray()[0]?.pending_grant_id ?? null,
  );

const depletedEvents = (tenantId: string) =>
  counterSql(tenantId, (sql) =>
    sql
      .exec<{ id: string }>("SELECT id FROM tenant_event_outbox WHERE type = 'credits.depleted'")
      .toArray()
      .map((row) => row.id),
  );

describe("draws a flush returns", () => {
  it("start no automatic top-up and send no credits.depleted; draws it claims do, once claimed", async () => {
    const plan = await creditPlan();
    const { owner, tenantId, subscription } = await subscribedTenant(plan);
    const promotional = await createGrant(tenantId, { amount: 1_100, category: "promotional" });
    const rule = await asTenant(owner, tenantId)("/api/v1/credits/auto-top-up", {
      method: "PUT",
      body: { enabled: true, threshold: 500, amount: 10_000 },
    });
    expect(rule.status, JSON.stringify(rule.body)).toBe(200);

    // 10 units of an event rejected meanwhile draw 1,000 (100 left, below
    // the threshold), then a consume of 1 unit draws the last 100.
    await recordLogged(tenantId, subscription, plan.key, [{ amount: 10, status: "REJECTED" }]);
    const consumed = await asTenant(owner, tenantId)(`/api/v1/entitlements/${plan.key}/consume`, {
      body: { amount: 1 },
    });
    expect(consumed.status, JSON.stringify(consumed.body)).toBe(200);
    expect((await credits(tenantId)).balance).toBe(0);
    // The flush cannot claim the event: its 1,000 go back, and nothing was started.
    await entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId).flush();
    expect((await credits(tenantId)).balance).toBe(1_000);
    expect(await pendingTopUp(tenantId)).toBeNull();
    expect(await depletedEvents(tenantId)).toEqual([]);

    // 10 units of an event the flush claims draw the 1,000: the balance is
    // 0 and below the threshold once the flush has claimed them, not before.
    await recordLogged(tenantId, subscription, plan.key, [{ amount: 10, status: "VALIDATED" }]);
    expect(await pendingTopUp(tenantId)).toBeNull();
    await entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId).flush();
    expect((await credits(tenantId)).balance).toBe(0);
    expect(await pendingTopUp(tenantId)).not.toBeNull();
    expect(await depletedEvents(tenantId)).toEqual([`evt_credits_depleted_${promotional.id}`]);
  });

  it("lower the period's priced usage: a threshold they alone crossed issues no invoice", async () => {
    const plan = await creditPlan({ usageThresholds: [{ amount: 2_000 }] });
    const { tenantId, subscription } = await subscribedTenant(plan);
    const period = () =>
      counterSql(tenantId, (sql) =>
        sql
          .exec<{ priced_cents: number; reached: number; pending_invoice_id: string | null }>(
            "SELECT priced_cents, reached, pending_invoice_id FROM progressive_periods",
          )
          .toArray()
          .map((row) => ({ ...row, pending: row.pending_invoice_id !== null })),
      );
    const progressiveInvoices = async () =>
      (
        await env.DB.prepare("SELECT id FROM invoices WHERE tenant_id = ? AND kind = 'PROGRESSIVE'")
          .bind(tenantId)
          .all<{ id: string }>()
      ).results;

    // 25 units = 2,500 cents pass the 2,000 threshold, until their event is taken back.
    await recordLogged(tenantId, subscription, plan.key, [{ amount: 25, status: "REJECTED" }]);
    expect(await period()).toMatchObject([{ priced_cents: 2_500, reached: 1, pending: true }]);
    await entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId).flush();
    expect(await period()).toMatchObject([{ priced_cents: 0, reached: 0, pending: false }]);
    await runInDurableObject(counterOf(tenantId), (instance: EntitlementCounter) =>
      instance.alarm(),
    );
    expect(await progressiveInvoices()).toEqual([]);

    // The same usage claimed passes it again, and its invoice is issued.
    await recordLogged(tenantId, subscription, plan.key, [{ amount: 25, status: "VALIDATED" }]);
    expect(await period()).toMatchObject([{ priced_cents: 2_500, reached: 1, pending: true }]);
    await runInDurableObject(counterOf(tenantId), (instance: EntitlementCounter) =>
      instance.alarm(),
    );
    const issued = await progressiveInvoices();
    expect(issued).toHaveLength(1);
    const invoice = (await asTenant(admin, tenantId)(`/api/v1/invoices/${issued[0]?.id}`)).body;
    expect(invoice.lineItems.map((line: Json) => [line.kind, line.amount])).toEqual([
      ["USAGE", 2_500],
    ]);
  });

  for (const ending of ["VOIDED", "EXPIRED"] as const) {
    it(`come back to a grant ${ending.toLowerCase()} meanwhile as a write-off in the ledger, not as credit`, async () => {
      const plan = await creditPlan();
      const { owner, tenantId, subscription } = await subscribedTenant(plan);
      const expiresAt = new Date(Date.now() + HOUR);
      const ended = await createGrant(tenantId, {
        amount: 1_000,
        category: "promotional",
        expiresAt: expiresAt.toISOString(),
      });
      // 4 units of an event rejected meanwhile draw 400; the grant ends with 600 written off.
      await recordLogged(tenantId, subscription, plan.key, [{ amount: 4, status: "REJECTED" }]);
      if (ending === "VOIDED") {
        const voided = await asTenant(admin, tenantId)(`/api/v1/credit-grants/${ended.id}/void`, {
          body: {},
        });
        expect(voided.body).toMatchObject({ status: "VOIDED", writtenOff: 600 });
      } else {
        const { expireCreditGrants } = await import("../src/services.ts");
        await expireCreditGrants(env, new Date(expiresAt.getTime() + HOUR));
      }

      // The flush returns the 400 to the ended grant: written off too, with its entry.
      await entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId).flush();
      const stored = await env.DB.prepare(
        "SELECT status, drawn, written_off AS writtenOff FROM credit_grants WHERE id = ?",
      )
        .bind(ended.id)
        .first<{ status: string; drawn: number; writtenOff: number }>();
      expect(stored).toEqual({ status: ending, drawn: 0, writtenOff: 1_000 });
      const ledger = (
        await asTenant(owner, tenantId)("/api/v1/billing/ledger?type=CREDIT_WRITE_OFF")
      ).body.data;
      expect(ledger.map((entry: Json) => entry.debit).sort()).toEqual([400, 600]);
      const balance = await credits(tenantId);
      expect(balance.balance).toBe(0);
      const { grants } = await entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId).credits();
      expect(grants.find((row) => row.id === ended.id)).toMatchObject({ status: ending });
      // A second flush writes nothing more off.
      await entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId).flush();
      const again = await env.DB.prepare("SELECT written_off AS w FROM credit_grants WHERE id = ?")
        .bind(ended.id)
        .first<{ w: number }>();
      expect(again?.w).toBe(1_000);
    });
  }
});

/** A D1 that answers each load's batch with the grant rows it is given, when the test says so. */
function scriptedD1() {
  const waiting: ((rows: Record<string, unknown>[]) => void)[] = [];
  const statement = { bind: () => statement };
  const d1 = {
    prepare: () => statement,
    batch: (statements: unknown[]) =>
      new Promise((resolve) => {
        waiting.push((rows) =>
          resolve(statements.map((_, index) => ({ results: index === 0 ? rows : [] }))),
        );
      }),
  };
  return {
    database: d1 as unknown as D1Database,
    /** Answers the oldest batch waiting. */
    answer(rows: Record<string, unknown>[]) {
      const next = waiting.shift();
      if (!next) throw new Error("no load is waiting");
      next(rows);
    },
  };
}

describe("a grant being voided", () => {
  it("is never read back ACTIVE by a load that read D1 before the void reached it", async () => {
    const tenantId = crypto.randomUUID();
    const row = {
      id: crypto.randomUUID(),
      currency: "usd",
      priority: 50,
      expires_at: null,
      created_at: new Date().toISOString(),
      features: null,
      status: "ACTIVE",
      amount: 1_000,
      drawn: 0,
      written_off: 0,
    };
    await runInDurableObject(counterOf(tenantId), async (_instance: EntitlementCounter, state) => {
      const d1 = scriptedD1();
      const balance = new CreditBalance(
        state.storage.sql,
        () => d1.database,
        async () => {},
        () => {},
      );
      const statusNow = () => balance.grants().find((grant) => grant.id === row.id)?.status;
      const context = { featureKey: "calls", currency: "usd", now: new Date() };
      const first = balance.ready(tenantId);
      d1.answer([row]);
      await first;
      expect(statusNow()).toBe("ACTIVE");

      // A load in flight read the grant ACTIVE; the void ends it before that load lands.
      balance.refresh();
      const inFlight = balance.ready(tenantId);
      expect(balance.settle(row.id, "VOIDED")).toBe(1_000);
      d1.answer([row]);
      await inFlight;
      expect(statusNow()).toBe("VOIDED");
      expect(balance.balance(context)).toBe(0);

      // A load started after the void, reading D1 before the void's batch is written there.
      balance.refresh();
      const later = balance.ready(tenantId);
      d1.answer([row]);
      await later;
      expect(statusNow()).toBe("VOIDED");
      expect(balance.balance(context)).toBe(0);

      // Once D1 has it, the grant is VOIDED either way.
      balance.refresh();
      const settled = balance.ready(tenantId);
      d1.answer([{ ...row, status: "VOIDED", written_off: 1_000 }]);
      await settled;
      expect(statusNow()).toBe("VOIDED");
    });
  });
});
