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
 * page of them in event-time order (timestamp, then our id): the hot ones,
 * and the archive files that may hold the rest (read by the caller).
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

/** A position in the listing's order: an event's time, then our id. */
export interface ListPosition {
  timestamp: string;
  id: string;
}

/**
 * What a page of the listing asks for: event time in [from, to), receipt
 * in [receivedFrom, receivedTo) (ISO strings, which order as the times
 * they name), after the cursor's position (null: from the start).
 */
export interface ListFilter {
  from: string;
  to: string;
  receivedFrom: string;
  receivedTo: string;
  after: ListPosition | null;
  feature?: string;
  status?: string;
}

/** The listing's order: event time, ties by our id. */
export function byPosition(a: ListPosition, b: ListPosition): number {
  if (a.timestamp !== b.timestamp) return a.timestamp < b.timestamp ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Whether an event (read from an archive file) belongs on the page `filter` asks for. */
export function matchesListFilter(event: StoredEvent, filter: ListFilter): boolean {
  return (
    event.timestamp >= filter.from &&
    event.timestamp < filter.to &&
    event.receivedAt >= filter.receivedFrom &&
    event.receivedAt < filter.receivedTo &&
    (filter.after === null || byPosition(event, filter.after) > 0) &&
    (!filter.feature || event.feature === filter.feature) &&
    (!filter.status || event.status === filter.status)
  );
}

/** The lowest event time a page can hold: its `from`, or its cursor's time if later. */
export function lowestTime(filter: ListFilter): string {
  return filter.after && filter.after.timestamp > filter.from
    ? filter.after.timestamp
    : filter.from;
}

/**
 * The hot page: a range of events_timestamp_idx from the lowest time, in
 * its order, so SQLite stops after `limit` rows. The row value comparison
 * resumes exactly after the cursor among events of the same time.
 */
export const HOT_PAGE_SQL = `SELECT * FROM events
  WHERE timestamp >= ? AND timestamp < ? AND (timestamp, id) > (?, ?)
    AND received_at >= ? AND received_at < ?
    AND (? IS NULL OR feature = ?) AND (? IS NULL OR status = ?)
  ORDER BY timestamp, id LIMIT ?`;

/** Hot events in the listing's order after the cursor, matching the filter. */
export function hotEvents(
  sql: SqlStorage,
  tenantId: string,
  filter: ListFilter,
  limit: number,
): StoredEvent[] {
  return sql
    .exec<EventRecord>(
      HOT_PAGE_SQL,
      lowestTime(filter),
      filter.to,
      filter.after?.timestamp ?? "",
      filter.after?.id ?? "",
      filter.receivedFrom,
      filter.receivedTo,
      filter.feature ?? null,
      filter.feature ?? null,
      filter.status ?? null,
      filter.status ?? null,
      limit,
    )
    .toArray()
    .map((row) => storedEvent(tenantId, row));
}

/**
 * Archive files (finished ones: a file being written still has its events
 * hot) that may hold events of the page, those without a known range of
 * event times (finished by earlier code) first, then by their earliest
 * event time: the reader stops at the first file that starts after the
 * events it already has.
 */
export function filesFor(sql: SqlStorage, filter: ListFilter): FileRecord[] {
  return sql
    .exec<FileRecord>(
      `SELECT * FROM files
        WHERE status = 'DONE' AND last_received >= ? AND first_received < ?
          AND (first_timestamp IS NULL OR (last_timestamp >= ? AND first_timestamp < ?))
        ORDER BY first_timestamp IS NOT NULL, first_timestamp, id`,
      filter.receivedFrom,
      filter.receivedTo,
      lowestTime(filter),
      filter.to,
    )
    .toArray();
}

/**
 * Records the range of event times of a file finished before it was kept,
 * once the listing has read the file (later pages can then skip it).
 */
export function noteFileTimes(
  sql: SqlStorage,
  fileId: number,
  times: { first: string; last: string },
): void {
  sql.exec(
    `UPDATE files SET first_timestamp = ?, last_timestamp = ?
      WHERE id = ? AND status = 'DONE' AND first_timestamp IS NULL`,
    times.first,
    times.last,
    fileId,
  );
}
