import { DurableObject } from "cloudflare:workers";
import { z } from "zod";

/*
 * UsageDedupWindow: one object per tenant, the first layer of duplicate
 * protection at ingestion. It remembers the eventIds the tenant's batches
 * committed during the last 24 hours, so a resubmitted batch is answered
 * "duplicate" without touching D1. Ids are recorded only after the batch's
 * D1 commit (an event that was rejected, or whose batch failed, can be sent
 * again). The window is a fast filter, not the guarantee: the unique
 * (tenant, eventId) in D1 and the status check at validation stand behind it.
 */

export const DEDUP_WINDOW_MS = 86_400_000;
const PRUNE_INTERVAL_MS = 3_600_000;

const eventIds = z.array(z.string().min(1).max(255)).max(1000);

export class UsageDedupWindow extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS seen_events (
        event_id TEXT PRIMARY KEY,
        expires_at INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS seen_events_expiry_idx ON seen_events (expires_at);
    `);
  }

  /** The ids among `ids` that were committed within the window. */
  seen(raw: string[], nowMs: number = Date.now()): string[] {
    const ids = eventIds.parse(raw);
    if (ids.length === 0) return [];
    // One statement for the whole batch: a statement per id cost more than
    // the lookups themselves (the batch is up to 1,000 ids).
    return this.sql
      .exec<{ event_id: string }>(
        `SELECT event_id FROM seen_events
          WHERE event_id IN (SELECT value FROM json_each(?)) AND expires_at > ?`,
        JSON.stringify(ids),
        nowMs,
      )
      .toArray()
      .map((row) => row.event_id);
  }

  /** Records committed ids for the next 24 hours. */
  async remember(raw: string[], nowMs: number = Date.now()): Promise<void> {
    const ids = eventIds.parse(raw);
    const expiresAt = nowMs + DEDUP_WINDOW_MS;
    if (ids.length > 0) {
      this.sql.exec(
        `INSERT INTO seen_events (event_id, expires_at)
         SELECT value, ? FROM json_each(?) WHERE true
         ON CONFLICT (event_id) DO UPDATE SET expires_at = excluded.expires_at`,
        expiresAt,
        JSON.stringify(ids),
      );
    }
    if ((await this.ctx.storage.getAlarm()) === null) {
      await this.ctx.storage.setAlarm(nowMs + PRUNE_INTERVAL_MS);
    }
  }

  override async alarm(): Promise<void> {
    this.sql.exec("DELETE FROM seen_events WHERE expires_at <= ?", Date.now());
    const left = this.sql.exec("SELECT 1 FROM seen_events LIMIT 1").toArray().length;
    if (left > 0) await this.ctx.storage.setAlarm(Date.now() + PRUNE_INTERVAL_MS);
  }
}

/** The tenant's window: one object per tenant, addressed by the tenant id. */
export function usageDedupWindow(
  namespace: DurableObjectNamespace<UsageDedupWindow>,
  tenantId: string,
) {
  const stub = namespace.get(namespace.idFromName(tenantId));
  return {
    seen: (ids: string[]): Promise<string[]> => stub.seen(ids),
    remember: (ids: string[]): Promise<void> => stub.remember(ids),
  };
}
