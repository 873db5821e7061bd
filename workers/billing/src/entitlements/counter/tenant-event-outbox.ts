import type { NewTenantEvent, TenantEvent } from "../../notifications/index.ts";
import { emitTenantEvents, tenantEvent } from "../../notifications/index.ts";

/*
 * The EntitlementCounter's tenant events (usage.threshold_reached,
 * quota.exhausted), kept in the object's SQLite from the moment they are
 * decided until the tenant-events queue has taken them.
 *
 * `add` runs inside the counter's synchronous step: the row is written
 * together with the count that caused it, and its primary key is the
 * event's deterministic id (one per alert and window, one per feature and
 * window), so however many counts cross a threshold, one row exists: that
 * row IS the "already fired in this window" memory. `send` hands unsent
 * rows to the queue and marks them sent; when the queue refuses, the rows
 * stay and the counter's alarm sends them later with backoff, so nothing is
 * lost. A crash between the send and the mark re-sends the same event with
 * the same id, which the receiver dedups. Rows are kept until their window
 * is over (lifetime windows: for good), then pruned.
 */

const SEND_BATCH = 100;
const RETRY_MAX_MS = 60_000;
/** Sent rows are kept this long past their window's end (they are the once-per-window memory). */
const KEEP_AFTER_WINDOW_MS = 86_400_000;

interface OutboxRow extends Record<string, SqlStorageValue> {
  id: string;
  body: string;
}

export class TenantEventOutbox {
  private sending: Promise<number> | null = null;

  constructor(
    private readonly sql: SqlStorage,
    /** Read on every send, so a binding swapped at run time is used. */
    private readonly queue: () => Queue<TenantEvent> | undefined,
  ) {
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS tenant_event_outbox (
        id TEXT PRIMARY KEY,
        type TEXT NOT NULL,
        body TEXT NOT NULL,
        window_end TEXT,
        created_at INTEGER NOT NULL,
        sent_at INTEGER,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_error TEXT
      );
      CREATE INDEX IF NOT EXISTS tenant_event_outbox_unsent_idx
        ON tenant_event_outbox (created_at) WHERE sent_at IS NULL;
    `);
  }

  /** Synchronous. Stores each event unless its id is already here; returns how many were new. */
  add(events: readonly (NewTenantEvent & { id: string })[], windowEnd: string | null): number {
    let added = 0;
    for (const event of events) {
      const cursor = this.sql.exec(
        `INSERT INTO tenant_event_outbox (id, type, body, window_end, created_at)
         VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
        event.id,
        event.type,
        JSON.stringify(tenantEvent(event)),
        windowEnd,
        Date.now(),
      );
      added += cursor.rowsWritten > 0 ? 1 : 0;
    }
    return added;
  }

  hasUnsent(): boolean {
    return (
      this.sql.exec("SELECT 1 FROM tenant_event_outbox WHERE sent_at IS NULL LIMIT 1").toArray()
        .length > 0
    );
  }

  /** Backoff for the next try after failed sends: 1 s, 2 s, 4 s ... up to a minute. */
  retryDelayMs(): number {
    const attempts =
      this.sql
        .exec<{ attempts: number | null }>(
          "SELECT max(attempts) AS attempts FROM tenant_event_outbox WHERE sent_at IS NULL",
        )
        .one().attempts ?? 0;
    return Math.min(RETRY_MAX_MS, 1000 * 2 ** Math.min(Math.max(0, attempts - 1), 16));
  }

  /** Sends every unsent event (one sender at a time); returns how many were sent. Never throws. */
  send(): Promise<number> {
    this.sending ??= this.sendUnsent().finally(() => {
      this.sending = null;
    });
    return this.sending;
  }

  private async sendUnsent(): Promise<number> {
    let sent = 0;
    for (;;) {
      const rows = this.sql
        .exec<OutboxRow>(
          "SELECT id, body FROM tenant_event_outbox WHERE sent_at IS NULL ORDER BY created_at, id LIMIT ?",
          SEND_BATCH,
        )
        .toArray();
      if (rows.length === 0) return sent;
      const ids = rows.map((row) => row.id);
      try {
        const queue = this.queue();
        if (!queue) throw new Error("TENANT_EVENTS_QUEUE is not bound");
        const events = rows.map((row) => JSON.parse(row.body) as TenantEvent);
        await emitTenantEvents(
          queue,
          events.map((event) => ({ ...event, createdAt: new Date(event.createdAt) })),
        );
      } catch (error) {
        for (const id of ids) {
          this.sql.exec(
            "UPDATE tenant_event_outbox SET attempts = attempts + 1, last_error = ? WHERE id = ?",
            String(error).slice(0, 500),
            id,
          );
        }
        console.error(
          JSON.stringify({
            level: "error",
            msg: "tenant events not sent; the counter's alarm retries",
            events: ids.length,
            error: String(error),
          }),
        );
        return sent;
      }
      const at = Date.now();
      for (const id of ids) {
        this.sql.exec(
          "UPDATE tenant_event_outbox SET sent_at = ?, attempts = attempts + 1, last_error = NULL WHERE id = ?",
          at,
          id,
        );
      }
      sent += ids.length;
    }
  }

  /** Forgets sent events whose window ended more than a day ago. */
  prune(nowMs: number): void {
    this.sql.exec(
      "DELETE FROM tenant_event_outbox WHERE sent_at IS NOT NULL AND window_end IS NOT NULL AND window_end < ?",
      new Date(nowMs - KEEP_AFTER_WINDOW_MS).toISOString(),
    );
  }
}
