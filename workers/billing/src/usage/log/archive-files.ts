import type { EventProperties } from "@edge-platform/shared/billing/meter";
import type { EventIdIndex } from "./id-index.ts";
import {
  FINISHED,
  type FileRecord,
  type NewFile,
  parsedMetadata,
  parsedProperties,
  STORED_EVENT_COLUMNS,
  type StoredEvent,
  type StoredEventRow,
  storedEvent,
} from "./stored-events.ts";

/*
 * Moving finished events out of the hot log into Parquet files on R2:
 * choose them, mark them with the file's intent (step 1), read them for the
 * writer (step 2, the caller's upload), then index and delete them (step 3).
 */

/**
 * A file's events, bound as (first id, last id, file number): its marked
 * rows, searched within its id range so that the primary key finds them.
 */
const OF_FILE = "id BETWEEN ? AND ? AND file_id = ?";

/**
 * Finished events not yet in a file, finished before `settledBefore`,
 * oldest first: only what choosing a file needs (the file reads its rows
 * once, in `fileEvents`).
 */
export function archivable(
  sql: SqlStorage,
  settledBefore: number,
  limit: number,
): { id: string; received_at: string }[] {
  return sql
    .exec<{ id: string; received_at: string }>(
      `SELECT id, received_at FROM events
        WHERE status IN ${FINISHED} AND file_id IS NULL AND finished_at < ?
        ORDER BY id LIMIT ?`,
      settledBefore,
      limit,
    )
    .toArray();
}

export function hasArchivable(sql: SqlStorage): boolean {
  return (
    sql
      .exec(`SELECT 1 FROM events WHERE status IN ${FINISHED} AND file_id IS NULL LIMIT 1`)
      .toArray().length > 0
  );
}

/**
 * Step 1 of a file: the intent, with its events marked, in one transaction
 * (caller's). The events are those `archivable` chose: finished before
 * `choice.settledBefore`, received on the file's day, and (unless the file
 * is full) before `choice.closedBefore`, with ids from the file's first to
 * its last. They are marked by that range and rule, in one pass; a count
 * other than `file.events` throws, and the transaction with it.
 */
export function startFile(
  sql: SqlStorage,
  file: NewFile,
  choice: { settledBefore: number; closedBefore: string; full: boolean },
  nowMs: number,
): number {
  const id = sql
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
  const marked = sql.exec(
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

export function writingFiles(sql: SqlStorage): FileRecord[] {
  return sql.exec<FileRecord>("SELECT * FROM files WHERE status = 'WRITING' ORDER BY id").toArray();
}

/**
 * A file's events hold ids from its first to its last: the range keeps
 * this a primary-key search. Only the columns a file holds are read, and
 * rows with the same metadata (or properties) text share one parsed object
 * (read-only here), which the Parquet writer then serialises once.
 */
export function fileEvents(
  sql: SqlStorage,
  tenantId: string,
  file: Pick<FileRecord, "id" | "first_id" | "last_id">,
): StoredEvent[] {
  const metadataOf = new Map<string, Record<string, unknown>>();
  const propertiesOf = new Map<string, EventProperties>();
  return sql
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
      let properties = propertiesOf.get(row.properties);
      if (!properties) {
        properties = parsedProperties(row.properties);
        propertiesOf.set(row.properties, properties);
      }
      return storedEvent(tenantId, row, metadata, properties);
    });
}

/**
 * Step 3: index the file's events in its day's table, delete them here,
 * mark the file DONE with the range of its events' times (which lets the
 * listing skip it), in the caller's transaction. Returns how many events
 * left the hot log.
 */
export function finishFile(
  sql: SqlStorage,
  index: EventIdIndex,
  fileId: number,
  bytes: number,
): number {
  const file = sql
    .exec<{ day: string; first_id: string; last_id: string }>(
      "SELECT day, first_id, last_id FROM files WHERE id = ?",
      fileId,
    )
    .one();
  const rows = sql
    .exec<{ event_id: string; timestamp: string }>(
      `SELECT event_id, timestamp FROM events WHERE ${OF_FILE}`,
      file.first_id,
      file.last_id,
      fileId,
    )
    .toArray();
  index.addFile(
    fileId,
    file.day,
    rows.map((row) => row.event_id),
  );
  let first: string | null = null;
  let last: string | null = null;
  for (const { timestamp } of rows) {
    if (first === null || timestamp < first) first = timestamp;
    if (last === null || timestamp > last) last = timestamp;
  }
  const deleted = sql.exec(
    `DELETE FROM events WHERE ${OF_FILE}`,
    file.first_id,
    file.last_id,
    fileId,
  ).rowsWritten;
  sql.exec(
    `UPDATE files SET status = 'DONE', bytes = ?, first_timestamp = ?, last_timestamp = ?
      WHERE id = ?`,
    bytes,
    first,
    last,
    fileId,
  );
  return deleted;
}

/**
 * A file that cannot be encoded (a deterministic failure: the same events
 * fail every time) leaves the way: it is recorded with its reason and
 * marked DEAD, in the caller's transaction. Its events stay hot, still
 * marked with it, so that no later file takes them and none waits for
 * them. They are kept past the retention window too: the hot log is their
 * only copy (nothing of them reached R2), while retention forgets only the
 * index of events R2 holds; so they are listed and found as hot events,
 * and a resent eventId of theirs stays a duplicate.
 */
export function deadLetterFile(
  sql: SqlStorage,
  file: Pick<FileRecord, "id" | "key" | "first_id" | "last_id">,
  failure: { events: number; reason: string; nowMs: number },
): void {
  sql.exec(
    `INSERT INTO archive_dead_letters (file_key, first_id, last_id, events, reason, failed_ms)
     VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (file_key) DO UPDATE SET reason = excluded.reason, failed_ms = excluded.failed_ms`,
    file.key,
    file.first_id,
    file.last_id,
    failure.events,
    failure.reason,
    failure.nowMs,
  );
  sql.exec("UPDATE files SET status = 'DEAD' WHERE id = ?", file.id);
}

export interface ArchiveDeadLetter extends Record<string, SqlStorageValue> {
  file_key: string;
  first_id: string;
  last_id: string;
  events: number;
  reason: string;
  failed_ms: number;
}

export function archiveDeadLetters(sql: SqlStorage): ArchiveDeadLetter[] {
  return sql
    .exec<ArchiveDeadLetter>("SELECT * FROM archive_dead_letters ORDER BY failed_ms, file_key")
    .toArray();
}
