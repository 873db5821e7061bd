import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema/index.ts";

function createDatabase(d1: D1Database) {
  return drizzle(d1, { schema });
}

export type Database = ReturnType<typeof createDatabase>;

/**
 * One drizzle instance per D1 binding for the life of the isolate: building
 * one walks the whole schema (about as long as a whole request that does
 * no I/O), and the instance holds nothing but the binding.
 */
const databases = new WeakMap<D1Database, Database>();

export function database(d1: D1Database): Database {
  let db = databases.get(d1);
  if (!db) {
    db = createDatabase(d1);
    databases.set(d1, db);
  }
  return db;
}

export function nowIso(now: Date = new Date()): string {
  return now.toISOString();
}

/**
 * The `table.column` list of the UNIQUE constraint an insert or update
 * broke (`"users.email"`, `"tenants.slug"`), found in the D1 error message
 * anywhere along the cause chain (drizzle wraps driver errors), or
 * undefined for any other failure. Writes rely on the constraint instead of
 * a read-then-write check, which would race.
 */
export function uniqueViolation(error: unknown): string | undefined {
  for (let current: unknown = error, depth = 0; current && depth < 5; depth++) {
    const message = current instanceof Error ? current.message : String(current);
    const match = /UNIQUE constraint failed: ([\w.]+(?:, [\w.]+)*)/.exec(message);
    if (match) return match[1];
    current = current instanceof Error ? current.cause : undefined;
  }
  return undefined;
}

/** Rows changed by a D1 write (drizzle returns the driver's result for run()). */
export function changedRows(result: unknown): number {
  const meta = (result as { meta?: { changes?: number } } | undefined)?.meta;
  return meta?.changes ?? 0;
}
