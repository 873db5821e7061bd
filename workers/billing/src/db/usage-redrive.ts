import type { UnfinishedEventRow } from "../domain/usage-redrive.ts";

// Reads the partial index usage_events_unfinished_idx (updated_at, only
// PENDING and VALIDATED rows). Rows whose outbox send is still pending are
// the outbox publisher's (it has its own backoff), so they are left out.
const STRANDED_EVENTS = `
SELECT e.id AS id, e.tenant_id AS tenantId, e.event_id AS eventId,
       e.feature_lookup_key AS feature, e.amount AS amount, e.timestamp AS timestamp,
       e.received_at AS receivedAt, e.status AS status, e.subscription_id AS subscriptionId,
       e.period_key AS periodKey, e.period_start AS periodStart, e.period_end AS periodEnd,
       e.validated_at AS validatedAt
  FROM usage_events e
 WHERE e.status IN ('PENDING', 'VALIDATED') AND e.updated_at < ?1
   AND NOT EXISTS (SELECT 1 FROM usage_outbox o WHERE o.id = e.id AND o.status = 'PENDING')
 ORDER BY e.updated_at
 LIMIT ?2`;

/** Unfinished events untouched since before `before`, oldest first. */
export async function strandedEvents(
  d1: D1Database,
  before: string,
  limit: number,
): Promise<UnfinishedEventRow[]> {
  const { results } = await d1
    .prepare(STRANDED_EVENTS)
    .bind(before, limit)
    .all<UnfinishedEventRow>();
  return results;
}

/**
 * Marks rows as just touched (still only while unfinished), so the next
 * sweep leaves them alone for another bound while this re-drive runs.
 */
export async function touchUnfinishedEvents(d1: D1Database, ids: string[], at: string) {
  if (ids.length === 0) return;
  await d1
    .prepare(
      `UPDATE usage_events SET updated_at = ?2
        WHERE id IN (SELECT value FROM json_each(?1)) AND status IN ('PENDING', 'VALIDATED')`,
    )
    .bind(JSON.stringify(ids), at)
    .run();
}

/** Whether any event is still PENDING or VALIDATED. */
export async function hasUnfinishedEvents(d1: D1Database): Promise<boolean> {
  const row = await d1
    .prepare(
      "SELECT 1 AS unfinished FROM usage_events WHERE status IN ('PENDING', 'VALIDATED') LIMIT 1",
    )
    .first<{ unfinished: number }>();
  return row !== null;
}

/** How many events are still PENDING or VALIDATED. */
export async function countUnfinishedEvents(d1: D1Database): Promise<number> {
  const row = await d1
    .prepare(
      "SELECT count(*) AS unfinished FROM usage_events WHERE status IN ('PENDING', 'VALIDATED')",
    )
    .first<{ unfinished: number }>();
  return row?.unfinished ?? 0;
}
