import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { usageLogName } from "@edge-platform/shared/usage-log/client";
import { expect } from "vitest";
import type { EventIdHash } from "../src/usage/log/event-id-hash.ts";
import type { IndexSizes } from "../src/usage/log/id-index.ts";
import { storeUsageEvents } from "../src/usage/log/service.ts";
import { UsageLogStore } from "../src/usage/log/storage.ts";
import type { UsageLog } from "../src/usage/log/usage-log.ts";
import { createApiKey } from "./catalog-helpers.ts";
import { insertSubscription, snapshot } from "./entitlement-fixtures.ts";
import { register } from "./helpers.ts";

export const EVENTS = "/api/v1/usage/events";
export const HOUR = 3_600_000;

/** A tenant shard's UsageLog object. */
export function usageLogObject(tenantId: string, shard = 0): DurableObjectStub<UsageLog> {
  return env.USAGE_LOG.get(env.USAGE_LOG.idFromName(usageLogName(tenantId, shard)));
}

export interface LoggedEvent {
  id: string;
  eventId: string;
  status: string;
  amount: number;
  /** Whether the event still waits in the outbox (not sent to usage-raw yet). */
  unsent: boolean;
}

/** The hot events of a tenant shard, by eventId. */
export async function loggedEvents(tenantId: string, shard = 0): Promise<LoggedEvent[]> {
  return runInDurableObject(usageLogObject(tenantId, shard), (_instance: UsageLog, state) =>
    state.storage.sql
      .exec<{ id: string; eventId: string; status: string; amount: number; unsent: number }>(
        `SELECT e.id, e.event_id AS eventId, e.status, e.amount, o.id IS NOT NULL AS unsent
           FROM events e LEFT JOIN outbox o ON o.id = e.id ORDER BY e.event_id`,
      )
      .toArray()
      .map((row) => ({ ...row, unsent: row.unsent === 1 })),
  );
}

/** Runs SQL in a tenant shard's storage (tests that set up or inspect a state). */
export async function inUsageLog<T>(
  tenantId: string,
  shard: number,
  run: (sql: SqlStorage, instance: UsageLog) => T | Promise<T>,
): Promise<T> {
  return runInDurableObject(usageLogObject(tenantId, shard), (instance: UsageLog, state) =>
    run(state.storage.sql, instance),
  );
}

export const incoming = (
  overrides: Partial<{
    eventId: string;
    feature: string;
    amount: number;
    properties: Record<string, string | number>;
    timestamp: string;
  }> = {},
) => ({
  eventId: crypto.randomUUID(),
  feature: "api_calls",
  amount: 1,
  timestamp: new Date().toISOString(),
  metadata: { source: "test" },
  ...overrides,
});

/** The env with a shard count for one tenant (USAGE_LOG_TENANT_SHARDS). */
export function withShards(
  tenantId: string,
  config: number | { shards: number; previous: number },
) {
  return { ...env, USAGE_LOG_TENANT_SHARDS: JSON.stringify({ [tenantId]: config }) };
}

/**
 * Finishes every hot event of a shard as the pipeline would: the counter's
 * flush claims them (in the window it counted them in) and marks them
 * AGGREGATED once the units are in D1.
 */
export async function aggregateAll(tenantId: string, shard: number) {
  const log = usageLogObject(tenantId, shard);
  const ids = await inUsageLog(tenantId, shard, (sql) =>
    sql
      .exec<{ id: string; feature: string }>(
        "SELECT id, feature FROM events WHERE status = 'PENDING'",
      )
      .toArray(),
  );
  if (ids.length === 0) return;
  const flushId = crypto.randomUUID();
  const subscriptionId = crypto.randomUUID();
  const claims = ids.map((row) => ({
    id: row.id,
    subscriptionId,
    featureLookupKey: row.feature,
    periodKey: "2026-11",
    periodStart: "2026-11-01T00:00:00.000Z",
    periodEnd: "2026-12-01T00:00:00.000Z",
  }));
  const outcome = await log.claim(flushId, claims);
  expect(outcome.claimed).toHaveLength(ids.length);
  await log.finishClaim(
    flushId,
    ids.map((row) => row.id),
    new Date().toISOString(),
  );
}

/** Moves a shard's hot events back in time (received `hoursAgo` earlier), as if stored then. */
export async function age(tenantId: string, shard: number, hoursAgo: number) {
  await inUsageLog(tenantId, shard, (sql) => {
    const shift = hoursAgo * HOUR;
    for (const row of sql
      .exec<{ id: string; received_at: string }>("SELECT id, received_at FROM events")
      .toArray()) {
      sql.exec(
        "UPDATE events SET received_at = ? WHERE id = ?",
        new Date(Date.parse(row.received_at) - shift).toISOString(),
        row.id,
      );
    }
  });
}

/** When the tests archive: a moment past the settle time of everything finished now. */
export const ARCHIVE_AT = () => Date.now() + 120_000;

/** Archives whatever a shard may archive, as its alarm would. */
export function archive(tenantId: string, shard: number, crashAfter?: "intent" | "put") {
  return runInDurableObject(usageLogObject(tenantId, shard), (instance: UsageLog) =>
    instance.archiveDue({ nowMs: ARCHIVE_AT(), ...(crashAfter ? { crashAfter } : {}) }),
  );
}

/** A tenant with a subscription counting api_calls and storage, and its API key. */
export async function customer() {
  const owner = await register();
  await insertSubscription({
    tenantId: owner.tenant.id,
    snapshots: [snapshot.metered("api_calls", 100), snapshot.metered("storage", 100)],
  });
  return { owner, key: await createApiKey(owner), tenantId: owner.tenant.id };
}

/** The day tables of a shard's archived-id index (`event_ids_<yyyymmdd>`), oldest first. */
export async function dayTables(tenantId: string, shard = 0) {
  return inUsageLog(tenantId, shard, (sql) =>
    sql
      .exec<{ name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'event_ids_[0-9]*' ORDER BY name",
      )
      .toArray()
      .map((row) => row.name),
  );
}

/** Gives a shard's object a store with another eventId hash or segment size (as a new instance would read its tables). */
export async function useStore(tenantId: string, hash?: EventIdHash, sizes?: IndexSizes) {
  await inUsageLog(tenantId, 0, (sql, instance) => {
    (instance as unknown as { store: UsageLogStore }).store = new UsageLogStore(sql, hash, sizes);
  });
}

/** Stores, finishes and archives a batch as received `hoursAgo` hours ago. */
export async function storeAndArchive(
  tenantId: string,
  events: ReturnType<typeof incoming>[],
  hoursAgo: number,
) {
  expect((await storeUsageEvents(env, tenantId, events)).size).toBe(events.length);
  await aggregateAll(tenantId, 0);
  await age(tenantId, 0, hoursAgo);
  expect(await archive(tenantId, 0)).toMatchObject({ events: events.length });
}

export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * Finishes every event of a shard, as `aggregateAll`, and waits for those
 * the pipeline is finishing meanwhile (validated ones the counter counts).
 */
export async function finishAll(tenantId: string, shard: number) {
  for (let round = 0; round < 100; round++) {
    await aggregateAll(tenantId, shard);
    const unfinished = await inUsageLog(
      tenantId,
      shard,
      (sql) =>
        sql
          .exec<{ n: number }>(
            "SELECT count(*) AS n FROM events WHERE status IN ('PENDING', 'VALIDATED')",
          )
          .one().n,
    );
    if (unfinished === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("the shard's events did not finish");
}
