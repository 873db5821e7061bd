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
