/*
 * The EntitlementCounter's own SQLite tables (entitlement-counter.ts says
 * what each holds). The modules beside it create the tables they keep
 * (credit grants, tenant event outbox, progressive periods, usage hours).
 *
 * An object's storage outlives the code that created it, so a column added
 * later is added by a migration that runs when an object lacks it: the
 * CREATE statements are the tables as first released and are never edited.
 */

export const COUNTER_TABLES = `
  CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS counters (
    subscription_id TEXT NOT NULL,
    feature_key TEXT NOT NULL,
    period_key TEXT NOT NULL,
    period_start TEXT NOT NULL,
    period_end TEXT,
    used INTEGER NOT NULL,
    unflushed INTEGER NOT NULL DEFAULT 0,
    last_event_at TEXT,
    PRIMARY KEY (subscription_id, feature_key, period_key)
  );
  CREATE INDEX IF NOT EXISTS counters_unflushed_idx ON counters (unflushed) WHERE unflushed > 0;
  CREATE TABLE IF NOT EXISTS window_totals (
    feature_key TEXT NOT NULL,
    period_key TEXT NOT NULL,
    period_end TEXT,
    used INTEGER NOT NULL,
    PRIMARY KEY (feature_key, period_key)
  );
  CREATE TABLE IF NOT EXISTS flushes (
    id TEXT PRIMARY KEY,
    deltas TEXT NOT NULL,
    claimed_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
  );
  CREATE TABLE IF NOT EXISTS recorded_events (
    event_id TEXT PRIMARY KEY,
    recorded_at INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS pending_events (
    usage_event_id TEXT PRIMARY KEY,
    subscription_id TEXT NOT NULL,
    feature_key TEXT NOT NULL,
    period_key TEXT NOT NULL,
    period_start TEXT NOT NULL,
    period_end TEXT,
    amount INTEGER NOT NULL,
    occurred_at TEXT NOT NULL,
    flush_id TEXT
  );
  CREATE INDEX IF NOT EXISTS pending_events_flush_idx ON pending_events (flush_id);
  CREATE TABLE IF NOT EXISTS consume_requests (
    request_id TEXT PRIMARY KEY,
    result TEXT NOT NULL,
    recorded_at INTEGER NOT NULL
  );
`;

/** Columns added after a table was first released. */
export interface ColumnMigration {
  table: string;
  /** The column whose presence says the migration already ran. */
  column: string;
  statements: string;
}

export const COLUMN_MIGRATIONS: readonly ColumnMigration[] = [
  // Objects created before the usage pipeline have a flushes table without claims.
  {
    table: "flushes",
    column: "claims",
    statements: "ALTER TABLE flushes ADD COLUMN claims TEXT",
  },
  // Objects created before keyed consumes kept only the result of a request id.
  {
    table: "consume_requests",
    column: "request_hash",
    statements: `
      ALTER TABLE consume_requests ADD COLUMN request_hash TEXT;
      ALTER TABLE consume_requests ADD COLUMN correlation_id TEXT;
    `,
  },
  // A logged event's meter contribution (features with a meter).
  {
    table: "pending_events",
    column: "meter",
    statements: "ALTER TABLE pending_events ADD COLUMN meter TEXT",
  },
  // Meter group summaries of consumes, carried by the flush that took them.
  {
    table: "flushes",
    column: "meter_groups",
    statements: "ALTER TABLE flushes ADD COLUMN meter_groups TEXT",
  },
];

/** Creates the tables an object lacks and adds the columns its tables lack; safe on every start. */
export function applyCounterSchema(sql: SqlStorage): void {
  sql.exec(COUNTER_TABLES);
  for (const migration of COLUMN_MIGRATIONS) {
    const columns = sql
      .exec<{ name: string }>("SELECT name FROM pragma_table_info(?)", migration.table)
      .toArray();
    if (!columns.some((column) => column.name === migration.column)) {
      sql.exec(migration.statements);
    }
  }
}
