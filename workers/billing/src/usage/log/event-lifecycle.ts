import type {
  FlushClaim,
  RejectedUpdate,
  UsageLogRow,
  UsageLogStatus,
  ValidatedUpdate,
} from "@edge-platform/shared/usage-log/client";
import type { EventIdIndex } from "./id-index.ts";
import {
  type Decision,
  type EventRecord,
  type FilesRead,
  type ImportedEvent,
  type NewEvent,
  parsedProperties,
} from "./stored-events.ts";

/*
 * The hot log's events from ingestion to their end: stored with their
 * outbox entries, validated or rejected, claimed and finished by a counter
 * flush, reopened by an administrator. Synchronous statements; the caller
 * owns transactions.
 */

/**
 * Stores new events with their outbox entries (call inside one storage
 * transaction). An eventId held already, or repeated in the batch, is
 * skipped. Returns the eventIds stored, or the archive files to read
 * first (nothing written then).
 */
export function insertEvents(
  sql: SqlStorage,
  index: EventIdIndex,
  events: NewEvent[],
  at: { receivedAt: string; nowMs: number; firstSendAt: number },
  filesRead: FilesRead,
): Decision<string[]> {
  if (events.length === 0) return { done: [] };
  const decision = index.held(
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
  sql.exec(
    `INSERT INTO events (id, event_id, feature, amount, timestamp, received_at, metadata,
                         properties, touched_at)
     SELECT json_extract(value, '$.id'), json_extract(value, '$.eventId'),
            json_extract(value, '$.feature'), json_extract(value, '$.amount'),
            json_extract(value, '$.timestamp'), ?, json_extract(value, '$.metadata'),
            json_extract(value, '$.properties'), ?
       FROM json_each(?)`,
    at.receivedAt,
    at.nowMs,
    JSON.stringify(
      stored.map((event) => ({
        ...event,
        metadata: JSON.stringify(event.metadata ?? {}),
        properties: JSON.stringify(event.properties ?? {}),
      })),
    ),
  );
  sql.exec(
    `INSERT INTO outbox (id, next_attempt_at) SELECT value, ? FROM json_each(?)`,
    at.firstSendAt,
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
export function importEvents(
  sql: SqlStorage,
  index: EventIdIndex,
  events: ImportedEvent[],
  nowMs: number,
  filesRead: FilesRead,
): Decision<number> {
  const decision = index.held(
    events.map((event) => event.eventId),
    filesRead,
  );
  if ("unread" in decision) return decision;
  const held = decision.done;
  let stored = 0;
  for (const event of events) {
    if (held.has(event.eventId)) continue;
    held.add(event.eventId);
    insertImported(sql, event, nowMs);
    stored++;
  }
  return { done: stored };
}

function insertImported(sql: SqlStorage, event: ImportedEvent, nowMs: number): void {
  const finished = event.status === "AGGREGATED" || event.status === "REJECTED";
  sql.exec(
    `INSERT INTO events (id, event_id, feature, amount, timestamp, received_at, status, reason,
                         message, subscription_id, period_key, period_start, period_end,
                         validated_at, aggregated_at, metadata, properties, touched_at,
                         finished_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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
    JSON.stringify(event.properties ?? {}),
    nowMs,
    finished ? nowMs : null,
  );
}

export function logRows(sql: SqlStorage, tenantId: string, ids: string[]): UsageLogRow[] {
  if (ids.length === 0) return [];
  return sql
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
      properties: parsedProperties(row.properties),
    }));
}

/** PENDING -> VALIDATED with the window (a repeat changes nothing). */
export function markValidated(
  sql: SqlStorage,
  updates: ValidatedUpdate[],
  at: string,
  nowMs: number,
): number {
  if (updates.length === 0) return 0;
  return sql.exec(
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
export function markRejected(sql: SqlStorage, updates: RejectedUpdate[], nowMs: number): number {
  if (updates.length === 0) return 0;
  return sql.exec(
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
export function claimEvents(sql: SqlStorage, flushId: string, claims: FlushClaim[]) {
  const ids = JSON.stringify(claims.map((claim) => claim.id));
  sql.exec(
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
  const held = sql
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
export function finishClaim(
  sql: SqlStorage,
  flushId: string,
  ids: string[],
  at: string,
  nowMs: number,
): number {
  if (ids.length === 0) return 0;
  return sql.exec(
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
export function reopenEvent(sql: SqlStorage, id: string, nowMs: number, sendAt: number): boolean {
  const changed = sql.exec(
    `UPDATE events SET status = 'PENDING', reason = NULL, message = NULL, touched_at = ?,
            finished_at = NULL
      WHERE id = ? AND status = 'REJECTED'`,
    nowMs,
    id,
  ).rowsWritten;
  const exists = sql.exec("SELECT 1 FROM events WHERE id = ?", id).toArray().length > 0;
  if (!exists) return false;
  sql.exec(
    `INSERT INTO outbox (id, next_attempt_at) VALUES (?, ?)
     ON CONFLICT (id) DO UPDATE SET attempts = 0, next_attempt_at = excluded.next_attempt_at, last_error = NULL`,
    id,
    sendAt,
  );
  return changed > 0 || exists;
}
