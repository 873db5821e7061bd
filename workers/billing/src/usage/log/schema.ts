/*
 * The SQLite storage of one tenant shard's usage log (UsageLog object).
 *
 *   events         the hot log: every event not yet archived, keyed by our
 *                  id (UUID v7, so inserts append), with its status and
 *                  window; a partial index on `touched_at` over the
 *                  unfinished ones serves the re-drive, an index on the
 *                  client's eventId is the duplicate guard while it is hot,
 *                  and one on (timestamp, id) serves the listing, which
 *                  pages in event-time order.
 *   outbox         events accepted but not yet sent to usage-raw; written in
 *                  the same transaction as the event, deleted once sent.
 *   event_ids_<yyyymmdd>_<nnnn>
 *                  segments of the archived events' duplicate guard and
 *                  id -> file index, each of one UTC day of receipt and at
 *                  most SEGMENT_IDS ids: an 8-byte hash of the eventId (the
 *                  rowid), the archive file's number and a 4-byte check of
 *                  the eventId. Written when a file is finished (never on
 *                  the ingestion path); a day past the retention window
 *                  goes as DROP TABLEs. A hash hit whose check matches is
 *                  the id; rows of earlier releases have no check, and
 *                  their hits are confirmed against the file's own eventIds
 *                  (event-id-hash.ts). Objects of earlier releases also
 *                  have one unsegmented table per day (`event_ids_<yyyymmdd>`,
 *                  no filter), read until it ages out.
 *   id_filters     each segment's id count and filter (id-filter.ts), read
 *                  once when the object starts, written with its segment.
 *   id_collisions  the full eventId of an archived event whose hash its
 *                  day's table already held for another id (rare).
 *   files          the Parquet files written to R2 (WRITING until every event
 *                  of it is indexed and deleted here, then DONE), with the
 *                  range of their events' ids, receipt times and (files
 *                  finished since the listing pages by event time) event
 *                  times, which let the listing skip files.
 *   archive_dead_letters
 *                  archive files that could not be encoded (the same events
 *                  would fail every time), with the reason: their `files`
 *                  row is DEAD and their events stay in `events`, marked
 *                  with it, so that later files go on (archive-files.ts).
 *   event_ids      (objects of earlier releases only) the former index, one
 *                  row per eventId with our id; read until it has aged out,
 *                  then dropped.
 *
 * An object's storage outlives the code that created it, so a column added
 * later comes with a migration that runs when an object lacks it
 * (LOG_COLUMN_MIGRATIONS), and an index added later is created by
 * LOG_INDEXES on every start: the CREATE statements are the tables as first
 * released and are never edited.
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
CREATE TABLE IF NOT EXISTS id_filters (
  segment TEXT PRIMARY KEY,
  ids INTEGER NOT NULL,
  bits BLOB NOT NULL
);
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
CREATE TABLE IF NOT EXISTS archive_dead_letters (
  file_key TEXT PRIMARY KEY,
  first_id TEXT NOT NULL,
  last_id TEXT NOT NULL,
  events INTEGER NOT NULL,
  reason TEXT NOT NULL,
  failed_ms INTEGER NOT NULL
) WITHOUT ROWID;
`;

/** Columns added after a table was first released. */
export interface ColumnMigration {
  table: string;
  /** The column whose presence says the migration already ran. */
  column: string;
  statements: string;
}

export const LOG_COLUMN_MIGRATIONS: readonly ColumnMigration[] = [
  // Objects created before meters kept no properties: their events had none.
  {
    table: "events",
    column: "properties",
    statements: "ALTER TABLE events ADD COLUMN properties TEXT NOT NULL DEFAULT '{}'",
  },
  // The earliest and latest event time of a file, set when it is finished.
  // Files finished before have none: the listing reads them as "may hold
  // any time" and fills them in once it has read them.
  {
    table: "files",
    column: "first_timestamp",
    statements: "ALTER TABLE files ADD COLUMN first_timestamp TEXT",
  },
  {
    table: "files",
    column: "last_timestamp",
    statements: "ALTER TABLE files ADD COLUMN last_timestamp TEXT",
  },
];

/**
 * Indexes added after the tables were first released, created where
 * missing on every start (after the column migrations, so they may name
 * added columns). Creating one on an object's first start under new code
 * reads its hot events once.
 */
export const LOG_INDEXES = `
CREATE INDEX IF NOT EXISTS events_timestamp_idx ON events (timestamp, id);
`;

/** Creates the tables and indexes an object lacks and adds the columns its tables lack; safe on every start. */
export function applyLogSchema(sql: SqlStorage): void {
  sql.exec(SCHEMA);
  for (const migration of LOG_COLUMN_MIGRATIONS) {
    const columns = sql
      .exec<{ name: string }>("SELECT name FROM pragma_table_info(?)", migration.table)
      .toArray();
    if (!columns.some((column) => column.name === migration.column)) {
      sql.exec(migration.statements);
    }
  }
  sql.exec(LOG_INDEXES);
}
