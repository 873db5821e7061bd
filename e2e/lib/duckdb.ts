/**
 * Reads Parquet files the way another engine would: DuckDB in Node, over
 * file bytes (written to a temporary folder, each under its own key so
 * Hive-style `tenant=.../date=...` folders survive) or paths on disk. The
 * SQL sees the files as one view, `usage_events`, and may also name them
 * by their keys or globs over them, relative paths such as
 * `usage/tenant=<id>/date=<day>/`: the temporary folder is DuckDB's file
 * search path.
 */

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";

export interface ParquetBytes {
  /** Where the file lives (an R2 key); its path under the temporary folder. */
  key: string;
  bytes: Uint8Array | ArrayBuffer;
}

export type ParquetSource = ParquetBytes | string;

export type DuckDbRow = Record<string, unknown>;

/** BIGINT and HUGEINT come back as bigint; a safe one becomes a number, so rows compare with JSON. */
function plain(value: unknown): unknown {
  if (typeof value === "bigint" && Number.isSafeInteger(Number(value))) return Number(value);
  return value;
}

function quote(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/**
 * Runs `sql` over the files as the view `usage_events` and returns its rows
 * as plain objects (integers as numbers, timestamps as Date, JSON as text).
 * With no files the view is missing and DuckDB's error says so.
 */
export async function queryParquet(
  files: readonly ParquetSource[],
  sql: string,
): Promise<DuckDbRow[]> {
  const folder = mkdtempSync(path.join(tmpdir(), "duckdb-parquet-"));
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  try {
    const paths = files.map((file, index) => {
      if (typeof file === "string") return file;
      const relative = path.normalize(file.key).replace(/^(\.\.(\/|$))+/, "");
      const target = path.join(folder, relative || `file-${index}.parquet`);
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(
        target,
        file.bytes instanceof Uint8Array ? file.bytes : new Uint8Array(file.bytes),
      );
      return target;
    });
    await connection.run(`set file_search_path = ${quote(folder)}`);
    if (paths.length > 0) {
      await connection.run(
        `create view usage_events as select * from read_parquet([${paths.map(quote).join(", ")}])`,
      );
    }
    const reader = await connection.runAndReadAll(sql);
    return reader
      .getRowObjectsJS()
      .map((row) =>
        Object.fromEntries(Object.entries(row).map(([name, value]) => [name, plain(value)])),
      );
  } finally {
    connection.closeSync();
    instance.closeSync();
    rmSync(folder, { recursive: true, force: true });
  }
}
