import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { withShard } from "@edge-platform/shared/usage-log/client";
import { describe, expect, it } from "vitest";
import { counterIdRetentionMs } from "../src/entitlements/domain/usage-counter-settings.ts";
import type { EntitlementCounter } from "../src/index.ts";
import {
  insertSubscription,
  insertTenant,
  monthlyWindowAt,
  snapshot,
} from "./entitlement-fixtures.ts";
import { inUsageLog, usageLogObject } from "./usage-log-helpers.ts";

// The counter remembers the event ids it recorded for
// USAGE_COUNTER_ID_RETENTION_SECONDS only. An event that reaches it again
// later (a dead letter retried days on, a message that sat in a queue) must
// still be counted once: the usage log's claim refuses it, not the memory.

const MEMORY_MS = counterIdRetentionMs(env.USAGE_COUNTER_ID_RETENTION_SECONDS);

/** The counter's private sweep of remembered ids, run as its alarm would at `nowMs`. */
interface CounterInternals {
  forgetRecordedIds(nowMs: number): number;
}

async function setUp() {
  const tenantId = await insertTenant();
  const fixture = await insertSubscription({
    tenantId,
    snapshots: [snapshot.metered("api_calls", 0)],
  });
  const now = new Date();
  const window = monthlyWindowAt(fixture, now);
  const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);
  const stub = env.ENTITLEMENT_COUNTER.get(env.ENTITLEMENT_COUNTER.idFromName(tenantId));
  /** A PENDING event in the tenant's shard, as ingestion stores it. */
  const logEvent = async (amount: number) => {
    const id = withShard(crypto.randomUUID(), 0);
    await usageLogObject(tenantId).import({
      tenantId,
      shard: 0,
      events: [
        {
          id,
          eventId: crypto.randomUUID(),
          feature: "api_calls",
          amount,
          timestamp: now.toISOString(),
          receivedAt: now.toISOString(),
          status: "PENDING",
          reason: null,
          message: null,
          subscriptionId: null,
          periodKey: null,
          periodStart: null,
          periodEnd: null,
          validatedAt: null,
          aggregatedAt: null,
          metadata: {},
        },
      ],
    });
    return id;
  };
  /** The entry validation and aggregation send for the event (usage-consumer's entryOf). */
  const entryOf = (id: string, amount: number) => ({
    eventId: id,
    usageEventId: id,
    subscriptionId: fixture.subscriptionId,
    featureKey: "api_calls",
    ...window,
    amount,
    occurredAt: now.toISOString(),
  });
  const stored = async () =>
    (
      await env.DB.prepare(
        "SELECT amount FROM usage_aggregates WHERE subscription_id = ? AND feature_lookup_key = 'api_calls'",
      )
        .bind(fixture.subscriptionId)
        .first<{ amount: number }>()
    )?.amount ?? 0;
  /** The counter's sweep at `nowMs`; answers the ids it still remembers. */
  const forgetAt = (nowMs: number) =>
    runInDurableObject(stub, (instance: EntitlementCounter, state) => {
      (instance as unknown as CounterInternals).forgetRecordedIds(nowMs);
      return state.storage.sql
        .exec<{ event_id: string }>("SELECT event_id FROM recorded_events")
        .toArray()
        .map((row) => row.event_id);
    });
  const eventRow = (id: string) =>
    inUsageLog(tenantId, 0, (sql) =>
      sql
        .exec<{ status: string; flush: string | null }>(
          "SELECT status, claim_flush_id AS flush FROM events WHERE id = ?",
          id,
        )
        .toArray()
        .at(0),
    );
  return { tenantId, counter, stub, logEvent, entryOf, stored, forgetAt, eventRow };
}

describe("EntitlementCounter: the memory of recorded event ids", () => {
  it("counts an already aggregated event once when it comes back after the counter forgot its id", async () => {
    const { counter, logEvent, entryOf, stored, forgetAt, eventRow } = await setUp();
    const id = await logEvent(7);
    expect(await counter.record([entryOf(id, 7)])).toEqual({ recorded: 1, duplicates: 0 });
    expect(await counter.flush()).toMatchObject({ pendingUnits: 0 });
    const first = await eventRow(id);
    expect(first?.status).toBe("AGGREGATED");
    expect(await stored()).toBe(7);
    // Within the memory a repeat is a duplicate at once.
    expect(await counter.record([entryOf(id, 7)])).toEqual({ recorded: 0, duplicates: 1 });
    expect(await forgetAt(Date.now())).toEqual([id]);

    // Past the memory the id is forgotten, and the same entry is new to the counter...
    expect(await forgetAt(Date.now() + MEMORY_MS + 1)).toEqual([]);
    expect(await counter.record([entryOf(id, 7)])).toEqual({ recorded: 1, duplicates: 0 });
    expect(await counter.flush()).toMatchObject({ pendingUnits: 0 });
    // ...but the shard does not let a finished event be claimed again:
    // nothing more in D1, the counter's units taken back, the event unchanged.
    expect(await stored()).toBe(7);
    expect((await counter.check("api_calls")).used).toBe(7);
    expect(await eventRow(id)).toEqual(first);
  });

  it("counts an archived event once when it comes back after the counter forgot its id", async () => {
    const { tenantId, counter, logEvent, entryOf, stored, forgetAt, eventRow } = await setUp();
    const id = await logEvent(5);
    await counter.record([entryOf(id, 5)]);
    await counter.flush();
    expect(await stored()).toBe(5);
    // The event leaves the shard for its Parquet file (settled, its hour closed).
    const archived = await usageLogObject(tenantId).archiveDue({
      nowMs: Date.now() + 2 * 3_600_000,
    });
    expect(archived.events).toBe(1);
    expect(await eventRow(id)).toBeUndefined();

    await forgetAt(Date.now() + MEMORY_MS + 1);
    expect(await counter.record([entryOf(id, 5)])).toEqual({ recorded: 1, duplicates: 0 });
    expect(await counter.flush()).toMatchObject({ pendingUnits: 0 });
    expect(await stored()).toBe(5);
    expect((await counter.check("api_calls")).used).toBe(5);
  });

  it("keeps remembering the id of an event its flush has not settled, however old", async () => {
    const { tenantId, counter, stub, logEvent, entryOf, stored, forgetAt } = await setUp();
    // Every flush of this tenant fails inside D1 until the trigger is dropped.
    const trigger = `fail_flush_${tenantId.replaceAll("-", "")}`;
    await env.DB.prepare(
      `CREATE TRIGGER ${trigger} BEFORE INSERT ON usage_flushes WHEN NEW.tenant_id = '${tenantId}' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
    ).run();
    try {
      const id = await logEvent(3);
      await counter.record([entryOf(id, 3)]);
      await runInDurableObject(stub, async (instance: EntitlementCounter) => {
        await expect(instance.flush({ tenantId })).rejects.toThrow(/injected failure/);
      });
      // Forgetting it now would let a repeat add its units to the counter a second time.
      expect(await forgetAt(Date.now() + MEMORY_MS + 1)).toEqual([id]);
      expect(await counter.record([entryOf(id, 3)])).toEqual({ recorded: 0, duplicates: 1 });
    } finally {
      await env.DB.prepare(`DROP TRIGGER ${trigger}`).run();
    }
    expect(await counter.flush()).toMatchObject({ pendingUnits: 0 });
    expect(await stored()).toBe(3);
    expect((await counter.check("api_calls")).used).toBe(3);
  });
});
