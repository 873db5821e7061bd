/**
 * How many usage events in a local billing stack are still in flight
 * (PENDING or VALIDATED), read straight from the SQLite files of the
 * tenants' UsageLog Durable Objects that `wrangler dev` keeps under its
 * persist directory. `npm run dev` uses it to wait for the queues to drain
 * before it stops (the local queues hold their messages in memory only).
 */
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";

function usageLogFiles(persistTo: string): string[] {
  const root = path.join(persistTo, "v3", "do");
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((dir) => dir.endsWith("UsageLog"))
    .flatMap((dir) =>
      readdirSync(path.join(root, dir))
        .filter((file) => file.endsWith(".sqlite"))
        .map((file) => path.join(root, dir, file)),
    );
}

/** Unfinished usage events, or undefined when no local usage log is found. */
export function usageEventsInFlight(persistTo: string): number | undefined {
  const files = usageLogFiles(persistTo);
  if (files.length === 0) return undefined;
  let inFlight = 0;
  for (const file of files) {
    let db: DatabaseSync | undefined;
    try {
      db = new DatabaseSync(file, { readOnly: true });
      const table = db
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'")
        .get();
      if (!table) continue;
      const row = db
        .prepare("SELECT count(*) AS n FROM events WHERE status IN ('PENDING', 'VALIDATED')")
        .get() as { n: number } | undefined;
      inFlight += Number(row?.n ?? 0);
    } catch {
      // busy or not a database we know: skip it
    } finally {
      db?.close();
    }
  }
  return inFlight;
}
