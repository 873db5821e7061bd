import { ApiError } from "@edge-platform/shared/http/api-error";
import { shardOfEventId, withShard } from "@edge-platform/shared/usage-log/client";
import { timeOrderedUuid } from "../../platform/index.ts";
import type { IncomingUsageEvent } from "../domain/usage-events.ts";
import { decodeUsageEventsParquet } from "./parquet.ts";
import { tenantShards, usageLogOfId, usageLogStub } from "./shards.ts";
import type { StoredEvent } from "./stored-events.ts";
import type { UsageLog } from "./usage-log.ts";

/*
 * The billing worker's way into the usage log: ingestion, one event's
 * lookup and the listing (usage/routes.ts calls these), spread over the
 * tenant's shards and, past the hot log, the Parquet files in R2.
 */

type LogEnv = Pick<
  Env,
  "DB" | "USAGE_LOG" | "USAGE_ARCHIVE" | "USAGE_LOG_SHARDS" | "USAGE_LOG_TENANT_SHARDS"
>;

export const USAGE_EVENT_NOT_FOUND = "Usage event not found";
export const MAX_LIST_LIMIT = 1000;

/** Set once this isolate has seen that the D1 log of earlier releases is gone. */
let d1LogGone = false;

/**
 * The eventIds among these that the D1 log of earlier releases still
 * holds for the tenant (not moved into the usage log yet: see
 * usage/log/d1-drain.ts); none once its table is dropped.
 */
async function heldInD1Log(
  d1: D1Database,
  tenantId: string,
  eventIds: string[],
): Promise<Set<string>> {
  if (d1LogGone || eventIds.length === 0) return new Set();
  try {
    const { results } = await d1
      .prepare(
        "SELECT event_id AS eventId FROM usage_events WHERE tenant_id = ?1 AND event_id IN (SELECT value FROM json_each(?2))",
      )
      .bind(tenantId, JSON.stringify(eventIds))
      .all<{ eventId: string }>();
    return new Set(results.map((row) => row.eventId));
  } catch (error) {
    if (!String(error).includes("no such table")) throw error;
    d1LogGone = true;
    return new Set();
  }
}

/**
 * Stores a batch's events in their shards (one call per shard, in
 * parallel); returns the eventIds stored now. Those not stored were held
 * already (duplicates). While the D1 log of an earlier release still
 * exists, its rows count as held too (one D1 read per batch until the
 * table is dropped).
 */
export async function storeUsageEvents(
  env: LogEnv,
  tenantId: string,
  events: IncomingUsageEvent[],
): Promise<Set<string>> {
  const config = tenantShards(env, tenantId);
  const inD1 = await heldInD1Log(
    env.DB,
    tenantId,
    events.map((event) => event.eventId),
  );
  let candidates = inD1.size > 0 ? events.filter((event) => !inD1.has(event.eventId)) : events;
  if (config.previous !== undefined) {
    // After a change of the count, the old shard of each id may hold it.
    const previous = config.previous;
    const held = new Set<string>();
    await Promise.all(
      [...groupBy(candidates, (event) => shardOfEventId(event.eventId, previous))].map(
        async ([shard, group]) => {
          const seen = await usageLogStub(env.USAGE_LOG, tenantId, shard).seen(
            group.map((event) => event.eventId),
          );
          for (const id of seen) held.add(id);
        },
      ),
    );
    candidates = candidates.filter((event) => !held.has(event.eventId));
  }
  const nowMs = Date.now();
  const receivedAt = new Date(nowMs).toISOString();
  const stored = new Set<string>();
  await Promise.all(
    [...groupBy(candidates, (event) => shardOfEventId(event.eventId, config.shards))].map(
      async ([shard, group]) => {
        const ids = await usageLogStub(env.USAGE_LOG, tenantId, shard).ingest({
          tenantId,
          shard,
          receivedAt,
          events: group.map((event) => ({
            id: withShard(timeOrderedUuid(nowMs), shard),
            eventId: event.eventId,
            feature: event.feature,
            amount: event.amount,
            timestamp: event.timestamp,
            metadata: event.metadata,
          })),
        });
        for (const id of ids) stored.add(id);
      },
    ),
  );
  return stored;
}

/** The public view of an event: the same body from the hot log and from R2. */
export function usageEventBody(event: StoredEvent) {
  return {
    id: event.id,
    eventId: event.eventId,
    feature: event.feature,
    amount: event.amount,
    timestamp: event.timestamp,
    receivedAt: event.receivedAt,
    status: event.status,
    reason: event.reason,
    message: event.message,
    subscriptionId: event.subscriptionId,
    periodKey: event.periodKey,
    validatedAt: event.validatedAt,
    aggregatedAt: event.aggregatedAt,
    metadata: event.metadata,
  };
}

async function readFile(env: LogEnv, key: string): Promise<StoredEvent[]> {
  const object = await env.USAGE_ARCHIVE.get(key);
  if (!object) {
    throw new ApiError(
      503,
      `The usage archive file ${key} cannot be read right now, try again shortly`,
    );
  }
  return (await decodeUsageEventsParquet(await object.arrayBuffer())) as StoredEvent[];
}

/**
 * One event by the client's eventId, from its shard's hot log or its
 * archive file. The shard names the files that may hold it: one indexed by
 * the full eventId must; one found by the eventId's hash may not (another
 * id with the same hash), and the next is tried.
 */
export async function findUsageEvent(env: LogEnv, tenantId: string, eventId: string) {
  const config = tenantShards(env, tenantId);
  const shards = [shardOfEventId(eventId, config.shards)];
  if (config.previous !== undefined) shards.push(shardOfEventId(eventId, config.previous));
  for (const shard of shards) {
    // Over RPC the metadata record loses its type; the object returns exactly this.
    const found = (await usageLogStub(env.USAGE_LOG, tenantId, shard).find(
      eventId,
    )) as unknown as ReturnType<UsageLog["find"]>;
    if (!found) continue;
    if (found.kind === "hot") return usageEventBody(found.event);
    for (const file of found.files) {
      const event = (await readFile(env, file.key)).find((row) => row.eventId === eventId);
      if (event && event.tenantId === tenantId) return usageEventBody(event);
      if (file.exact) {
        throw new ApiError(
          503,
          `The usage archive file ${file.key} does not hold event ${eventId} as indexed`,
        );
      }
    }
  }
  throw new ApiError(404, USAGE_EVENT_NOT_FOUND);
}

export interface UsageListQuery {
  from?: string;
  to?: string;
  feature?: string;
  status?: string;
  limit: number;
  cursor?: string;
}

const EARLIEST = "0000-01-01T00:00:00.000Z";
const LATEST = "9999-12-31T23:59:59.999Z";
const CURSOR_PREFIX = "v1:";

export function encodeCursor(lastId: string): string {
  return btoa(`${CURSOR_PREFIX}${lastId}`).replace(/=+$/, "");
}

export function decodeCursor(cursor: string): string {
  let text: string;
  try {
    text = atob(cursor);
  } catch {
    throw new ApiError(400, "cursor is not a cursor this API returned");
  }
  const id = text.slice(CURSOR_PREFIX.length);
  if (!text.startsWith(CURSOR_PREFIX) || !/^[0-9a-f-]{36}$/.test(id)) {
    throw new ApiError(400, "cursor is not a cursor this API returned");
  }
  return id;
}

/**
 * The tenant's events in the order they were received (our ids are
 * time-ordered), received in [from, to), across every shard's hot log and
 * archive files, `limit` at a time; the cursor is the last id returned.
 */
export async function listUsageEvents(env: LogEnv, tenantId: string, query: UsageListQuery) {
  const limit = Math.min(MAX_LIST_LIMIT, Math.max(1, query.limit));
  const filter = {
    from: query.from ? new Date(query.from).toISOString() : EARLIEST,
    to: query.to ? new Date(query.to).toISOString() : LATEST,
    afterId: query.cursor ? decodeCursor(query.cursor) : "",
    ...(query.feature ? { feature: query.feature } : {}),
    ...(query.status ? { status: query.status } : {}),
  };
  const config = tenantShards(env, tenantId);
  const shardCount = Math.max(config.shards, config.previous ?? 0);
  const perShard = await Promise.all(
    Array.from({ length: shardCount }, async (_, shard) => {
      const stub = usageLogStub(env.USAGE_LOG, tenantId, shard);
      const [hot, files] = await Promise.all([
        stub.hotEvents(filter, limit + 1) as unknown as Promise<StoredEvent[]>,
        stub.files(filter),
      ]);
      const events: StoredEvent[] = [...hot];
      // Files in id order: stop reading once enough events precede the next file.
      for (const file of files) {
        const earlier = events.filter((event) => event.id < file.first_id).length;
        if (earlier > limit) break;
        for (const event of await readFile(env, file.key)) {
          if (
            event.id > filter.afterId &&
            event.receivedAt >= filter.from &&
            event.receivedAt < filter.to &&
            (!filter.feature || event.feature === filter.feature) &&
            (!filter.status || event.status === filter.status)
          ) {
            events.push(event);
          }
        }
      }
      return events;
    }),
  );
  const merged = perShard.flat().sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const page = merged.slice(0, limit);
  const last = page.at(-1);
  return {
    data: page.map(usageEventBody),
    meta: { nextCursor: merged.length > limit && last ? encodeCursor(last.id) : null },
  };
}

function groupBy<T>(items: T[], keyOf: (item: T) => number): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key) ?? [];
    group.push(item);
    groups.set(key, group);
  }
  return groups;
}

/**
 * An administrator's retry of a dead-lettered event: REJECTED -> PENDING
 * with an outbox entry due after `sendAfterMs`. Undefined when the log no
 * longer holds the event (archived or past retention).
 */
export async function reopenUsageEvent(
  env: Pick<Env, "USAGE_LOG">,
  tenantId: string,
  id: string,
  sendAfterMs: number,
) {
  const log = usageLogOfId(env.USAGE_LOG, tenantId, id);
  if (!(await log.reopen(id, sendAfterMs))) return undefined;
  return (await log.rows([id]))[0];
}

/** The caller sent the event to usage-raw itself: its outbox entry goes. */
export async function markUsageEventSent(
  env: Pick<Env, "USAGE_LOG">,
  tenantId: string,
  id: string,
): Promise<void> {
  await usageLogOfId(env.USAGE_LOG, tenantId, id).markSent([id]);
}
