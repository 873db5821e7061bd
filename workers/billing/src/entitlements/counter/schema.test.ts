import { describe, expect, it } from "vitest";
import { applyCounterSchema, COLUMN_MIGRATIONS, COUNTER_TABLES } from "./schema.ts";

/**
 * Just enough of SqlStorage to follow a schema: it keeps each table's
 * columns from CREATE TABLE and ALTER TABLE, answers pragma_table_info, and
 * refuses a column that is already there, as SQLite does.
 */
class SchemaOnlySql {
  readonly tables = new Map<string, string[]>();
  readonly statements: string[] = [];

  exec(query: string, ...bindings: unknown[]) {
    if (query.includes("pragma_table_info")) {
      const columns = this.tables.get(String(bindings[0])) ?? [];
      return rows(columns.map((name) => ({ name })));
    }
    for (const statement of query.split(";").map((part) => part.trim())) {
      if (statement) this.apply(statement);
    }
    return rows([]);
  }

  private apply(statement: string): void {
    this.statements.push(statement.replace(/\s+/g, " "));
    const created = /^CREATE TABLE IF NOT EXISTS (\w+) \(([\s\S]*)\)$/.exec(statement);
    if (created) {
      const [, table, body] = created as unknown as [string, string, string];
      if (!this.tables.has(table)) this.tables.set(table, columnsOf(body));
      return;
    }
    const altered = /^ALTER TABLE (\w+) ADD COLUMN (\w+)/.exec(statement);
    if (altered) {
      const [, table, column] = altered as unknown as [string, string, string];
      const columns = this.tables.get(table);
      if (!columns) throw new Error(`no such table: ${table}`);
      if (columns.includes(column)) throw new Error(`duplicate column name: ${column}`);
      columns.push(column);
      return;
    }
    if (!statement.startsWith("CREATE INDEX IF NOT EXISTS")) {
      throw new Error(`statement this fake does not know: ${statement}`);
    }
  }
}

function rows<T>(values: T[]) {
  return { toArray: () => values, one: () => values[0] };
}

/** The column names of a CREATE TABLE body (table constraints left out). */
function columnsOf(body: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (const char of body) {
    if (char === "(") depth++;
    if (char === ")") depth--;
    if (char === "," && depth === 0) {
      parts.push(current);
      current = "";
    } else current += char;
  }
  parts.push(current);
  return parts
    .map((part) => part.trim().split(/\s+/)[0] ?? "")
    .filter((name) => name && !["PRIMARY", "UNIQUE", "FOREIGN", "CHECK"].includes(name));
}

function applyTo(sql: SchemaOnlySql): void {
  applyCounterSchema(sql as unknown as SqlStorage);
}

const alters = (sql: SchemaOnlySql) =>
  sql.statements.filter((statement) => statement.startsWith("ALTER TABLE"));

describe("EntitlementCounter schema", () => {
  it("gives a new object every table with its later columns", () => {
    const sql = new SchemaOnlySql();
    applyTo(sql);
    expect([...sql.tables.keys()]).toEqual([
      "meta",
      "counters",
      "window_totals",
      "flushes",
      "recorded_events",
      "pending_events",
      "consume_requests",
    ]);
    expect(sql.tables.get("flushes")).toEqual([
      "id",
      "deltas",
      "claimed_at",
      "attempts",
      "last_error",
      "claims",
      "meter_groups",
    ]);
    expect(sql.tables.get("pending_events")).toContain("meter");
    expect(sql.tables.get("consume_requests")).toEqual([
      "request_id",
      "result",
      "recorded_at",
      "request_hash",
      "correlation_id",
    ]);
  });

  it("changes nothing on the next start of a migrated object", () => {
    const sql = new SchemaOnlySql();
    applyTo(sql);
    const tables = structuredClone(sql.tables);
    applyTo(sql);
    expect(sql.tables).toEqual(tables);
    expect(alters(sql)).toHaveLength(5);
  });

  it("adds only the columns an older object lacks", () => {
    const sql = new SchemaOnlySql();
    sql.exec(COUNTER_TABLES);
    sql.exec("ALTER TABLE flushes ADD COLUMN claims TEXT");
    applyTo(sql);
    expect(alters(sql)).toEqual([
      "ALTER TABLE flushes ADD COLUMN claims TEXT",
      "ALTER TABLE consume_requests ADD COLUMN request_hash TEXT",
      "ALTER TABLE consume_requests ADD COLUMN correlation_id TEXT",
      "ALTER TABLE pending_events ADD COLUMN meter TEXT",
      "ALTER TABLE flushes ADD COLUMN meter_groups TEXT",
    ]);
    expect(sql.tables.get("consume_requests")).toContain("correlation_id");
  });

  it("migrates only tables it creates, each by a column its statements add", () => {
    const created = new SchemaOnlySql();
    created.exec(COUNTER_TABLES);
    for (const migration of COLUMN_MIGRATIONS) {
      expect(created.tables.get(migration.table)).not.toContain(migration.column);
      const migrated = new SchemaOnlySql();
      migrated.exec(COUNTER_TABLES);
      migrated.exec(migration.statements);
      expect(migrated.tables.get(migration.table)).toContain(migration.column);
    }
  });
});
