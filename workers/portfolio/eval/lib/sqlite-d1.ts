/**
 * A D1 binding over Node's built-in SQLite (`node:sqlite`), so the answer
 * evaluation runs the worker's own pipeline, ingestion, drizzle queries and
 * D1 vector index in plain Node, in memory, without workerd or a network.
 * Implements the slice of D1 that drizzle and the vector index use:
 * prepare → bind → all / raw / run / first, and batch (in one transaction).
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";

type Row = Record<string, unknown>;

function toSqlite(value: unknown): SQLInputValue {
  if (value === undefined) return null;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value))
    return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  return value as SQLInputValue;
}

class BoundStatement {
  constructor(
    private readonly db: DatabaseSync,
    private readonly sql: string,
    private readonly params: SQLInputValue[] = [],
  ) {}

  bind(...params: unknown[]): BoundStatement {
    return new BoundStatement(this.db, this.sql, params.map(toSqlite));
  }

  private statement(): StatementSync {
    return this.db.prepare(this.sql);
  }

  private meta(changes = 0) {
    return { changes, duration: 0, rows_read: 0, rows_written: changes, last_row_id: 0 };
  }

  async all<T = Row>() {
    return {
      results: this.statement().all(...this.params) as T[],
      success: true,
      meta: this.meta(),
    };
  }

  async raw<T = unknown[]>(): Promise<T[]> {
    const statement = this.statement();
    statement.setReturnArrays(true);
    return statement.all(...this.params) as T[];
  }

  async first<T = Row>(column?: string): Promise<T | null> {
    const row = this.statement().get(...this.params) as Row | undefined;
    if (!row) return null;
    return (column ? row[column] : row) as T;
  }

  async run() {
    const statement = this.statement();
    if (statement.columns().length > 0)
      return { results: statement.all(...this.params), success: true, meta: this.meta() };
    const result = statement.run(...this.params);
    return { results: [], success: true, meta: this.meta(Number(result.changes)) };
  }
}

export class SqliteD1 {
  readonly sqlite = new DatabaseSync(":memory:");

  prepare(sql: string): BoundStatement {
    return new BoundStatement(this.sqlite, sql);
  }

  async batch(statements: BoundStatement[]) {
    this.sqlite.exec("BEGIN");
    try {
      const results = [];
      for (const statement of statements) results.push(await statement.run());
      this.sqlite.exec("COMMIT");
      return results;
    } catch (error) {
      this.sqlite.exec("ROLLBACK");
      throw error;
    }
  }

  async exec(sql: string) {
    this.sqlite.exec(sql);
    return { count: 1, duration: 0 };
  }

  /** Applies every migration of a wrangler migrations directory, in name order. */
  applyMigrations(directory: string): this {
    for (const file of readdirSync(directory)
      .filter((name) => name.endsWith(".sql"))
      .sort())
      this.sqlite.exec(readFileSync(path.join(directory, file), "utf8"));
    return this;
  }
}
