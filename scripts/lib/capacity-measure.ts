/**
 * Measures the usage log's per-event storage costs with the product's own
 * statements: the tenant shard's store (workers/billing/src/usage/log/
 * storage.ts, the same class the UsageLog Durable Object runs over
 * `ctx.storage.sql`) on Node's SQLite (`node:sqlite`, the same engine a
 * SQLite-backed Durable Object uses), the archive's Parquet encoder, and the
 * counter flush's D1 batch (usage/aggregates-storage.ts) on the D1 migrations'
 * schema. Bytes come from SQLite's `dbstat` (pages of each table and index,
 * as they sit in the database file); times are this machine's CPU time of
 * the statements alone (process CPU time, so other load on the machine
 * does not inflate it; no RPC, no I/O): the lower bound of a Durable
 * Object's work per event. `npm run capacity -- --measure` prints them.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import { encodeUsageEventsParquet } from "../../workers/billing/src/usage/log/parquet.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");

type SqlValue = string | number | null | ArrayBuffer;
type SqlRow = Record<string, SqlValue>;

/** What this measurement calls of the shard's store (workers/billing/src/usage/log/storage.ts). */
export interface UsageLogStoreApi {
  insert(events: unknown[], receivedAt: string, nowMs: number, firstSendAt: number): string[];
  deleteOutbox(ids: string[]): void;
  rows(tenantId: string, ids: string[]): unknown[];
  claim(flushId: string, claims: unknown[]): unknown;
  finishClaim(flushId: string, ids: string[], at: string, nowMs: number): number;
  archivable(settledBefore: number, limit: number): { id: string; received_at: string }[];
  startFile(
    file: Record<string, SqlValue>,
    choice: { settledBefore: number; closedBefore: string; full: boolean },
    nowMs: number,
  ): number;
  fileEvents(
    tenantId: string,
    file: { id: number; first_id: string; last_id: string },
  ): Parameters<typeof encodeUsageEventsParquet>[0];
  finishFile(fileId: number, bytes: number): number;
  compactIds(nowMs: number): boolean;
}

/**
 * The worker's modules are loaded at run time: they are typed against the
 * Workers runtime (D1Database, SqlStorage), which the scripts' Node
 * typecheck does not include; the interfaces here name what is used.
 */
async function workerModules() {
  const billing = path.join(ROOT, "workers/billing/src");
  const storage = (await import(path.join(billing, "usage/log/storage.ts"))) as {
    UsageLogStore: new (sql: unknown) => UsageLogStoreApi;
    SCHEMA: string;
  };
  const aggregates = (await import(path.join(billing, "usage/aggregates-storage.ts"))) as {
    applyUsageFlush(d1: unknown, flush: unknown): Promise<boolean>;
    pruneUsageFlushes(d1: unknown, appliedBefore: string, limit: number): Promise<number>;
  };
  const ingestion = (await import(path.join(billing, "usage/domain/usage-events.ts"))) as {
    planBatch(items: unknown[]): { candidates: { event: { eventId: string } }[] };
  };
  const shards = (await import(path.join(ROOT, "shared/src/usage-log/client.ts"))) as {
    shardOfEventId(eventId: string, shards: number): number;
  };
  return { ...storage, ...aggregates, ...ingestion, ...shards };
}

/**
 * The part of SqlStorage (the Durable Object's `ctx.storage.sql`) the store
 * uses, over node:sqlite. `cacheStatements` keeps each query's prepared
 * statement, as workerd's SqlStorage does (an LRU keyed by the query
 * text): per-event statements then cost their execution, not their
 * compilation. The usage log's figures were measured without it (an
 * upper bound) and are kept comparable.
 */
export function sqlStorage(db: DatabaseSync, options: { cacheStatements?: boolean } = {}) {
  const changes = db.prepare("SELECT changes() AS n");
  const statements = new Map<string, ReturnType<DatabaseSync["prepare"]>>();
  const prepare = (text: string) => {
    if (!options.cacheStatements) return db.prepare(text);
    const cached = statements.get(text) ?? db.prepare(text);
    statements.set(text, cached);
    return cached;
  };
  return {
    exec(query: string, ...bindings: (SQLInputValue | ArrayBuffer)[]) {
      const text = query.trim().replace(/;\s*$/, "");
      if (text.includes(";")) {
        db.exec(text);
        return cursor([], 0);
      }
      // Durable Objects bind BLOBs as ArrayBuffers; node:sqlite takes views.
      const values = bindings.map((value) =>
        value instanceof ArrayBuffer ? new Uint8Array(value) : value,
      );
      const rows = prepare(text).all(...values) as SqlRow[];
      const written = /^\s*(INSERT|UPDATE|DELETE|REPLACE)/i.test(text)
        ? Number((changes.get() as { n: number }).n)
        : 0;
      return cursor(rows, written);
    },
  };
}

function cursor(rows: SqlRow[], rowsWritten: number) {
  return {
    rowsWritten,
    toArray: () => rows,
    one: () => {
      if (rows.length !== 1) throw new Error(`expected one row, got ${rows.length}`);
      return rows[0];
    },
    [Symbol.iterator]: () => rows[Symbol.iterator](),
  };
}

export function transaction<T>(db: DatabaseSync, work: () => T): T {
  db.exec("BEGIN");
  try {
    const result = work();
    db.exec("COMMIT");
    return result;
  } catch (error) {
    db.exec("ROLLBACK");
    throw error;
  }
}

/** This process's CPU time in ms (user and system): unlike the wall clock, unaffected by other processes on a loaded machine. */
export function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/** Bytes of each table and index, from dbstat. */
export function pageBytes(db: DatabaseSync): Map<string, number> {
  const rows = db.prepare("SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name").all() as {
    name: string;
    bytes: number;
  }[];
  return new Map(rows.map((row) => [row.name, Number(row.bytes)]));
}

export function count(db: DatabaseSync, table: string): number {
  return Number((db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n);
}

/** A time-ordered id of ours (UUID v7 shape) with the shard in its last four hex digits. */
export function ourId(ms: number, shard: number): string {
  const time = ms.toString(16).padStart(12, "0");
  const random = crypto.randomUUID().replaceAll("-", "");
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(0, 3)}-8${random.slice(3, 6)}-${random.slice(6, 14)}${shard.toString(16).padStart(4, "0")}`;
}

export interface UsageLogMeasurement {
  events: number;
  batch: number;
  fileEvents: number;
  /** A hot event's row (AGGREGATED, every column set) in `events`. */
  hotEventBytes: number;
  /** An archived eventId's row in its past day's merged table (8-byte hash and file: duplicate guard and id -> file index). */
  eventIdBytes: number;
  /** One archive file's row in `files` with its index. */
  fileRowBytes: number;
  /** The counter's remembered event id (`recorded_events`, same DDL as entitlement-counter.ts). */
  counterIdBytes: number;
  /** CPU ms per event of the counter forgetting its id (the alarm's rowid-range sweep). */
  counterForgetMsPerEvent: number;
  /** One counter flush's `usage_flushes` row in D1 with its index (two windows). */
  d1FlushRowBytes: number;
  /** CPU ms per event of the shard's statements, by step, and of the Parquet encoding. */
  shardMsPerEvent: {
    insert: number;
    publish: number;
    validationRead: number;
    claim: number;
    finish: number;
    archive: number;
    encode: number;
    total: number;
  };
  /**
   * CPU ms per event of an ingestion request in the Worker: the 1,000-event
   * body parsed, every event judged (planBatch), split by shard (8 shards)
   * and each shard's part serialised for its call.
   */
  ingestionMsPerEvent: number;
  /** CPU ms of one counter flush's D1 batch (two windows and the flush id), SQLite alone. */
  d1MsPerFlush: number;
  /** CPU ms per usage_flushes row the Cron Trigger's prune deletes, SQLite alone. */
  d1MsPerPrunedFlush: number;
  parquetBytesPerEvent: number;
}

/**
 * Runs `events` events through one shard's life cycle in batches of
 * `batch`: stored with their outbox entries (one transaction), sent
 * (outbox deleted), read by validation, claimed and finished by a counter
 * flush, and archived in files of `fileEvents` (intent, Parquet encoding,
 * index and delete). Random UUID v4 eventIds, as most clients send.
 */
export async function measureUsageLog(
  options: { events?: number; batch?: number; fileEvents?: number; d1Flushes?: number } = {},
): Promise<UsageLogMeasurement> {
  const { UsageLogStore, SCHEMA, applyUsageFlush, pruneUsageFlushes, planBatch, shardOfEventId } =
    await workerModules();
  const total = options.events ?? 50_000;
  const batch = options.batch ?? 1_000;
  const fileEvents = options.fileEvents ?? 10_000;
  const db = new DatabaseSync(":memory:");
  const store = new UsageLogStore(sqlStorage(db));
  const tenantId = crypto.randomUUID();
  const subscriptionId = crypto.randomUUID();
  const { time, timed } = stepTimer(["encode"]);
  let hotEventBytes = 0;
  let parquetBytes = 0;
  const shard: ShardRun = {
    db,
    store,
    tenantId,
    subscriptionId,
    clock: Date.parse("2026-11-20T10:00:00.000Z"),
  };
  for (let done = 0; done < total; done += batch) {
    runShardBatch(shard, batch, timed);
    if (count(db, "events") >= fileEvents) {
      // Measured before the archive takes them: a full file's worth of hot rows.
      hotEventBytes = (pageBytes(db).get("events") ?? 0) / count(db, "events");
      const rows = archiveShardFile(shard, fileEvents, timed);
      if (rows) {
        const file = timed("encode", () => encodeUsageEventsParquet(rows));
        parquetBytes += file.byteLength;
      }
    }
  }
  // The days past: their segments merged into one table each, as the alarm does after a day ends.
  const dayAfter = Date.parse("2026-11-22T00:00:00.000Z");
  while (transaction(db, () => store.compactIds(dayAfter)));
  const pages = pageBytes(db);
  const sum = (...names: string[]) =>
    names.reduce((bytes, name) => bytes + (pages.get(name) ?? 0), 0);
  // The archived-id index as a past day keeps it: its merged table and the collision rows.
  const indexTables = [...pages.keys()].filter(
    (name) => /^event_ids_\d{8}_all$/.test(name) || name === "id_collisions",
  );
  const idRows = indexTables.reduce((rows, name) => rows + count(db, name), 0);
  const per = (ms: number) => ms / total;
  const shardMsPerEvent = {
    insert: per(time.insert),
    publish: per(time.publish),
    validationRead: per(time.validationRead),
    claim: per(time.claim),
    finish: per(time.finish),
    archive: per(time.archive),
    encode: per(time.encode),
    total: per(Object.values(time).reduce((a, b) => a + b, 0)),
  };
  const counter = measureCounterIds(total);
  const ingestionMsPerEvent = measureIngestion(planBatch, shardOfEventId, total, batch);
  const d1 = await measureD1Flushes(applyUsageFlush, pruneUsageFlushes, options.d1Flushes ?? 2_000);
  return {
    events: total,
    batch,
    fileEvents,
    hotEventBytes,
    eventIdBytes: sum(...indexTables) / idRows,
    fileRowBytes: measureFileRows(SCHEMA, 2_000),
    counterIdBytes: counter.bytes,
    counterForgetMsPerEvent: counter.forgetMs,
    d1FlushRowBytes: d1.rowBytes,
    shardMsPerEvent,
    d1MsPerFlush: d1.msPerFlush,
    d1MsPerPrunedFlush: d1.msPerPrunedFlush,
    ingestionMsPerEvent,
    parquetBytesPerEvent: parquetBytes / Math.max(1, total - count(db, "events")),
  };
}

/** One shard's store and the state of a run through its life cycle. */
export interface ShardRun {
  db: DatabaseSync;
  store: UsageLogStoreApi;
  tenantId: string;
  subscriptionId: string;
  /** The run's clock (ms): each batch is received 100 ms after the one before. */
  clock: number;
}

export type ShardStep = "insert" | "publish" | "validationRead" | "claim" | "finish" | "archive";
type Timed = <T>(step: ShardStep, work: () => T) => T;

/** CPU time per step of the shard's life cycle (and the `extra` steps), and the function that adds to it. */
export function stepTimer<Extra extends string = never>(extra: Extra[] = []) {
  const steps = ["insert", "publish", "validationRead", "claim", "finish", "archive", ...extra];
  const time = Object.fromEntries(steps.map((step) => [step, 0])) as Record<
    ShardStep | Extra,
    number
  >;
  const timed = <T>(step: ShardStep | Extra, work: () => T): T => {
    const start = cpuMs();
    const result = work();
    time[step] += cpuMs() - start;
    return result;
  };
  return { time, timed };
}

/**
 * One ingestion batch of `batch` new events through the shard: stored with
 * their outbox entries (one transaction), sent (outbox deleted), read by
 * validation, claimed and finished by a counter flush. Random UUID v4
 * eventIds, as most clients send.
 */
export function runShardBatch(shard: ShardRun, batch: number, timed: Timed): void {
  const { db, store } = shard;
  shard.clock += 100;
  const clock = shard.clock;
  const receivedAt = new Date(clock).toISOString();
  const events = Array.from({ length: batch }, (_, index) => ({
    id: ourId(clock, 0),
    eventId: crypto.randomUUID(),
    feature: "api_calls",
    amount: (index % 3) + 1,
    timestamp: receivedAt,
    metadata: {},
  }));
  const ids = events.map((event) => event.id);
  timed("insert", () => transaction(db, () => store.insert(events, receivedAt, clock, clock)));
  timed("publish", () => store.deleteOutbox(ids));
  timed("validationRead", () => store.rows(shard.tenantId, ids));
  const flushId = crypto.randomUUID();
  const claims = events.map((event) => ({
    id: event.id,
    subscriptionId: shard.subscriptionId,
    featureLookupKey: event.feature,
    periodKey: "2026-11",
    periodStart: "2026-11-01T00:00:00.000Z",
    periodEnd: "2026-12-01T00:00:00.000Z",
    amount: event.amount,
  }));
  timed("claim", () => transaction(db, () => store.claim(flushId, claims)));
  timed("finish", () => store.finishClaim(flushId, ids, receivedAt, shard.clock));
}

/**
 * Archives the oldest `fileEvents` finished events as one file: its intent,
 * its rows read for the writer, then indexed and deleted. Returns the rows
 * (for the caller's encoding), or nothing when none is finished.
 */
export function archiveShardFile(shard: ShardRun, fileEvents: number, timed: Timed) {
  const { db, store, tenantId, clock } = shard;
  const rows = timed("archive", () => store.archivable(clock + 1, fileEvents));
  const first = rows[0];
  const last = rows.at(-1);
  if (!first || !last) return undefined;
  const fileId = timed("archive", () =>
    transaction(db, () =>
      store.startFile(
        {
          key: `usage/tenant=${tenantId}/date=${first.received_at.slice(0, 10)}/shard-0-${first.id}.parquet`,
          day: first.received_at.slice(0, 10),
          first_id: first.id,
          last_id: last.id,
          first_received: first.received_at,
          last_received: last.received_at,
          events: rows.length,
          bytes: null,
          created_ms: clock,
        },
        { settledBefore: clock + 1, closedBefore: "", full: true },
        clock,
      ),
    ),
  );
  const fileRows = timed("archive", () =>
    store.fileEvents(tenantId, { id: fileId, first_id: first.id, last_id: last.id }),
  );
  timed("archive", () => transaction(db, () => store.finishFile(fileId, 1)));
  return fileRows;
}

/** The Worker's part of ingestion, per event (see UsageLogMeasurement.ingestionMsPerEvent). */
function measureIngestion(
  planBatch: (items: unknown[]) => { candidates: { event: { eventId: string } }[] },
  shardOfEventId: (eventId: string, shards: number) => number,
  total: number,
  batch: number,
): number {
  const timestamp = new Date().toISOString();
  let ms = 0;
  for (let done = 0; done < total; done += batch) {
    const body = JSON.stringify({
      events: Array.from({ length: batch }, (_, index) => ({
        eventId: crypto.randomUUID(),
        feature: "api_calls",
        amount: (index % 3) + 1,
        timestamp,
        metadata: { region: "eu" },
      })),
    });
    const start = cpuMs();
    const plan = planBatch((JSON.parse(body) as { events: unknown[] }).events);
    const byShard = new Map<number, unknown[]>();
    for (const { event } of plan.candidates) {
      const shard = shardOfEventId(event.eventId, 8);
      byShard.set(shard, [...(byShard.get(shard) ?? []), event]);
    }
    for (const group of byShard.values()) JSON.stringify(group);
    ms += cpuMs() - start;
  }
  return ms / total;
}

/** Rows of `files` as the archive writes them (a shard writes too few in a run to fill pages). */
function measureFileRows(schema: string, files: number): number {
  const db = new DatabaseSync(":memory:");
  db.exec(schema);
  const tenantId = crypto.randomUUID();
  const insert = db.prepare(
    `INSERT INTO files (key, status, day, first_id, last_id, first_received, last_received, events, bytes, created_ms)
     VALUES (?, 'DONE', ?, ?, ?, ?, ?, 10000, 565000, ?)`,
  );
  const start = Date.parse("2026-11-20T10:00:00.000Z");
  transaction(db, () => {
    for (let index = 0; index < files; index++) {
      const at = start + index * 4_000;
      const first = ourId(at, 3);
      const day = new Date(at).toISOString().slice(0, 10);
      insert.run(
        `usage/tenant=${tenantId}/date=${day}/shard-3-${first}.parquet`,
        day,
        first,
        ourId(at + 3_999, 3),
        new Date(at).toISOString(),
        new Date(at + 3_999).toISOString(),
        at,
      );
    }
  });
  const pages = pageBytes(db);
  return ((pages.get("files") ?? 0) + (pages.get("sqlite_autoindex_files_1") ?? 0)) / files;
}

/** The EntitlementCounter's remembered ids: its `recorded_events` table (ids of ours, time-ordered). */
function measureCounterIds(total: number): { bytes: number; forgetMs: number } {
  const db = new DatabaseSync(":memory:");
  db.exec(`CREATE TABLE recorded_events (event_id TEXT PRIMARY KEY, recorded_at INTEGER NOT NULL);
           CREATE TABLE pending_events (usage_event_id TEXT PRIMARY KEY)`);
  const insert = db.prepare("INSERT INTO recorded_events (event_id, recorded_at) VALUES (?, ?)");
  const start = Date.parse("2026-11-20T10:00:00.000Z");
  transaction(db, () => {
    for (let index = 0; index < total; index++) insert.run(ourId(start + index, 0), start + index);
  });
  const pages = pageBytes(db);
  const bytes =
    ((pages.get("recorded_events") ?? 0) + (pages.get("sqlite_autoindex_recorded_events_1") ?? 0)) /
    total;
  // The counter's sweep (EntitlementCounter.forgetRecordedIds), in batches of 20,000 as it runs.
  const forget = db.prepare(
    `DELETE FROM recorded_events WHERE rowid IN (
       SELECT rowid FROM recorded_events
        WHERE rowid < coalesce(
                (SELECT rowid FROM recorded_events WHERE recorded_at >= ?1 ORDER BY rowid LIMIT 1),
                9223372036854775807)
          AND event_id NOT IN (SELECT usage_event_id FROM pending_events)
        ORDER BY rowid LIMIT ?2)`,
  );
  const startCpu = cpuMs();
  while (transaction(db, () => Number(forget.run(start + total, 20_000).changes)) > 0);
  return { bytes, forgetMs: (cpuMs() - startCpu) / total };
}

/** The D1 side of a counter flush (usage_aggregates increments and the usage_flushes row) on the migrations' schema. */
async function measureD1Flushes(
  applyUsageFlush: (d1: unknown, flush: unknown) => Promise<boolean>,
  pruneUsageFlushes: (d1: unknown, appliedBefore: string, limit: number) => Promise<number>,
  flushes: number,
): Promise<{ rowBytes: number; msPerFlush: number; msPerPrunedFlush: number }> {
  const { db, tenantId, subscriptionId } = migratedD1();
  const d1 = d1Database(db);
  let ms = 0;
  for (let index = 0; index < flushes; index++) {
    const start = cpuMs();
    void applyUsageFlush(d1, {
      id: crypto.randomUUID(),
      tenantId,
      deltas: ["api_calls", "storage_gb"].map((feature) => ({
        subscriptionId,
        featureLookupKey: feature,
        periodKey: "2026-11",
        periodStart: "2026-11-01T00:00:00.000Z",
        periodEnd: "2026-12-01T00:00:00.000Z",
        amount: 1234,
        lastEventAt: "2026-11-20T10:00:00.000Z",
      })),
    });
    ms += cpuMs() - start;
  }
  const pages = pageBytes(db);
  const rows = count(db, "usage_flushes");
  const flushBytes = [...pages]
    .filter(
      ([name]) => name.startsWith("usage_flushes") || name === "sqlite_autoindex_usage_flushes_1",
    )
    .reduce((sum, [, bytes]) => sum + bytes, 0);
  // The Cron Trigger's prune: every row but the tenant's latest is past the retention.
  const pruneStart = cpuMs();
  let pruned = 0;
  for (;;) {
    const deleted = await pruneUsageFlushes(d1, "9999-12-31T00:00:00.000Z", 10_000);
    pruned += deleted;
    if (deleted < 10_000) break;
  }
  const msPerPrunedFlush = (cpuMs() - pruneStart) / Math.max(1, pruned);
  return { rowBytes: flushBytes / rows, msPerFlush: ms / flushes, msPerPrunedFlush };
}

/**
 * A D1 database on the migrations' schema with a tenant and its
 * subscription (every required column filled: the flush statements only
 * check that it exists and belongs to the tenant).
 */
export function migratedD1(): { db: DatabaseSync; tenantId: string; subscriptionId: string } {
  const db = new DatabaseSync(":memory:");
  const migrations = path.join(ROOT, "migrations");
  for (const file of readdirSync(migrations)
    .filter((name) => name.endsWith(".sql"))
    .sort()) {
    db.exec(readFileSync(path.join(migrations, file), "utf8"));
  }
  const tenantId = crypto.randomUUID();
  db.prepare("INSERT INTO tenants (id, name, slug) VALUES (?, ?, ?)").run(tenantId, "t", "t");
  const columns = db.prepare("PRAGMA table_info(subscriptions)").all() as {
    name: string;
    notnull: number;
    dflt_value: unknown;
  }[];
  db.exec("PRAGMA ignore_check_constraints = ON; PRAGMA foreign_keys = OFF");
  const required = columns.filter((c) => c.notnull && c.dflt_value === null);
  const subscriptionId = crypto.randomUUID();
  db.prepare(
    `INSERT INTO subscriptions (${required.map((c) => c.name).join(", ")}) VALUES (${required.map(() => "?").join(", ")})`,
  ).run(
    ...required.map((c) =>
      c.name === "id" ? subscriptionId : c.name === "tenant_id" ? tenantId : "x",
    ),
  );
  return { db, tenantId, subscriptionId };
}

/** The part of D1Database a flush uses (prepare, bind, batch), over node:sqlite, synchronously. */
export function d1Database(db: DatabaseSync) {
  return {
    prepare(query: string) {
      return {
        bind: (...args: SQLInputValue[]) => ({
          query,
          args,
          run: () =>
            Promise.resolve({
              meta: { changes: Number(db.prepare(query).run(...args).changes) },
            }),
        }),
      };
    },
    batch(statements: { query: string; args: SQLInputValue[] }[]) {
      return Promise.resolve(
        transaction(db, () =>
          statements.map((statement) => ({
            meta: { changes: Number(db.prepare(statement.query).run(...statement.args).changes) },
          })),
        ),
      );
    },
  };
}
