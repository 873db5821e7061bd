import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { describe, expect, it, vi } from "vitest";
import type { EntitlementCounter } from "../src/index.ts";
import type { TenantEvent } from "../src/notifications/domain/tenant-events.ts";
import {
  insertSubscription,
  insertTenant,
  monthlyWindowAt,
  recordEntryFor,
  snapshot,
} from "./entitlement-fixtures.ts";

// Usage alerts and quota.exhausted, decided by the tenant's EntitlementCounter
// in the same synchronous step as the count, stored in its outbox (the
// once-per-window memory) and sent to the tenant-events queue from there.

const counterFor = (tenantId: string) => entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);
const stubFor = (tenantId: string) =>
  env.ENTITLEMENT_COUNTER.get(env.ENTITLEMENT_COUNTER.idFromName(tenantId));

interface OutboxRow {
  id: string;
  type: string;
  event: TenantEvent;
  sent: boolean;
  attempts: number;
}

async function outbox(tenantId: string): Promise<OutboxRow[]> {
  return runInDurableObject(stubFor(tenantId), (_instance, state) =>
    state.storage.sql
      .exec<{ id: string; type: string; body: string; sent_at: number | null; attempts: number }>(
        "SELECT id, type, body, sent_at, attempts FROM tenant_event_outbox ORDER BY created_at, id",
      )
      .toArray()
      .map((row) => ({
        id: row.id,
        type: row.type,
        event: JSON.parse(row.body) as TenantEvent,
        sent: row.sent_at !== null,
        attempts: row.attempts,
      })),
  );
}

/** Waits until every stored event has been taken by the queue. */
async function sentOutbox(tenantId: string) {
  return vi.waitFor(
    async () => {
      const rows = await outbox(tenantId);
      if (rows.some((row) => !row.sent)) throw new Error("events not sent yet");
      return rows;
    },
    { timeout: 5000, interval: 50 },
  );
}

async function addAlert(
  tenantId: string,
  featureLookupKey: string,
  type: "units" | "percent",
  value: number,
) {
  const id = crypto.randomUUID();
  await env.DB.prepare(
    "INSERT INTO usage_alerts (id, tenant_id, feature_lookup_key, threshold_type, threshold_value) VALUES (?, ?, ?, ?, ?)",
  )
    .bind(id, tenantId, featureLookupKey, type, value)
    .run();
  await stubFor(tenantId).refreshUsageAlerts();
  return id;
}

/** Replaces the object's queue binding for this test (the real object and path otherwise). */
async function useQueue(tenantId: string, queue: Queue<TenantEvent>) {
  await runInDurableObject(stubFor(tenantId), (instance: EntitlementCounter) => {
    const target = instance as unknown as { env: Env };
    const real = target.env;
    target.env = new Proxy(real, {
      get: (object, property) =>
        property === "TENANT_EVENTS_QUEUE" ? queue : Reflect.get(object, property),
    });
  });
}

/** A queue that forwards to the real one and remembers what it took, or refuses while `down`. */
function recordingQueue() {
  const state = { down: false, sent: [] as TenantEvent[], refused: 0 };
  const queue = {
    send: () => Promise.reject(new Error("not used")),
    sendBatch: async (messages: Iterable<MessageSendRequest<TenantEvent>>) => {
      if (state.down) {
        state.refused++;
        throw new Error("queue unavailable");
      }
      const batch = [...messages];
      await env.TENANT_EVENTS_QUEUE.sendBatch(batch);
      state.sent.push(...batch.map((message) => message.body));
    },
  } as unknown as Queue<TenantEvent>;
  return { queue, state };
}

describe("EntitlementCounter: usage.threshold_reached", () => {
  it("fires each alert once when usage reaches it, with the threshold, the total and the window", async () => {
    const tenantId = await insertTenant();
    const fixture = await insertSubscription({
      tenantId,
      snapshots: [snapshot.hard("projects", 10)],
      startedAt: new Date("2026-01-31T10:00:00.000Z"),
    });
    const percent = await addAlert(tenantId, "projects", "percent", 75);
    const units = await addAlert(tenantId, "projects", "units", 9);
    const counter = counterFor(tenantId);
    const feb = Date.parse("2026-02-10T00:00:00.000Z");
    const { queue, state } = recordingQueue();
    await useQueue(tenantId, queue);

    await counter.consume("projects", 7, feb);
    expect(await outbox(tenantId)).toEqual([]);
    // 75% of 10 is 7.5: reached at 8.
    await counter.consume("projects", 1, feb);
    await counter.consume("projects", 1, feb);
    await counter.consume("projects", 1, feb);
    const rows = await sentOutbox(tenantId);
    expect(rows.map((row) => row.id)).toEqual([
      `evt_threshold_${percent}_2026-01-31T10:00:00.000Z`,
      `evt_threshold_${units}_2026-01-31T10:00:00.000Z`,
    ]);
    expect(rows[0]?.event).toMatchObject({
      type: "usage.threshold_reached",
      tenantId,
      data: {
        featureKey: "projects",
        alertId: percent,
        threshold: { type: "percent", value: 75 },
        thresholdUnits: 8,
        used: 8,
        limit: 10,
        windowStart: "2026-01-31T10:00:00.000Z",
        windowEnd: "2026-02-28T10:00:00.000Z",
      },
    });
    expect(rows[1]?.event.data).toMatchObject({ thresholdUnits: 9, used: 9 });
    // What the queue took is exactly the stored events, each once.
    expect(state.sent).toEqual(rows.map((row) => row.event));
    expect(fixture.subscriptionId).toBeTruthy();
  });

  it("fires exactly once when 20 parallel consumes cross the threshold", async () => {
    const tenantId = await insertTenant();
    await insertSubscription({ tenantId, snapshots: [snapshot.metered("api_calls", 100)] });
    await addAlert(tenantId, "api_calls", "percent", 80);
    const counter = counterFor(tenantId);
    await counter.consume("api_calls", 70);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => counter.consume("api_calls", 1)),
    );
    expect(results.every((result) => result.status === "consumed")).toBe(true);
    const rows = await sentOutbox(tenantId);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.event.data).toMatchObject({ thresholdUnits: 80, used: 80, included: 100 });
    // A retried consume with the same request id counts nothing and emits nothing.
    await counter.consume("api_calls", 50, undefined, "retry-1");
    await counter.consume("api_calls", 50, undefined, "retry-1");
    expect(await outbox(tenantId)).toHaveLength(1);
  });

  it("fires for usage that arrives through the pipeline (record), once, and not for a redelivery", async () => {
    const tenantId = await insertTenant();
    const fixture = await insertSubscription({
      tenantId,
      snapshots: [snapshot.soft("seats", 10)],
    });
    const alertId = await addAlert(tenantId, "seats", "percent", 80);
    const counter = counterFor(tenantId);
    const now = new Date();
    const { periodKey } = monthlyWindowAt(fixture, now);
    const entry = recordEntryFor(fixture, "seats", now);
    await counter.record([entry(crypto.randomUUID(), 5)]);
    expect(await outbox(tenantId)).toEqual([]);
    const crossing = entry(crypto.randomUUID(), 4);
    await counter.record([crossing, entry(crypto.randomUUID(), 1)]);
    await counter.record([crossing]);
    await counter.record([entry(crypto.randomUUID(), 3)]);
    const rows = await sentOutbox(tenantId);
    expect(rows.map((row) => row.id)).toEqual([`evt_threshold_${alertId}_${periodKey}`]);
    expect(rows[0]?.event.data).toMatchObject({ thresholdUnits: 8, used: 10, limit: 10 });
  });

  it("fires again in the next reset window", async () => {
    const tenantId = await insertTenant();
    await insertSubscription({
      tenantId,
      snapshots: [snapshot.hard("projects", 4)],
      startedAt: new Date("2026-01-31T10:00:00.000Z"),
    });
    await addAlert(tenantId, "projects", "units", 2);
    const counter = counterFor(tenantId);
    await counter.consume("projects", 3, Date.parse("2026-02-10T00:00:00.000Z"));
    await counter.consume("projects", 1, Date.parse("2026-02-11T00:00:00.000Z"));
    await counter.consume("projects", 2, Date.parse("2026-03-05T00:00:00.000Z"));
    const rows = await sentOutbox(tenantId);
    expect(rows.map((row) => [row.event.data.windowStart, row.event.data.used])).toEqual([
      ["2026-01-31T10:00:00.000Z", 3],
      ["2026-02-28T10:00:00.000Z", 2],
    ]);
  });

  it("sees an alert created or deleted after the object cached the set", async () => {
    const tenantId = await insertTenant();
    await insertSubscription({ tenantId, snapshots: [snapshot.hard("projects", 100)] });
    const counter = counterFor(tenantId);
    await counter.consume("projects", 1);
    const alertId = await addAlert(tenantId, "projects", "units", 2);
    await counter.consume("projects", 1);
    expect((await sentOutbox(tenantId)).map((row) => row.event.data.alertId)).toEqual([alertId]);
  });
});

describe("EntitlementCounter: quota.exhausted", () => {
  it("is emitted the first time in a window that a HARD limit refuses a consume, and only then", async () => {
    const tenantId = await insertTenant();
    await insertSubscription({
      tenantId,
      snapshots: [snapshot.hard("projects", 5), snapshot.soft("seats", 1)],
      startedAt: new Date("2026-01-31T10:00:00.000Z"),
    });
    const counter = counterFor(tenantId);
    const feb = Date.parse("2026-02-10T00:00:00.000Z");
    await counter.consume("projects", 5, feb);
    // A SOFT limit never refuses: no event.
    await counter.consume("seats", 3, feb);
    const refusals = await Promise.all(
      Array.from({ length: 10 }, () => counter.consume("projects", 2, feb)),
    );
    expect(refusals.every((result) => result.status === "quota_exceeded")).toBe(true);
    const rows = await sentOutbox(tenantId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      id: `evt_quota_${tenantId}_projects_2026-01-31T10:00:00.000Z`,
      type: "quota.exhausted",
    });
    expect(rows[0]?.event.data).toEqual({
      featureKey: "projects",
      limit: 5,
      used: 5,
      requested: 2,
      windowStart: "2026-01-31T10:00:00.000Z",
      windowEnd: "2026-02-28T10:00:00.000Z",
    });
    // The next window's first refusal is a new event.
    const march = Date.parse("2026-03-05T00:00:00.000Z");
    await counter.consume("projects", 5, march);
    await counter.consume("projects", 1, march);
    expect((await sentOutbox(tenantId)).map((row) => row.type)).toEqual([
      "quota.exhausted",
      "quota.exhausted",
    ]);
  });
});

describe("EntitlementCounter: tenant events the queue refused", () => {
  it("keeps them and sends them from its alarm once the queue is back, each once", async () => {
    const tenantId = await insertTenant();
    await insertSubscription({ tenantId, snapshots: [snapshot.hard("projects", 3)] });
    await addAlert(tenantId, "projects", "units", 2);
    const counter = counterFor(tenantId);
    const { queue, state } = recordingQueue();
    state.down = true;
    await useQueue(tenantId, queue);

    await counter.consume("projects", 3);
    await counter.consume("projects", 1);
    const stuck = await vi.waitFor(
      async () => {
        const rows = await outbox(tenantId);
        if (rows.length < 2 || rows.some((row) => row.attempts === 0)) {
          throw new Error("no failed attempt yet");
        }
        return rows;
      },
      { timeout: 5000, interval: 50 },
    );
    expect(stuck.map((row) => [row.type, row.sent])).toEqual([
      ["usage.threshold_reached", false],
      ["quota.exhausted", false],
    ]);
    expect(state.refused).toBeGreaterThan(0);
    expect(state.sent).toEqual([]);

    state.down = false;
    await runDurableObjectAlarm(stubFor(tenantId));
    const rows = await sentOutbox(tenantId);
    expect(rows.every((row) => row.sent)).toBe(true);
    expect(state.sent.map((event) => event.id)).toEqual(rows.map((row) => row.id));
    // Nothing more to send: another alarm sends nothing again.
    await runDurableObjectAlarm(stubFor(tenantId));
    expect(state.sent).toHaveLength(2);
  });
});
