import { addMissingColumns } from "./column-migrations.ts";
import type { ColumnMigration } from "./schema.ts";

/*
 * The credit balance's own tables in the EntitlementCounter's SQLite (what
 * each holds: credit-balance.ts, credit-flush.ts, credit-take-backs.ts).
 * As in schema.ts, a CREATE statement is the table as first released and
 * is never edited; a column added later comes by a migration below.
 */

const CREDIT_TABLES = `
  CREATE TABLE IF NOT EXISTS credit_grants (
    id TEXT PRIMARY KEY,
    currency TEXT NOT NULL,
    priority INTEGER NOT NULL,
    expires_at TEXT,
    created_at TEXT NOT NULL,
    features TEXT,
    status TEXT NOT NULL,
    amount INTEGER NOT NULL,
    drawn INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS credit_draws (
    grant_id TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    feature_key TEXT NOT NULL,
    period_key TEXT NOT NULL,
    period_start TEXT NOT NULL,
    amount INTEGER NOT NULL,
    PRIMARY KEY (grant_id, subscription_id, feature_key, period_key)
  );
  CREATE TABLE IF NOT EXISTS credit_flushes (id TEXT PRIMARY KEY, draws TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS credit_event_draws (
    usage_event_id TEXT NOT NULL,
    grant_id TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    feature_key TEXT NOT NULL,
    period_key TEXT NOT NULL,
    period_start TEXT NOT NULL,
    amount INTEGER NOT NULL,
    PRIMARY KEY (usage_event_id, grant_id)
  );
  CREATE TABLE IF NOT EXISTS credit_rule (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    enabled INTEGER NOT NULL,
    threshold INTEGER NOT NULL,
    amount INTEGER NOT NULL,
    pending_grant_id TEXT,
    pending_currency TEXT,
    pending_started INTEGER NOT NULL DEFAULT 0
  );
  CREATE TABLE IF NOT EXISTS credit_write_offs (
    grant_id TEXT PRIMARY KEY,
    amount INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS credit_take_backs (
    id TEXT PRIMARY KEY,
    grant_id TEXT NOT NULL,
    credits INTEGER NOT NULL,
    ended INTEGER NOT NULL,
    reserved_at INTEGER NOT NULL
  );
`;

const CREDIT_COLUMN_MIGRATIONS: readonly ColumnMigration[] = [
  // Objects created before take-backs knew no written-off part of a grant.
  {
    table: "credit_grants",
    column: "written_off",
    statements: "ALTER TABLE credit_grants ADD COLUMN written_off INTEGER NOT NULL DEFAULT 0",
  },
  // Objects created before write-offs of returned cents flushed draws only.
  {
    table: "credit_flushes",
    column: "write_offs",
    statements: "ALTER TABLE credit_flushes ADD COLUMN write_offs TEXT",
  },
];

/** Creates the credit tables an object lacks and adds the columns they lack; safe on every start. */
export function applyCreditSchema(sql: SqlStorage): void {
  sql.exec(CREDIT_TABLES);
  addMissingColumns(sql, CREDIT_COLUMN_MIGRATIONS);
}
