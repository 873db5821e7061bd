import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema/index.ts";

export function database(d1: D1Database) {
  return drizzle(d1, { schema });
}

export type Database = ReturnType<typeof database>;

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
