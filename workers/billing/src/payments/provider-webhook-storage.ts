import type { Database } from "@edge-platform/shared/db/client";
import { webhookEvents } from "@edge-platform/shared/db/schema/billing";
import { and, eq } from "drizzle-orm";

export type WebhookEventRow = typeof webhookEvents.$inferSelect;

/** Stores an event once per (provider, provider event id); returns the stored row and whether it is new. */
export async function storeWebhookEvent(
  d1: D1Database,
  db: Database,
  event: {
    provider: string;
    providerEventId: string;
    eventType: string;
    rawPayload: string;
    now: string;
  },
): Promise<{ row: WebhookEventRow; created: boolean }> {
  const id = crypto.randomUUID();
  const inserted = await d1
    .prepare(
      `INSERT INTO webhook_events (id, provider, provider_event_id, event_type, status, raw_payload, created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, 'PENDING', ?5, ?6, ?6)
       ON CONFLICT (provider, provider_event_id) DO NOTHING`,
    )
    .bind(id, event.provider, event.providerEventId, event.eventType, event.rawPayload, event.now)
    .run();
  const row = await db
    .select()
    .from(webhookEvents)
    .where(
      and(
        eq(webhookEvents.provider, event.provider),
        eq(webhookEvents.providerEventId, event.providerEventId),
      ),
    )
    .get();
  if (!row) throw new Error("webhook event vanished after insert");
  return { row, created: inserted.meta.changes === 1 };
}

export function findWebhookEvent(db: Database, id: string) {
  return db.select().from(webhookEvents).where(eq(webhookEvents.id, id)).get();
}

/** Takes the event for processing unless it is already done; counts the attempt. */
export async function claimWebhookEvent(d1: D1Database, id: string, now: string) {
  const result = await d1
    .prepare(
      `UPDATE webhook_events SET status = 'PROCESSING', attempts = attempts + 1, updated_at = ?2
       WHERE id = ?1 AND status IN ('PENDING', 'PROCESSING', 'FAILED')`,
    )
    .bind(id, now)
    .run();
  return result.meta.changes === 1;
}

export function finishWebhookEvent(
  d1: D1Database,
  id: string,
  result: {
    status: "PROCESSED" | "SKIPPED" | "FAILED";
    outcome?: string;
    error?: string;
    now: string;
  },
) {
  return d1
    .prepare(
      `UPDATE webhook_events SET status = ?2, outcome = coalesce(?3, outcome), processing_error = ?4,
         processed_at = ?5, updated_at = ?5
       WHERE id = ?1 AND status NOT IN ('PROCESSED', 'SKIPPED')`,
    )
    .bind(id, result.status, result.outcome ?? null, result.error ?? null, result.now)
    .run();
}
