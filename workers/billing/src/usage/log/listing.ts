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

/** Before every event: where a file of unknown times may start. */
export const BEFORE_ALL: ListPosition = { timestamp: "", id: "" };

/** The nil UUID, below every id we give (UUID v7 starts with the time). */
const NIL_ID = "00000000-0000-0000-0000-000000000000";

/** The lowest position an archive file's events can have: its earliest event time and its lowest id. */
export function fileStart(file: FileRecord): ListPosition {
  return file.first_timestamp === null
    ? BEFORE_ALL
    : { timestamp: file.first_timestamp, id: file.first_id };
}

/**
 * The position a page starts after: its cursor, or (with no cursor, or one
 * before `from`) a position before every event at `from`. Written as a
 * cursor, it names the same page.
 */
export function pageStart(filter: ListFilter): ListPosition {
  return filter.after && filter.after.timestamp >= filter.from
    ? filter.after
    : { timestamp: filter.from, id: NIL_ID };
}

/**
 * The position right before `position` (the same time, the id one less),
 * so that a page after it starts with an event at `position` itself; null
 * when there is none to name.
 */
export function positionBefore(position: ListPosition): ListPosition | null {
  const hex = position.id.replace(/-/g, "");
  if (!/^[0-9a-f]{32}$/.test(hex) || /^0+$/.test(hex)) return null;
  const less = (BigInt(`0x${hex}`) - 1n).toString(16).padStart(32, "0");
  const id = `${less.slice(0, 8)}-${less.slice(8, 12)}-${less.slice(12, 16)}-${less.slice(16, 20)}-${less.slice(20)}`;
  return { timestamp: position.timestamp, id };
}

/**
 * Where a listing cut short before `stop` goes on: right before `stop`, so
 * that the next page starts with whatever is there; the page's own start
 * when that would not move past it.
 */
export function resumeBefore(stop: ListPosition, start: ListPosition): ListPosition {
  const before = positionBefore(stop);
  return before && movesPast(stop, start) ? before : start;
}

/** Whether a listing cut short before `stop` goes on past `start`. */
export function movesPast(stop: ListPosition, start: ListPosition): boolean {
  const before = positionBefore(stop);
  return before !== null && byPosition(before, start) > 0;
}
