import type { ColumnMigration } from "./schema.ts";

/**
 * Adds the columns a table lacks, for the modules that create their own
 * tables (schema.ts does the same for the counter's): each migration runs
 * once, when its column is missing.
 */
export function addMissingColumns(sql: SqlStorage, migrations: readonly ColumnMigration[]): void {
  for (const migration of migrations) {
    const columns = sql
      .exec<{ name: string }>("SELECT name FROM pragma_table_info(?)", migration.table)
      .toArray();
    if (!columns.some((column) => column.name === migration.column)) {
      sql.exec(migration.statements);
    }
  }
}
