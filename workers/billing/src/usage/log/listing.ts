import type { EventIdIndex } from "./id-index.ts";
import {
  type EventRecord,
  type FileRecord,
  type Location,
  type StoredEvent,
  storedEvent,
} from "./stored-events.ts";

/*
 * Reading the shard's events back for the API: one by its eventId, or a
 * page of them, hot first and then from the archive files that may hold
 * the rest.
 */

/** The hot event with this client eventId, or the archive files that may hold it. */
export function findEvent(
  sql: SqlStorage,
  index: EventIdIndex,
  tenantId: string,
  eventId: string,
): Location | undefined {
  const hot = sql
    .exec<EventRecord>("SELECT * FROM events WHERE event_id = ?", eventId)
    .toArray()[0];
  if (hot) return { kind: "hot", event: storedEvent(tenantId, hot) };
  const files = index.filesHolding(eventId);
  return files.length > 0 ? { kind: "archived", files } : undefined;
}

/** Hot events in id order after `afterId`, received in [from, to). */
export function hotEvents(
  sql: SqlStorage,
  tenantId: string,
  filter: { from: string; to: string; afterId: string; feature?: string; status?: string },
  limit: number,
): StoredEvent[] {
  return sql
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
export function filesFor(
  sql: SqlStorage,
  filter: { from: string; to: string; afterId: string },
): FileRecord[] {
  return sql
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
