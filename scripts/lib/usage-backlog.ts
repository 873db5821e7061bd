/**
 * How many usage events in a local billing database are still in flight
 * (PENDING or VALIDATED), read straight from the D1 file that `wrangler
 * dev` keeps under its persist directory. `npm run dev` uses it to wait for
 * the queues to drain before it stops (the local queues hold their messages
 * in memory only).
 */
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";

function d1Files(persistTo: string): string[] {
  const dir = path.join(persistTo, "v3", "d1", "miniflare-D1DatabaseObject");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((file) => file.endsWith(".sqlite"))
    .map((file) => path.join(dir, file));
}

/** Unfinished usage events, or undefined when no local billing database is found. */
export function usageEventsInFlight(persistTo: string): number | undefined {
  for (const file of d1Files(persistTo)) {
    let db: DatabaseSync | undefined;
    try {
      db = new DatabaseSync(file, { readOnly: true });
      const table = db
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'usage_events'")
        .get();
      if (!table) continue;
      const row = db
        .prepare("SELECT count(*) AS n FROM usage_events WHERE status IN ('PENDING', 'VALIDATED')")
        .get() as { n: number } | undefined;
      return Number(row?.n ?? 0);
    } catch {
      // busy or not a database we know: try the next one
    } finally {
      db?.close();
    }
  }
  return undefined;
}
