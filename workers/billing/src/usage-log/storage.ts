import type {
  FlushClaim,
  RejectedUpdate,
  UsageLogRow,
  UsageLogStatus,
  ValidatedUpdate,
} from "@edge-platform/shared/usage-log/client";

/*
 * The SQLite storage of one tenant shard's usage log (UsageLog object).
 *
 *   events     the hot log: every event not yet archived, keyed by our id
 *              (UUID v7, so inserts append), with its status and window;
 *              a partial index on `touched_at` over the unfinished ones
 *              serves the re-drive.
 *   outbox     events accepted but not yet sent to usage-raw; written in
 *              the same transaction as the event, deleted once sent.
 *   event_ids  client eventId -> our id, receipt time and archive file:
 *              the duplicate guard and the id -> file index, kept for the
 *              retention window (at least the 7-day validation window).
 *   files      the Parquet files written to R2 (WRITING until every event
 *              of it is indexed and deleted here, then DONE).
 *
 * The only index keyed by a random value is event_ids' primary key (the
 * client's eventId); every other index grows at one end.
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
CREATE TABLE IF NOT EXISTS outbox (
  id TEXT PRIMARY KEY,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_error TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS outbox_due_idx ON outbox (next_attempt_at);
CREATE TABLE IF NOT EXISTS event_ids (
  event_id TEXT PRIMARY KEY,
  id TEXT NOT NULL,
  received_ms INTEGER NOT NULL,
  file_id INTEGER
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS event_ids_received_idx ON event_ids (received_ms);
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

interface EventRecord extends Record<string, SqlStorageValue> {
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
  period_start: string | null;
  period_end: string | null;
  validated_at: string | null;
  aggregated_at: string | null;
  metadata: string;
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

export function storedEvent(tenantId: string, row: EventRecord): StoredEvent {
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
    metadata: JSON.parse(row.metadata || "{}") as Record<string, unknown>,
  };
}

const FINISHED = "('AGGREGATED', 'REJECTED')";

/** Storage statements of one tenant shard; synchronous, the caller owns transactions. */
export class UsageLogStore {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(SCHEMA);
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

  /** The eventIds among `eventIds` already held (hot or archived, within retention). */
  seen(eventIds: string[]): string[] {
    if (eventIds.length === 0) return [];
    return this.sql
      .exec<{ event_id: string }>(
        "SELECT event_id FROM event_ids WHERE event_id IN (SELECT value FROM json_each(?))",
        JSON.stringify(eventIds),
      )
      .toArray()
      .map((row) => row.event_id);
  }

  /**
   * Stores new events with their outbox entries (call inside one storage
   * transaction). An eventId held already, or repeated in the batch, is
   * skipped. Returns the eventIds stored.
   */
  insert(events: NewEvent[], receivedAt: string, nowMs: number, firstSendAt: number): string[] {
    if (events.length === 0) return [];
    const receivedMs = Date.parse(receivedAt);
    const fresh = new Set(
      this.sql
        .exec<{ event_id: string }>(
          `INSERT INTO event_ids (event_id, id, received_ms)
           SELECT json_extract(value, '$.eventId'), json_extract(value, '$.id'), ?
             FROM json_each(?) WHERE true
           ON CONFLICT (event_id) DO NOTHING
           RETURNING event_id`,
          receivedMs,
          JSON.stringify(events.map((event) => ({ eventId: event.eventId, id: event.id }))),
        )
        .toArray()
        .map((row) => row.event_id),
    );
    const stored = events.filter((event) => fresh.delete(event.eventId));
    if (stored.length === 0) return [];
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
    return stored.map((event) => event.eventId);
  }

  /**
   * Stores events moved in from another log, keeping their status. The
   * unfinished ones count as just touched: the re-drive sends them on once
   * the bound has passed, unless their own messages finish them first. An
   * eventId held already is skipped, so moving twice is harmless.
   */
  import(events: ImportedEvent[], nowMs: number): number {
    let stored = 0;
    for (const event of events) {
      const claimed = this.sql
        .exec(
          `INSERT INTO event_ids (event_id, id, received_ms) VALUES (?, ?, ?)
           ON CONFLICT (event_id) DO NOTHING RETURNING event_id`,
          event.eventId,
          event.id,
          Date.parse(event.receivedAt),
        )
        .toArray().length;
      if (claimed === 0) continue;
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
    return stored;
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

  /** The hot event with this client eventId, or where it was archived. */
  find(
    tenantId: string,
    eventId: string,
  ):
    | { kind: "hot"; event: StoredEvent }
    | { kind: "archived"; fileKey: string; id: string }
    | undefined {
    const index = this.sql
      .exec<{ id: string; file_id: number | null }>(
        "SELECT id, file_id FROM event_ids WHERE event_id = ?",
        eventId,
      )
      .toArray()[0];
    if (!index) return undefined;
    const row = this.sql.exec<EventRecord>("SELECT * FROM events WHERE id = ?", index.id).toArray();
    if (row[0]) return { kind: "hot", event: storedEvent(tenantId, row[0]) };
    if (index.file_id === null) return undefined;
    const file = this.sql
      .exec<{ key: string }>("SELECT key FROM files WHERE id = ?", index.file_id)
      .toArray()[0];
    return file ? { kind: "archived", fileKey: file.key, id: index.id } : undefined;
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

  dueOutbox(
    tenantId: string,
    nowMs: number,
    limit: number,
  ): { event: StoredEvent; attempts: number }[] {
    return this.sql
      .exec<EventRecord & { attempts: number }>(
        `SELECT e.*, o.attempts AS attempts FROM outbox o JOIN events e ON e.id = o.id
          WHERE o.next_attempt_at <= ? ORDER BY o.next_attempt_at LIMIT ?`,
        nowMs,
        limit,
      )
      .toArray()
      .map((row) => ({ event: storedEvent(tenantId, row), attempts: row.attempts }));
  }

  leaseOutbox(ids: string[], until: number): void {
    if (ids.length === 0) return;
    this.sql.exec(
      "UPDATE outbox SET next_attempt_at = ? WHERE id IN (SELECT value FROM json_each(?))",
      until,
      JSON.stringify(ids),
    );
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

  /** Finished events not yet in a file, finished before `settledBefore`, oldest first. */
  archivable(settledBefore: number, limit: number): EventRecord[] {
    return this.sql
      .exec<EventRecord>(
        `SELECT * FROM events
          WHERE status IN ${FINISHED} AND file_id IS NULL AND finished_at < ?
          ORDER BY id LIMIT ?`,
        settledBefore,
        limit,
      )
      .toArray();
  }

  /** Step 1 of a file: the intent, with its events marked, in one transaction (caller's). */
  startFile(file: Omit<FileRecord, "id" | "status">, ids: string[], nowMs: number): number {
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
    this.sql.exec(
      "UPDATE events SET file_id = ? WHERE id IN (SELECT value FROM json_each(?))",
      id,
      JSON.stringify(ids),
    );
    return id;
  }

  writingFiles(): FileRecord[] {
    return this.sql
      .exec<FileRecord>("SELECT * FROM files WHERE status = 'WRITING' ORDER BY id")
      .toArray();
  }

  fileEvents(tenantId: string, fileId: number): StoredEvent[] {
    return this.sql
      .exec<EventRecord>("SELECT * FROM events WHERE file_id = ? ORDER BY id", fileId)
      .toArray()
      .map((row) => storedEvent(tenantId, row));
  }

  /** Step 3: index the file's events, delete them here, mark the file DONE (caller's transaction). */
  finishFile(fileId: number, bytes: number): number {
    this.sql.exec(
      `UPDATE event_ids SET file_id = ?
        WHERE event_id IN (SELECT event_id FROM events WHERE file_id = ?)`,
      fileId,
      fileId,
    );
    const deleted = this.sql.exec("DELETE FROM events WHERE file_id = ?", fileId).rowsWritten;
    this.sql.exec("UPDATE files SET status = 'DONE', bytes = ? WHERE id = ?", bytes, fileId);
    return deleted;
  }

  /**
   * Forgets up to `limit` ids (the oldest) received before `before` whose
   * events are no longer hot, and files past it; returns how many ids went.
   */
  prune(before: number, limit: number): number {
    const forgotten = this.sql.exec(
      `DELETE FROM event_ids
        WHERE event_id IN (SELECT event_id FROM event_ids WHERE received_ms < ?
                            ORDER BY received_ms LIMIT ?)
          AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = event_ids.id)`,
      before,
      limit,
    ).rowsWritten;
    this.sql.exec(
      "DELETE FROM files WHERE status = 'DONE' AND last_received < ?",
      new Date(before).toISOString(),
    );
    return forgotten;
  }

  oldestIdMs(): number | null {
    return this.sql
      .exec<{ at: number | null }>("SELECT min(received_ms) AS at FROM event_ids")
      .one().at;
  }

  hasArchivable(): boolean {
    return (
      this.sql
        .exec(`SELECT 1 FROM events WHERE status IN ${FINISHED} AND file_id IS NULL LIMIT 1`)
        .toArray().length > 0
    );
  }
}
