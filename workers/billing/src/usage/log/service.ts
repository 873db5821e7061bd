import type { UsageEventStatus } from "@edge-platform/shared/db/schema/usage-events";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { shardOfEventId, withShard } from "@edge-platform/shared/usage-log/client";
import { timeOrderedUuid } from "../../platform/index.ts";
import {
  byPosition,
  fileStart,
  type ListFilter,
  type ListPosition,
  lowestTime,
  matchesListFilter,
  movesPast,
  pageStart,
  resumeBefore,
} from "./listing.ts";
import { decodeUsageEventsParquet, queryUsageEventsParquet } from "./parquet.ts";
import { tenantShards, usageLogOfId, usageLogStub } from "./shards.ts";
import type { FileRecord, NewEvent, StoredEvent } from "./stored-events.ts";
import type { UsageLog } from "./usage-log.ts";

/*
 * The billing worker's way into the usage log: ingestion, one event's
 * lookup and the listing (usage/routes.ts calls these), spread over the
 * tenant's shards and, past the hot log, the Parquet files in R2.
 */

type LogEnv = Pick<
  Env,
  | "DB"
  | "USAGE_LOG"
  | "USAGE_ARCHIVE"
  | "USAGE_LOG_SHARDS"
  | "USAGE_LOG_TENANT_SHARDS"
  | "USAGE_LIST_MAX_FILES"
>;

export const USAGE_EVENT_NOT_FOUND = "Usage event not found";
export const MAX_LIST_LIMIT = 1000;
/** Archive files one listing request reads at most, unless USAGE_LIST_MAX_FILES says otherwise. */
export const DEFAULT_LIST_MAX_FILES = 20;

export function listMaxFiles(env: Pick<Env, "USAGE_LIST_MAX_FILES">): number {
  const configured = Number(env.USAGE_LIST_MAX_FILES);
  return Number.isFinite(configured) && configured >= 1
    ? Math.min(1_000, Math.floor(configured))
    : DEFAULT_LIST_MAX_FILES;
}

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
  events: Omit<NewEvent, "id">[],
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
            properties: event.properties ?? {},
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
    properties: event.properties,
  };
}

async function readFileBuffer(env: LogEnv, key: string): Promise<ArrayBuffer> {
  const object = await env.USAGE_ARCHIVE.get(key);
  if (!object) {
    throw new ApiError(
      503,
      `The usage archive file ${key} cannot be read right now, try again shortly`,
    );
  }
  return object.arrayBuffer();
}

async function readFile(env: LogEnv, key: string): Promise<StoredEvent[]> {
  return (await decodeUsageEventsParquet(await readFileBuffer(env, key))) as StoredEvent[];
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
  /** Event time (the client's `timestamp`), inclusive. */
  from?: string;
  /** Event time, exclusive. */
  to?: string;
  /** Time of receipt, inclusive. */
  receivedFrom?: string;
  /** Time of receipt, exclusive. */
  receivedTo?: string;
  feature?: string;
  status?: string;
  limit: number;
  cursor?: string;
}

const EARLIEST = "0000-01-01T00:00:00.000Z";
const LATEST = "9999-12-31T23:59:59.999Z";
const CURSOR_PREFIX = "v2:";
const NOT_A_CURSOR = "cursor is not a cursor this API returned";

/** A page's position as an opaque, URL-safe cursor (base64url of "v2:<timestamp>|<id>"). */
export function encodeCursor(position: ListPosition): string {
  return btoa(`${CURSOR_PREFIX}${position.timestamp}|${position.id}`)
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

export function decodeCursor(cursor: string): ListPosition {
  let text: string;
  try {
    text = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    throw new ApiError(400, NOT_A_CURSOR);
  }
  if (text.startsWith("v1:")) {
    // Cursors of the receipt-order listing name no position in event time.
    throw new ApiError(
      400,
      "cursor comes from the listing in order of receipt, which is gone: list again without it",
    );
  }
  const [timestamp = "", id = "", ...rest] = text.slice(CURSOR_PREFIX.length).split("|");
  if (
    !text.startsWith(CURSOR_PREFIX) ||
    rest.length > 0 ||
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(timestamp) ||
    !/^[0-9a-f-]{36}$/.test(id)
  ) {
    throw new ApiError(400, NOT_A_CURSOR);
  }
  return { timestamp, id };
}

const instant = (value: string | undefined, otherwise: string) =>
  value ? new Date(value).toISOString() : otherwise;

function listFilter(query: UsageListQuery): ListFilter {
  return {
    from: instant(query.from, EARLIEST),
    to: instant(query.to, LATEST),
    receivedFrom: instant(query.receivedFrom, EARLIEST),
    receivedTo: instant(query.receivedTo, LATEST),
    after: query.cursor ? decodeCursor(query.cursor) : null,
    ...(query.feature ? { feature: query.feature } : {}),
    ...(query.status ? { status: query.status } : {}),
  };
}

/**
 * The events of one archive file that belong on the page. A file whose
 * range of event times is known is decoded for the page's times only; one
 * finished before the range was kept is decoded whole, and its range
 * recorded so that later pages can skip it.
 */
async function fileEventsFor(
  env: LogEnv,
  log: ReturnType<typeof usageLogStub>,
  file: FileRecord,
  filter: ListFilter,
): Promise<StoredEvent[]> {
  const buffer = await readFileBuffer(env, file.key);
  let events: StoredEvent[];
  if (file.first_timestamp !== null) {
    // Row groups wholly outside the page's times are skipped by their statistics.
    events = (await queryUsageEventsParquet(buffer, {
      from: lowestTime(filter),
      to: filter.to,
      ...(filter.feature ? { feature: filter.feature } : {}),
      ...(filter.status ? { status: filter.status as UsageEventStatus } : {}),
    })) as StoredEvent[];
  } else {
    events = (await decodeUsageEventsParquet(buffer)) as StoredEvent[];
    const times = events.map((event) => event.timestamp).sort();
    const [first, last] = [times[0], times.at(-1)];
    if (first !== undefined && last !== undefined) {
      await log.noteFileTimes(file.id, { first, last });
    }
  }
  return events.filter((event) => matchesListFilter(event, filter));
}

/**
 * One shard's part of a page: its first `wanted` events in the listing's
 * order, and, when it stopped reading files for the budget, the position
 * (`stop`) from which its unread files may hold events. Only events before
 * `stop` are known to be all there.
 */
interface ShardPage {
  events: StoredEvent[];
  stop: ListPosition | null;
}

/** For each file of the list, the lowest position any of it and of the files after it can hold. */
function lowestFrom(files: FileRecord[]): ListPosition[] {
  const lowest: ListPosition[] = [];
  for (let i = files.length - 1; i >= 0; i--) {
    const start = fileStart(files[i] as FileRecord);
    const next = lowest[i + 1];
    lowest[i] = next && byPosition(next, start) < 0 ? next : start;
  }
  return lowest;
}

/**
 * One shard's first `wanted` events of the page, in the listing's order:
 * its hot events, then its archive files by their earliest event time,
 * until the next file starts after `wanted` events already found (no
 * event of it or of a later file could be among them), or `allowance`
 * files were read. Past the allowance it reads on only while stopping
 * would not move the listing past the page's start (files whose event
 * times span the start must all be read before any event after it is
 * known); a file of unknown times counts against the allowance, as
 * reading it records its times. What is kept never exceeds `wanted` plus
 * one file.
 */
async function shardPage(
  env: LogEnv,
  tenantId: string,
  shard: number,
  page: { filter: ListFilter; wanted: number; allowance: number },
): Promise<ShardPage> {
  const { filter, wanted } = page;
  const log = usageLogStub(env.USAGE_LOG, tenantId, shard);
  // Over RPC the metadata record loses its type; the object returns exactly this.
  const { hot, files } = (await log.listPage(filter, wanted)) as unknown as ReturnType<
    UsageLog["listPage"]
  >;
  const start = pageStart(filter);
  const lowest = lowestFrom(files);
  let events = [...hot].sort(byPosition);
  for (const [i, file] of files.entries()) {
    const last = events[wanted - 1];
    if (last && file.first_timestamp !== null && last.timestamp < file.first_timestamp) break;
    const stop = lowest[i] as ListPosition;
    if (i >= page.allowance && (file.first_timestamp === null || movesPast(stop, start))) {
      return { events, stop };
    }
    const more = await fileEventsFor(env, log, file, filter);
    // An event is in one place: the hot log and the files are read at one moment.
    events = [...events, ...more].sort(byPosition).slice(0, wanted);
  }
  return { events, stop: null };
}

/**
 * The tenant's events in event-time order (`timestamp`, ties by our id),
 * across every shard's hot log and archive files, `limit` at a time. The
 * cursor is the position of the page's last event, and a page lists what
 * follows it then: nothing is listed twice or skipped, however many events
 * share a time. An event stored after a page was read whose position is
 * before that page's cursor (a late event with an older time) is not on
 * the following pages; a listing from the start shows it.
 *
 * One request reads at most USAGE_LIST_MAX_FILES archive files (shared
 * among the shards, at least one each), so that a selective filter cannot
 * make it read every file of the tenant. When a shard stopped for that
 * budget, the page holds only the events before the earliest place a
 * stopped shard's unread files may hold one (fewer than `limit`, maybe
 * none), and the cursor names the position right before that place.
 */
export async function listUsageEvents(env: LogEnv, tenantId: string, query: UsageListQuery) {
  const limit = Math.min(MAX_LIST_LIMIT, Math.max(1, query.limit));
  const filter = listFilter(query);
  const config = tenantShards(env, tenantId);
  const shardCount = Math.max(config.shards, config.previous ?? 0);
  const allowance = Math.max(1, Math.floor(listMaxFiles(env) / shardCount));
  const perShard = await Promise.all(
    Array.from({ length: shardCount }, (_, shard) =>
      shardPage(env, tenantId, shard, { filter, wanted: limit + 1, allowance }),
    ),
  );
  const stop = perShard.flatMap((part) => (part.stop ? [part.stop] : [])).sort(byPosition)[0];
  const merged = perShard
    .flatMap((part) => part.events)
    .filter((event) => !stop || byPosition(event, stop) < 0)
    .sort(byPosition);
  const page = merged.slice(0, limit);
  const last = page.at(-1);
  let next: ListPosition | null = null;
  if (merged.length > limit && last) next = last;
  else if (stop) next = resumeBefore(stop, pageStart(filter));
  return {
    data: page.map(usageEventBody),
    meta: { nextCursor: next ? encodeCursor(next) : null },
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
