import { propertiesField, type RawUsageMessage } from "@edge-platform/shared/queues/usage";
import {
  type EventRecord,
  parsedProperties,
  type StoredEvent,
  storedEvent,
} from "./stored-events.ts";

/*
 * The outbox (events accepted but not yet on usage-raw) and the re-drive of
 * events left unfinished, as the shard's alarm works through them.
 */

/** Due outbox entries as the usage-raw messages they become (only the columns a message carries). */
export function dueOutbox(
  sql: SqlStorage,
  tenantId: string,
  nowMs: number,
  limit: number,
): RawUsageMessage[] {
  return sql
    .exec<{
      id: string;
      eventId: string;
      feature: string;
      amount: number;
      timestamp: string;
      receivedAt: string;
      properties: string;
    }>(
      `SELECT e.id AS id, e.event_id AS eventId, e.feature AS feature, e.amount AS amount,
              e.timestamp AS timestamp, e.received_at AS receivedAt, e.properties AS properties
         FROM outbox o JOIN events e ON e.id = o.id
        WHERE o.next_attempt_at <= ? ORDER BY o.next_attempt_at LIMIT ?`,
      nowMs,
      limit,
    )
    .toArray()
    .map(({ properties, ...row }) => ({
      ...row,
      tenantId,
      ...propertiesField(parsedProperties(properties)),
    }));
}

/** Sent: the entries go (the event's own row stays, PENDING, until validation moves it). */
export function deleteOutbox(sql: SqlStorage, ids: string[]): void {
  if (ids.length === 0) return;
  sql.exec("DELETE FROM outbox WHERE id IN (SELECT value FROM json_each(?))", JSON.stringify(ids));
}

/** One more failed send: 2, 4, 8, 16 s of backoff. Returns the entries out of attempts. */
export function failOutbox(
  sql: SqlStorage,
  ids: string[],
  error: string,
  nowMs: number,
  maxAttempts: number,
): string[] {
  if (ids.length === 0) return [];
  sql.exec(
    `UPDATE outbox SET attempts = attempts + 1, last_error = ?,
            next_attempt_at = ? + (1000 << (attempts + 1))
      WHERE id IN (SELECT value FROM json_each(?))`,
    error.slice(0, 1000),
    nowMs,
    JSON.stringify(ids),
  );
  return sql
    .exec<{ id: string }>(
      "SELECT id FROM outbox WHERE id IN (SELECT value FROM json_each(?)) AND attempts >= ?",
      JSON.stringify(ids),
      maxAttempts,
    )
    .toArray()
    .map((row) => row.id);
}

export function nextOutboxAt(sql: SqlStorage): number | null {
  return sql.exec<{ at: number | null }>("SELECT min(next_attempt_at) AS at FROM outbox").one().at;
}

/** Unfinished events untouched since `before`, not waiting in the outbox; touched now. */
export function takeStranded(
  sql: SqlStorage,
  tenantId: string,
  window: { before: number; nowMs: number; limit: number },
): (StoredEvent & { periodStart: string | null; periodEnd: string | null })[] {
  const rows = sql
    .exec<EventRecord>(
      `SELECT * FROM events
        WHERE status IN ('PENDING', 'VALIDATED') AND touched_at < ?
          AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.id = events.id)
        ORDER BY touched_at LIMIT ?`,
      window.before,
      window.limit,
    )
    .toArray();
  if (rows.length > 0) {
    sql.exec(
      `UPDATE events SET touched_at = ? WHERE id IN (SELECT value FROM json_each(?))
         AND status IN ('PENDING', 'VALIDATED')`,
      window.nowMs,
      JSON.stringify(rows.map((row) => row.id)),
    );
  }
  return rows.map((row) => ({
    ...storedEvent(tenantId, row),
    periodStart: row.period_start,
    periodEnd: row.period_end,
  }));
}

export function oldestUnfinishedTouch(sql: SqlStorage): number | null {
  return sql
    .exec<{ at: number | null }>(
      "SELECT min(touched_at) AS at FROM events WHERE status IN ('PENDING', 'VALIDATED')",
    )
    .one().at;
}

export function unfinishedCount(sql: SqlStorage): number {
  return sql
    .exec<{ n: number }>(
      "SELECT count(*) AS n FROM events WHERE status IN ('PENDING', 'VALIDATED')",
    )
    .one().n;
}
