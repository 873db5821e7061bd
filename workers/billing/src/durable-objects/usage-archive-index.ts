import { DurableObject } from "cloudflare:workers";

/*
 * UsageArchiveIndex: one object per tenant, mapping each archived eventId
 * to the R2 object (archive part) that holds it, so that
 * GET /usage/events/:eventId still finds an event after it left D1. It
 * lives in the tenant's own Durable Object storage rather than in the one
 * D1 database, which is what the archive relieves. Adding is an upsert:
 * a part indexed twice (a resumed archive run) changes nothing.
 */
export class UsageArchiveIndex extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS parts (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
      CREATE TABLE IF NOT EXISTS archived (event_id TEXT PRIMARY KEY, part_id INTEGER NOT NULL);
    `);
  }

  /** Records that `eventIds` are in the part `key`. */
  add(key: string, eventIds: string[]): number {
    this.sql.exec("INSERT INTO parts (key) VALUES (?) ON CONFLICT DO NOTHING", key);
    const partId = this.sql
      .exec<{ id: number }>("SELECT id FROM parts WHERE key = ?", key)
      .one().id;
    for (const eventId of eventIds) {
      this.sql.exec(
        "INSERT INTO archived (event_id, part_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
        eventId,
        partId,
      );
    }
    return eventIds.length;
  }

  /** The key of the part holding `eventId`, or null. */
  find(eventId: string): string | null {
    return (
      this.sql
        .exec<{ key: string }>(
          "SELECT p.key AS key FROM archived a JOIN parts p ON p.id = a.part_id WHERE a.event_id = ?",
          eventId,
        )
        .toArray()[0]?.key ?? null
    );
  }
}

/** The tenant's archive index. */
export function usageArchiveIndex(
  namespace: DurableObjectNamespace<UsageArchiveIndex>,
  tenantId: string,
) {
  const stub = namespace.get(namespace.idFromName(tenantId));
  return {
    add: (key: string, eventIds: string[]): Promise<number> => stub.add(key, eventIds),
    find: (eventId: string): Promise<string | null> => stub.find(eventId),
  };
}
