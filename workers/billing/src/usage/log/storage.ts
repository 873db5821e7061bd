import type { RawUsageMessage } from "@edge-platform/shared/queues/usage";
import type {
  FlushClaim,
  RejectedUpdate,
  UsageLogRow,
  UsageLogStatus,
  ValidatedUpdate,
} from "@edge-platform/shared/usage-log/client";
import { type EventIdHash, eventIdHash, hashKeySql } from "./event-id-hash.ts";

/*
 * The SQLite storage of one tenant shard's usage log (UsageLog object).
 *
 *   events         the hot log: every event not yet archived, keyed by our
 *                  id (UUID v7, so inserts append), with its status and
 *                  window; a partial index on `touched_at` over the
 *                  unfinished ones serves the re-drive, and an index on the
 *                  client's eventId is the duplicate guard while it is hot.
 *   outbox         events accepted but not yet sent to usage-raw; written in
 *                  the same transaction as the event, deleted once sent.
 *   event_ids_<yyyymmdd>
 *                  one table per UTC day of receipt: the archived events'
 *                  duplicate guard and id -> file index, an 8-byte hash of
 *                  the eventId (the rowid) and the archive file's number.
 *                  Written when a file is finished (never on the ingestion
 *                  path); a day past the retention window goes as one
 *                  DROP TABLE. A hash hit is confirmed against the file's
 *                  own eventIds (event-id-hash.ts).
 *   id_collisions  the full eventId of an archived event whose hash its
 *                  day's table already held for another id (rare).
 *   files          the Parquet files written to R2 (WRITING until every event
 *                  of it is indexed and deleted here, then DONE).
 *   event_ids      (objects of earlier releases only) the former index, one
 *                  row per eventId with our id; read until it has aged out,
 *                  then dropped.
 */

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
  id TEXT PRIMARY KEY,
  event_id TEXT NOT NULL,
  feature TEXT NOT NULL,
  amount INTEGER NOT NULL,
  timestamp TEXT NOT NULL,
  received_at TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'PENDING',
  reason TEXT,
  message TEXT,
  subscription_id TEXT,
  period_key TEXT,
  period_start TEXT,
  period_end TEXT,
  validated_at TEXT,
  aggregated_at TEXT,
  claim_flush_id TEXT,
  metadata TEXT NOT NULL DEFAULT '{}',
  touched_at INTEGER NOT NULL,
  finished_at INTEGER,
  file_id INTEGER
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_unfinished_idx ON events (touched_at)
  WHERE status IN ('PENDING', 'VALIDATED');
CREATE INDEX IF NOT EXISTS events_event_id_idx ON events (event_id);
CREATE TABLE IF NOT EXISTS outbox (
  id TEXT PRIMARY KEY,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_error TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS outbox_due_idx ON outbox (next_attempt_at);
CREATE TABLE IF NOT EXISTS id_collisions (
  event_id TEXT PRIMARY KEY,
  day TEXT NOT NULL,
  file_id INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS files (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  status TEXT NOT NULL,
  day TEXT NOT NULL,
  first_id TEXT NOT NULL,
  last_id TEXT NOT NULL,
  first_received TEXT NOT NULL,
  last_received TEXT NOT NULL,
  events INTEGER NOT NULL,
  bytes INTEGER,
  created_ms INTEGER NOT NULL
);
`;

/** An event as stored (and as the API and the archive show it). */
export interface StoredEvent {
  id: string;
  tenantId: string;
  eventId: string;
  feature: string;
  amount: number;
  timestamp: string;
  receivedAt: string;
  status: UsageLogStatus;
  reason: string | null;
  message: string | null;
  subscriptionId: string | null;
  periodKey: string | null;
  validatedAt: string | null;
  aggregatedAt: string | null;
  metadata: Record<string, unknown>;
}

export interface NewEvent {
  id: string;
  eventId: string;
  feature: string;
  amount: number;
  timestamp: string;
  metadata: Record<string, unknown>;
}

/** An event moved in from elsewhere (the D1 log of earlier releases), in any status. */
export interface ImportedEvent extends NewEvent {
  receivedAt: string;
  status: UsageLogStatus;
  reason: string | null;
  message: string | null;
  subscriptionId: string | null;
  periodKey: string | null;
  periodStart: string | null;
  periodEnd: string | null;
  validatedAt: string | null;
  aggregatedAt: string | null;
}

/** The columns `storedEvent` reads (an archive file holds these). */
interface StoredEventRow extends Record<string, SqlStorageValue> {
  id: string;
  event_id: string;
  feature: string;
  amount: number;
  timestamp: string;
  received_at: string;
  status: string;
  reason: string | null;
  message: string | null;
  subscription_id: string | null;
  period_key: string | null;
  validated_at: string | null;
  aggregated_at: string | null;
  metadata: string;
}

interface EventRecord extends StoredEventRow {
  period_start: string | null;
  period_end: string | null;
}

export interface FileRecord extends Record<string, SqlStorageValue> {
  id: number;
  key: string;
  status: string;
  day: string;
  first_id: string;
  last_id: string;
  first_received: string;
  last_received: string;
  events: number;
}

export function storedEvent(
  tenantId: string,
  row: StoredEventRow,
  metadata: Record<string, unknown> = parsedMetadata(row.metadata),
): StoredEvent {
  return {
    id: row.id,
    tenantId,
    eventId: row.event_id,
    feature: row.feature,
    amount: row.amount,
    timestamp: row.timestamp,
    receivedAt: row.received_at,
    status: row.status as UsageLogStatus,
    reason: row.reason,
    message: row.message,
    subscriptionId: row.subscription_id,
    periodKey: row.period_key,
    validatedAt: row.validated_at,
    aggregatedAt: row.aggregated_at,
    metadata,
  };
}

function parsedMetadata(text: string): Record<string, unknown> {
  return JSON.parse(text || "{}") as Record<string, unknown>;
}

const FINISHED = "('AGGREGATED', 'REJECTED')";

/** The events columns of a StoredEventRow. */
const STORED_EVENT_COLUMNS =
  "id, event_id, feature, amount, timestamp, received_at, status, reason, message, subscription_id, period_key, validated_at, aggregated_at, metadata";

/**
 * A file's events, bound as (first id, last id, file number): its marked
 * rows, searched within its id range so that the primary key finds them.
 */
const OF_FILE = "id BETWEEN ? AND ? AND file_id = ?";

/** An archive file, by its number in `files` and its R2 key. */
export interface FileRef {
  id: number;
  key: string;
}

/**
 * The eventIds of archive files read so far (from R2), by file number: what
 * confirms or refutes a hash hit of the archived-id index.
 */
export type FilesRead = ReadonlyMap<number, ReadonlySet<string>>;

/**
 * Either the decision, or the archive files to read before it can be made
 * (a hash hit on an index row of theirs; nothing was written).
 */
export type Decision<T> = { done: T } | { unread: FileRef[] };

/** Where an eventId's event is: hot, or in one of these archive files. */
export type Location =
  | { kind: "hot"; event: StoredEvent }
  | {
      kind: "archived";
      /** Files that may hold it, most likely first; `exact` when indexed by the full eventId. */
      files: { key: string; exact: boolean }[];
    };

const DAY_TABLE_PREFIX = "event_ids_";
const DAY_MS = 86_400_000;

/** The index table of a UTC day (`yyyy-mm-dd`). */
export function dayTableName(day: string): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new Error(`not a day: ${day}`);
  return `${DAY_TABLE_PREFIX}${day.replaceAll("-", "")}`;
}

function dayOfTable(table: string): string {
  const digits = table.slice(DAY_TABLE_PREFIX.length);
  return `${digits.slice(0, 4)}-${digits.slice(4, 6)}-${digits.slice(6, 8)}`;
}

/** Storage statements of one tenant shard; synchronous, the caller owns transactions. */
export class UsageLogStore {
  /** The day tables, oldest first (read once, kept as they are created and dropped). */
  private days: string[];
  /** Whether the former one-row-per-eventId index of earlier releases is still here. */
  private legacyIndex: boolean;

  constructor(
    private readonly sql: SqlStorage,
    private readonly hash: EventIdHash = eventIdHash,
  ) {
    sql.exec(SCHEMA);
    this.days = sql
      .exec<{ name: string }>(
        `SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB '${DAY_TABLE_PREFIX}[0-9]*'
          ORDER BY name`,
      )
      .toArray()
      .map((row) => row.name);
    this.legacyIndex =
      sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event_ids'").toArray()
        .length > 0;
  }

  meta(key: string): string | undefined {
    return this.sql
      .exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key)
      .toArray()[0]?.value;
  }

  setMeta(key: string, value: string): void {
    this.sql.exec(
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      key,
      value,
    );
  }

  /**
   * The eventIds among `eventIds` held already (hot, or archived within
   * retention). Exact: an id known by its full value (hot, a collision row,
   * the former index) is held; an archived one found by its hash is held
   * only if its file, read from `filesRead`, has it. Files not read yet come
   * back as `unread`.
   */
  held(eventIds: string[], filesRead: FilesRead): Decision<Set<string>> {
    const held = new Set<string>();
    if (eventIds.length === 0) return { done: held };
    const list = JSON.stringify(eventIds);
    const exact = [
      "SELECT event_id FROM events WHERE event_id IN (SELECT value FROM json_each(?1))",
      "SELECT event_id FROM id_collisions WHERE event_id IN (SELECT value FROM json_each(?1))",
      ...(this.legacyIndex
        ? ["SELECT event_id FROM event_ids WHERE event_id IN (SELECT value FROM json_each(?1))"]
        : []),
    ].join(" UNION ALL ");
    for (const row of this.sql.exec<{ event_id: string }>(exact, list)) held.add(row.event_id);
    const rest = eventIds.filter((eventId) => !held.has(eventId));
    if (rest.length === 0 || this.days.length === 0) return { done: held };
    const hits = this.sql
      .exec<{ i: number; file_id: number }>(
        `WITH q(i, h) AS MATERIALIZED (SELECT key, ${hashKeySql("value")} FROM json_each(?1))
         ${this.days
           .map(
             (table) => `SELECT q.i AS i, t.file_id AS file_id FROM q JOIN ${table} t ON t.h = q.h`,
           )
           .join(" UNION ALL ")}`,
        JSON.stringify(rest.map((eventId) => this.hash(eventId))),
      )
      .toArray();
    const unread = new Set<number>();
    for (const hit of hits) {
      const eventId = rest[hit.i] as string;
      const file = filesRead.get(hit.file_id);
      if (!file) unread.add(hit.file_id);
      else if (file.has(eventId)) held.add(eventId);
    }
    if (unread.size === 0) return { done: held };
    // A file past retention (its row gone, its day table going) holds nothing any more.
    const files = this.sql
      .exec<{ id: number; key: string }>(
        "SELECT id, key FROM files WHERE status = 'DONE' AND id IN (SELECT value FROM json_each(?))",
        JSON.stringify([...unread]),
      )
      .toArray();
    if (files.length === 0) return { done: held };
    return { unread: files.map((file) => ({ id: file.id, key: file.key })) };
  }

  /**
   * Stores new events with their outbox entries (call inside one storage
   * transaction). An eventId held already, or repeated in the batch, is
   * skipped. Returns the eventIds stored, or the archive files to read
   * first (nothing written then).
   */
  insert(
    events: NewEvent[],
    receivedAt: string,
    nowMs: number,
    firstSendAt: number,
    filesRead: FilesRead = new Map(),
  ): Decision<string[]> {
    if (events.length === 0) return { done: [] };
    const decision = this.held(
      events.map((event) => event.eventId),
      filesRead,
    );
    if ("unread" in decision) return decision;
    const held = decision.done;
    const stored = events.filter((event) => {
      if (held.has(event.eventId)) return false;
      held.add(event.eventId);
      return true;
    });
    if (stored.length === 0) return { done: [] };
    this.sql.exec(
      `INSERT INTO events (id, event_id, feature, amount, timestamp, received_at, metadata, touched_at)
       SELECT json_extract(value, '$.id'), json_extract(value, '$.eventId'),
              json_extract(value, '$.feature'), json_extract(value, '$.amount'),
              json_extract(value, '$.timestamp'), ?, json_extract(value, '$.metadata'), ?
         FROM json_each(?)`,
      receivedAt,
      nowMs,
      JSON.stringify(
        stored.map((event) => ({ ...event, metadata: JSON.stringify(event.metadata ?? {}) })),
      ),
    );
    this.sql.exec(
      `INSERT INTO outbox (id, next_attempt_at) SELECT value, ? FROM json_each(?)`,
      firstSendAt,
      JSON.stringify(stored.map((event) => event.id)),
    );
    return { done: stored.map((event) => event.eventId) };
  }

  /**
   * Stores events moved in from another log, keeping their status. The
   * unfinished ones count as just touched: the re-drive sends them on once
   * the bound has passed, unless their own messages finish them first. An
   * eventId held already is skipped, so moving twice is harmless.
   */
  import(
    events: ImportedEvent[],
    nowMs: number,
    filesRead: FilesRead = new Map(),
  ): Decision<number> {
    const decision = this.held(
      events.map((event) => event.eventId),
      filesRead,
    );
    if ("unread" in decision) return decision;
    const held = decision.done;
    let stored = 0;
    for (const event of events) {
      if (held.has(event.eventId)) continue;
      held.add(event.eventId);
      const finished = event.status === "AGGREGATED" || event.status === "REJECTED";
      this.sql.exec(
        `INSERT INTO events (id, event_id, feature, amount, timestamp, received_at, status, reason,
                             message, subscription_id, period_key, period_start, period_end,
                             validated_at, aggregated_at, metadata, touched_at, finished_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO NOTHING`,
        event.id,
        event.eventId,
        event.feature,
        event.amount,
        event.timestamp,
        event.receivedAt,
        event.status,
        event.reason,
        event.message,
        event.subscriptionId,
        event.periodKey,
        event.periodStart,
        event.periodEnd,
        event.validatedAt,
        event.aggregatedAt,
        JSON.stringify(event.metadata ?? {}),
        nowMs,
        finished ? nowMs : null,
      );
      stored++;
    }
    return { done: stored };
  }

  rows(tenantId: string, ids: string[]): UsageLogRow[] {
    if (ids.length === 0) return [];
    return this.sql
      .exec<EventRecord>(
        "SELECT * FROM events WHERE id IN (SELECT value FROM json_each(?))",
        JSON.stringify(ids),
      )
      .toArray()
      .map((row) => ({
        id: row.id,
        tenantId,
        eventId: row.event_id,
        feature: row.feature,
        amount: row.amount,
        timestamp: row.timestamp,
        receivedAt: row.received_at,
        status: row.status as UsageLogStatus,
        subscriptionId: row.subscription_id,
        periodKey: row.period_key,
        periodStart: row.period_start,
        periodEnd: row.period_end,
        validatedAt: row.validated_at,
      }));
  }

  /** PENDING -> VALIDATED with the window (a repeat changes nothing). */
  markValidated(updates: ValidatedUpdate[], at: string, nowMs: number): number {
    if (updates.length === 0) return 0;
    return this.sql.exec(
      `UPDATE events
          SET status = 'VALIDATED',
              subscription_id = json_extract(u.value, '$.subscriptionId'),
              period_key = json_extract(u.value, '$.periodKey'),
              period_start = json_extract(u.value, '$.periodStart'),
              period_end = json_extract(u.value, '$.periodEnd'),
              validated_at = ?, touched_at = ?
         FROM json_each(?) AS u
        WHERE events.id = json_extract(u.value, '$.id') AND events.status = 'PENDING'`,
      at,
      nowMs,
      JSON.stringify(updates),
    ).rowsWritten;
  }

  /** PENDING -> REJECTED, unless a counter flush has taken the event meanwhile. */
  markRejected(updates: RejectedUpdate[], nowMs: number): number {
    if (updates.length === 0) return 0;
    return this.sql.exec(
      `UPDATE events
          SET status = 'REJECTED', reason = json_extract(u.value, '$.code'),
              message = json_extract(u.value, '$.reason'), touched_at = ?, finished_at = ?
         FROM json_each(?) AS u
        WHERE events.id = json_extract(u.value, '$.id') AND events.status = 'PENDING'
          AND events.claim_flush_id IS NULL`,
      nowMs,
      nowMs,
      JSON.stringify(updates),
    ).rowsWritten;
  }

  /**
   * A counter flush takes its events: those still PENDING, or VALIDATED in
   * the very window the counter counted them in, and not taken by another
   * flush. Returns every event this flush holds (now or from an earlier
   * attempt) and the ids not here at all.
   */
  claim(flushId: string, claims: FlushClaim[]) {
    const ids = JSON.stringify(claims.map((claim) => claim.id));
    this.sql.exec(
      `UPDATE events
          SET claim_flush_id = ?1,
              subscription_id = json_extract(c.value, '$.subscriptionId'),
              period_key = json_extract(c.value, '$.periodKey'),
              period_start = json_extract(c.value, '$.periodStart'),
              period_end = json_extract(c.value, '$.periodEnd')
         FROM json_each(?2) AS c
        WHERE events.id = json_extract(c.value, '$.id')
          AND events.claim_flush_id IS NULL
          AND events.feature = json_extract(c.value, '$.featureLookupKey')
          AND (events.status = 'PENDING'
               OR (events.status = 'VALIDATED'
                   AND events.subscription_id = json_extract(c.value, '$.subscriptionId')
                   AND events.period_key = json_extract(c.value, '$.periodKey')))`,
      flushId,
      JSON.stringify(claims),
    );
    const held = this.sql
      .exec<{
        id: string;
        amount: number;
        claim: string | null;
        sub: string;
        period: string;
        timestamp: string;
      }>(
        `SELECT id, amount, claim_flush_id AS claim, subscription_id AS sub, period_key AS period,
                timestamp
           FROM events WHERE id IN (SELECT value FROM json_each(?))`,
        ids,
      )
      .toArray();
    const present = new Set(held.map((row) => row.id));
    return {
      claimed: held
        .filter((row) => row.claim === flushId)
        .map((row) => ({
          id: row.id,
          amount: row.amount,
          subscriptionId: row.sub,
          periodKey: row.period,
          timestamp: row.timestamp,
        })),
      missing: claims.map((claim) => claim.id).filter((id) => !present.has(id)),
    };
  }

  /** The flush's events are in usage_aggregates now: AGGREGATED. */
  finishClaim(flushId: string, ids: string[], at: string, nowMs: number): number {
    if (ids.length === 0) return 0;
    return this.sql.exec(
      `UPDATE events
          SET status = 'AGGREGATED', aggregated_at = ?, validated_at = coalesce(validated_at, ?),
              touched_at = ?, finished_at = ?
        WHERE id IN (SELECT value FROM json_each(?)) AND claim_flush_id = ?
          AND status IN ('PENDING', 'VALIDATED')`,
      at,
      at,
      nowMs,
      nowMs,
      JSON.stringify(ids),
      flushId,
    ).rowsWritten;
  }

  /** REJECTED -> PENDING with a fresh outbox entry (an administrator's dead-letter retry). */
  reopen(id: string, nowMs: number, sendAt: number): boolean {
    const changed = this.sql.exec(
      `UPDATE events SET status = 'PENDING', reason = NULL, message = NULL, touched_at = ?,
              finished_at = NULL
        WHERE id = ? AND status = 'REJECTED'`,
      nowMs,
      id,
    ).rowsWritten;
    const exists = this.sql.exec("SELECT 1 FROM events WHERE id = ?", id).toArray().length > 0;
    if (!exists) return false;
    this.sql.exec(
      `INSERT INTO outbox (id, next_attempt_at) VALUES (?, ?)
       ON CONFLICT (id) DO UPDATE SET attempts = 0, next_attempt_at = excluded.next_attempt_at, last_error = NULL`,
      id,
      sendAt,
    );
    return changed > 0 || exists;
  }

  /** The hot event with this client eventId, or the archive files that may hold it. */
  find(tenantId: string, eventId: string): Location | undefined {
    const hot = this.sql
      .exec<EventRecord>("SELECT * FROM events WHERE event_id = ?", eventId)
      .toArray()[0];
    if (hot) return { kind: "hot", event: storedEvent(tenantId, hot) };
    const exact = [
      `SELECT f.key AS key FROM id_collisions c JOIN files f ON f.id = c.file_id
        WHERE c.event_id = ?1 AND f.status = 'DONE'`,
      ...(this.legacyIndex
        ? [
            `SELECT f.key AS key FROM event_ids e JOIN files f ON f.id = e.file_id
              WHERE e.event_id = ?1 AND f.status = 'DONE'`,
          ]
        : []),
    ].join(" UNION ALL ");
    const files = this.sql
      .exec<{ key: string }>(exact, eventId)
      .toArray()
      .map((row) => ({ key: row.key, exact: true }));
    if (this.days.length > 0) {
      const [hi, lo] = this.hash(eventId);
      // Newest day first: a hash hit there is the likeliest.
      const byHash = this.days
        .toReversed()
        .map(
          (table) =>
            `SELECT f.key AS key FROM ${table} t JOIN files f ON f.id = t.file_id
              WHERE t.h = ((?1 << 32) | ?2) AND f.status = 'DONE'`,
        )
        .join(" UNION ALL ");
      for (const row of this.sql.exec<{ key: string }>(byHash, hi, lo)) {
        files.push({ key: row.key, exact: false });
      }
    }
    return files.length > 0 ? { kind: "archived", files } : undefined;
  }

  /** Hot events in id order after `afterId`, received in [from, to). */
  hotEvents(
    tenantId: string,
    filter: { from: string; to: string; afterId: string; feature?: string; status?: string },
    limit: number,
  ): StoredEvent[] {
    return this.sql
      .exec<EventRecord>(
        `SELECT * FROM events
          WHERE id > ? AND received_at >= ? AND received_at < ?
            AND (? IS NULL OR feature = ?) AND (? IS NULL OR status = ?)
          ORDER BY id LIMIT ?`,
        filter.afterId,
        filter.from,
        filter.to,
        filter.feature ?? null,
        filter.feature ?? null,
        filter.status ?? null,
        filter.status ?? null,
        limit,
      )
      .toArray()
      .map((row) => storedEvent(tenantId, row));
  }

  /** Archive files (written or being written) that may hold events after `afterId` in [from, to). */
  filesFor(filter: { from: string; to: string; afterId: string }): FileRecord[] {
    return this.sql
      .exec<FileRecord>(
        `SELECT * FROM files
          WHERE status = 'DONE' AND last_id > ? AND last_received >= ? AND first_received < ?
          ORDER BY first_id`,
        filter.afterId,
        filter.from,
        filter.to,
      )
      .toArray();
  }

  // --- outbox and re-drive ---------------------------------------------------

  /** Due outbox entries as the usage-raw messages they become (only the columns a message carries). */
  dueOutbox(tenantId: string, nowMs: number, limit: number): RawUsageMessage[] {
    return this.sql
      .exec<{
        id: string;
        eventId: string;
        feature: string;
        amount: number;
        timestamp: string;
        receivedAt: string;
      }>(
        `SELECT e.id AS id, e.event_id AS eventId, e.feature AS feature, e.amount AS amount,
                e.timestamp AS timestamp, e.received_at AS receivedAt
           FROM outbox o JOIN events e ON e.id = o.id
          WHERE o.next_attempt_at <= ? ORDER BY o.next_attempt_at LIMIT ?`,
        nowMs,
        limit,
      )
      .toArray()
      .map((row) => ({ ...row, tenantId }));
  }

  /** Sent: the entries go (the event's own row stays, PENDING, until validation moves it). */
  deleteOutbox(ids: string[]): void {
    if (ids.length === 0) return;
    this.sql.exec(
      "DELETE FROM outbox WHERE id IN (SELECT value FROM json_each(?))",
      JSON.stringify(ids),
    );
  }

  /** One more failed send: 2, 4, 8, 16 s of backoff. Returns the entries out of attempts. */
  failOutbox(ids: string[], error: string, nowMs: number, maxAttempts: number): string[] {
    if (ids.length === 0) return [];
    this.sql.exec(
      `UPDATE outbox SET attempts = attempts + 1, last_error = ?,
              next_attempt_at = ? + (1000 << (attempts + 1))
        WHERE id IN (SELECT value FROM json_each(?))`,
      error.slice(0, 1000),
      nowMs,
      JSON.stringify(ids),
    );
    return this.sql
      .exec<{ id: string }>(
        "SELECT id FROM outbox WHERE id IN (SELECT value FROM json_each(?)) AND attempts >= ?",
        JSON.stringify(ids),
        maxAttempts,
      )
      .toArray()
      .map((row) => row.id);
  }

  nextOutboxAt(): number | null {
    return this.sql
      .exec<{ at: number | null }>("SELECT min(next_attempt_at) AS at FROM outbox")
      .one().at;
  }

  /** Unfinished events untouched since `before`, not waiting in the outbox; touched now. */
  takeStranded(
    tenantId: string,
    before: number,
    nowMs: number,
    limit: number,
  ): (StoredEvent & { periodStart: string | null; periodEnd: string | null })[] {
    const rows = this.sql
      .exec<EventRecord>(
        `SELECT * FROM events
          WHERE status IN ('PENDING', 'VALIDATED') AND touched_at < ?
            AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.id = events.id)
          ORDER BY touched_at LIMIT ?`,
        before,
        limit,
      )
      .toArray();
    if (rows.length > 0) {
      this.sql.exec(
        `UPDATE events SET touched_at = ? WHERE id IN (SELECT value FROM json_each(?))
           AND status IN ('PENDING', 'VALIDATED')`,
        nowMs,
        JSON.stringify(rows.map((row) => row.id)),
      );
    }
    return rows.map((row) => ({
      ...storedEvent(tenantId, row),
      periodStart: row.period_start,
      periodEnd: row.period_end,
    }));
  }

  oldestUnfinishedTouch(): number | null {
    return this.sql
      .exec<{ at: number | null }>(
        "SELECT min(touched_at) AS at FROM events WHERE status IN ('PENDING', 'VALIDATED')",
      )
      .one().at;
  }

  unfinishedCount(): number {
    return this.sql
      .exec<{ n: number }>(
        "SELECT count(*) AS n FROM events WHERE status IN ('PENDING', 'VALIDATED')",
      )
      .one().n;
  }

  // --- archive -----------------------------------------------------------------

  /**
   * Finished events not yet in a file, finished before `settledBefore`,
   * oldest first: only what choosing a file needs (the file reads its rows
   * once, in `fileEvents`).
   */
  archivable(settledBefore: number, limit: number): { id: string; received_at: string }[] {
    return this.sql
      .exec<{ id: string; received_at: string }>(
        `SELECT id, received_at FROM events
          WHERE status IN ${FINISHED} AND file_id IS NULL AND finished_at < ?
          ORDER BY id LIMIT ?`,
        settledBefore,
        limit,
      )
      .toArray();
  }

  /**
   * Step 1 of a file: the intent, with its events marked, in one transaction
   * (caller's). The events are those `archivable` chose: finished before
   * `choice.settledBefore`, received on the file's day, and (unless the file
   * is full) before `choice.closedBefore`, with ids from the file's first to
   * its last. They are marked by that range and rule, in one pass; a count
   * other than `file.events` throws, and the transaction with it.
   */
  startFile(
    file: Omit<FileRecord, "id" | "status">,
    choice: { settledBefore: number; closedBefore: string; full: boolean },
    nowMs: number,
  ): number {
    const id = this.sql
      .exec<{ id: number }>(
        `INSERT INTO files (key, status, day, first_id, last_id, first_received, last_received, events, created_ms)
         VALUES (?, 'WRITING', ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
        file.key,
        file.day,
        file.first_id,
        file.last_id,
        file.first_received,
        file.last_received,
        file.events,
        nowMs,
      )
      .one().id;
    const marked = this.sql.exec(
      `UPDATE events SET file_id = ?
        WHERE id BETWEEN ? AND ? AND status IN ${FINISHED} AND file_id IS NULL
          AND finished_at < ? AND substr(received_at, 1, 10) = ?
          AND (? OR received_at < ?)`,
      id,
      file.first_id,
      file.last_id,
      choice.settledBefore,
      file.day,
      choice.full ? 1 : 0,
      choice.closedBefore,
    ).rowsWritten;
    if (marked !== file.events) {
      throw new Error(`archive file ${file.key}: ${marked} events marked, ${file.events} chosen`);
    }
    return id;
  }

  writingFiles(): FileRecord[] {
    return this.sql
      .exec<FileRecord>("SELECT * FROM files WHERE status = 'WRITING' ORDER BY id")
      .toArray();
  }

  /**
   * A file's events hold ids from its first to its last: the range keeps
   * this a primary-key search. Only the columns a file holds are read, and
   * rows with the same metadata text share one parsed object (read-only
   * here), which the Parquet writer then serialises once.
   */
  fileEvents(
    tenantId: string,
    file: Pick<FileRecord, "id" | "first_id" | "last_id">,
  ): StoredEvent[] {
    const metadataOf = new Map<string, Record<string, unknown>>();
    return this.sql
      .exec<StoredEventRow>(
        `SELECT ${STORED_EVENT_COLUMNS} FROM events WHERE ${OF_FILE} ORDER BY id`,
        file.first_id,
        file.last_id,
        file.id,
      )
      .toArray()
      .map((row) => {
        let metadata = metadataOf.get(row.metadata);
        if (!metadata) {
          metadata = parsedMetadata(row.metadata);
          metadataOf.set(row.metadata, metadata);
        }
        return storedEvent(tenantId, row, metadata);
      });
  }

  /**
   * Step 3: index the file's events in its day's table, delete them here,
   * mark the file DONE (caller's transaction). The index is written here,
   * once per event in file-sized sorted batches, not on the ingestion path.
   */
  finishFile(fileId: number, bytes: number): number {
    const file = this.sql
      .exec<{ day: string; first_id: string; last_id: string }>(
        "SELECT day, first_id, last_id FROM files WHERE id = ?",
        fileId,
      )
      .one();
    const eventIds = this.sql
      .exec<{ event_id: string }>(
        `SELECT event_id FROM events WHERE ${OF_FILE}`,
        file.first_id,
        file.last_id,
        fileId,
      )
      .toArray()
      .map((row) => row.event_id);
    const table = this.dayTable(file.day);
    const keyed = eventIds.map((eventId) => ({ eventId, hash: this.hash(eventId) }));
    // Sorted as SQLite orders the 64-bit key (signed high half, then the low half).
    keyed.sort((a, b) => a.hash[0] - b.hash[0] || a.hash[1] - b.hash[1]);
    const collided = new Set<string>();
    for (let index = 1; index < keyed.length; index++) {
      const previous = keyed[index - 1]?.hash;
      const current = keyed[index];
      if (
        previous &&
        current &&
        previous[0] === current.hash[0] &&
        previous[1] === current.hash[1]
      ) {
        collided.add(current.eventId);
      }
    }
    // A hash another file's event holds already keeps that row (nothing
    // written); only when some were not written is the day's table searched
    // for them, which 64-bit hashes make rare.
    const unique = collided.size === 0 ? keyed : keyed.filter((e) => !collided.has(e.eventId));
    const pairs = JSON.stringify(unique.map((entry) => entry.hash));
    const written = this.sql.exec(
      `INSERT INTO ${table} (h, file_id) SELECT ${hashKeySql("value")}, ? FROM json_each(?)
       WHERE true ON CONFLICT (h) DO NOTHING`,
      fileId,
      pairs,
    ).rowsWritten;
    if (written < unique.length) {
      for (const row of this.sql.exec<{ i: number }>(
        `WITH q(i, h) AS MATERIALIZED (SELECT key, ${hashKeySql("value")} FROM json_each(?))
         SELECT q.i AS i FROM q JOIN ${table} t ON t.h = q.h WHERE t.file_id <> ?`,
        pairs,
        fileId,
      )) {
        collided.add((unique[row.i] as { eventId: string }).eventId);
      }
    }
    if (collided.size > 0) {
      this.sql.exec(
        `INSERT INTO id_collisions (event_id, day, file_id) SELECT value, ?, ? FROM json_each(?)
         WHERE true ON CONFLICT (event_id) DO UPDATE SET day = excluded.day, file_id = excluded.file_id`,
        file.day,
        fileId,
        JSON.stringify([...collided]),
      );
    }
    const deleted = this.sql.exec(
      `DELETE FROM events WHERE ${OF_FILE}`,
      file.first_id,
      file.last_id,
      fileId,
    ).rowsWritten;
    this.sql.exec("UPDATE files SET status = 'DONE', bytes = ? WHERE id = ?", bytes, fileId);
    return deleted;
  }

  /** The index table of `day`, created on its first file. */
  private dayTable(day: string): string {
    const table = dayTableName(day);
    if (!this.days.includes(table)) {
      this.sql.exec(
        `CREATE TABLE IF NOT EXISTS ${table} (h INTEGER PRIMARY KEY, file_id INTEGER NOT NULL)`,
      );
      this.days = [...this.days, table].sort();
    }
    return table;
  }

  /**
   * Forgets what was received before `before`: each whole day before its
   * day goes as one DROP TABLE, with that day's collision rows and file
   * rows (so an id is kept between the retention window and a day more);
   * the former index of earlier releases loses up to `limit` rows (the
   * oldest) whose events are no longer hot, and goes once empty. Returns
   * how many ids were forgotten.
   */
  prune(before: number, limit: number): number {
    const cutoff = new Date(before).toISOString().slice(0, 10);
    let forgotten = 0;
    for (const table of this.days.filter((name) => dayOfTable(name) < cutoff)) {
      forgotten += this.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).one().n;
      this.sql.exec(`DROP TABLE ${table}`);
      this.days = this.days.filter((name) => name !== table);
    }
    forgotten += this.sql.exec("DELETE FROM id_collisions WHERE day < ?", cutoff).rowsWritten;
    this.sql.exec("DELETE FROM files WHERE status = 'DONE' AND day < ?", cutoff);
    if (this.legacyIndex) {
      forgotten += this.sql.exec(
        `DELETE FROM event_ids
          WHERE event_id IN (SELECT event_id FROM event_ids WHERE received_ms < ?
                              ORDER BY received_ms LIMIT ?)
            AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = event_ids.id)`,
        before,
        limit,
      ).rowsWritten;
      if (this.sql.exec("SELECT 1 FROM event_ids LIMIT 1").toArray().length === 0) {
        this.sql.exec("DROP TABLE event_ids");
        this.legacyIndex = false;
      }
    }
    return forgotten;
  }

  /**
   * The receipt time whose retention end is the next prune: the end of the
   * oldest indexed day, or the oldest id of the former index.
   */
  oldestIdMs(): number | null {
    const times: number[] = [];
    const oldestDay = this.days[0];
    if (oldestDay) times.push(Date.parse(`${dayOfTable(oldestDay)}T00:00:00.000Z`) + DAY_MS);
    if (this.legacyIndex) {
      const at = this.sql
        .exec<{ at: number | null }>("SELECT min(received_ms) AS at FROM event_ids")
        .one().at;
      if (at !== null) times.push(at);
    }
    return times.length > 0 ? Math.min(...times) : null;
  }

  /** Ids in the archived-id index (every day table, collision rows and the former index). */
  indexedIds(): number {
    const tables = [...this.days, "id_collisions", ...(this.legacyIndex ? ["event_ids"] : [])];
    return tables.reduce(
      (sum, table) =>
        sum + this.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).one().n,
      0,
    );
  }

  hasArchivable(): boolean {
    return (
      this.sql
        .exec(`SELECT 1 FROM events WHERE status IN ${FINISHED} AND file_id IS NULL LIMIT 1`)
        .toArray().length > 0
    );
  }
}
