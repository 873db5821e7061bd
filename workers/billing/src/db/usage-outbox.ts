import {
  deadLetterIdFor,
  type RawUsageMessage,
  USAGE_QUEUES,
} from "@edge-platform/shared/queues/usage";

/** A send that failed this many times in all is given up and dead-lettered. */
export const OUTBOX_MAX_ATTEMPTS = 5;

const DUE_ROWS = `
SELECT e.id AS id, e.tenant_id AS tenantId, e.event_id AS eventId,
       e.feature_lookup_key AS feature, e.amount AS amount, e.timestamp AS timestamp,
       e.received_at AS receivedAt, o.attempts AS attempts
  FROM usage_outbox o JOIN usage_events e ON e.id = o.id
 WHERE o.status = 'PENDING' AND o.next_attempt_at <= ?1
 ORDER BY o.next_attempt_at
 LIMIT ?2`;

export interface DueOutboxRow {
  message: RawUsageMessage;
  attempts: number;
}

/** Rows whose send is due (never sent, or their backoff has passed), oldest first. */
export async function dueOutboxRows(
  d1: D1Database,
  now: string,
  limit: number,
): Promise<DueOutboxRow[]> {
  const { results } = await d1
    .prepare(DUE_ROWS)
    .bind(now, limit)
    .all<RawUsageMessage & { attempts: number }>();
  return results.map(({ attempts, ...message }) => ({ message, attempts }));
}

/** Keeps rows being sent away from the next sweep for a while. */
export async function leaseOutboxRows(d1: D1Database, ids: string[], until: string) {
  if (ids.length === 0) return;
  await d1
    .prepare(
      `UPDATE usage_outbox SET next_attempt_at = ?2
        WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'PENDING'`,
    )
    .bind(JSON.stringify(ids), until)
    .run();
}

export async function markOutboxPublished(d1: D1Database, ids: string[], at: string) {
  if (ids.length === 0) return;
  await d1
    .prepare(
      `UPDATE usage_outbox SET status = 'PUBLISHED', published_at = ?2, last_error = NULL
        WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'PENDING'`,
    )
    .bind(JSON.stringify(ids), at)
    .run();
}

/**
 * Counts one failed send for each row: the next attempt waits 2^attempts
 * seconds (2, 4, 8, 16). The fifth failure moves the row to FAILED and
 * dead-letters the event at the PUBLISHING stage, in the same batch.
 */
export async function recordOutboxFailure(
  d1: D1Database,
  ids: string[],
  error: string,
  now: string,
): Promise<void> {
  if (ids.length === 0) return;
  const idList = JSON.stringify(ids);
  const deadLetterIds = JSON.stringify(
    await Promise.all(
      ids.map(async (id) => ({ id, deadLetterId: await deadLetterIdFor(`PUBLISHING:${id}`) })),
    ),
  );
  const lastError = error.slice(0, 1000);
  await d1.batch([
    d1
      .prepare(
        `UPDATE usage_outbox
            SET attempts = attempts + 1,
                last_error = ?2,
                next_attempt_at = strftime('%Y-%m-%dT%H:%M:%fZ', ?3, '+' || (1 << (attempts + 1)) || ' seconds')
          WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'PENDING'`,
      )
      .bind(idList, lastError, now),
    d1
      .prepare(
        `INSERT INTO dead_letter_events
           (id, source_event_id, tenant_id, topic, failure_stage, failure_reason, original_payload,
            error_details, retry_count, first_failed_at, last_attempted_at)
         SELECT json_extract(d.value, '$.deadLetterId'), e.event_id, e.tenant_id, '${USAGE_QUEUES.raw}',
                'PUBLISHING', 'Outbox publish failed after ' || o.attempts || ' attempts: ' || ?2,
                json_object('id', e.id, 'tenantId', e.tenant_id, 'eventId', e.event_id,
                            'feature', e.feature_lookup_key, 'amount', e.amount,
                            'timestamp', e.timestamp, 'receivedAt', e.received_at),
                ?2, o.attempts, ?3, ?3
           FROM json_each(?1) AS d
           JOIN usage_outbox o ON o.id = json_extract(d.value, '$.id')
           JOIN usage_events e ON e.id = o.id
          WHERE o.status = 'PENDING' AND o.attempts >= ${OUTBOX_MAX_ATTEMPTS}
         ON CONFLICT (id) DO UPDATE SET
           status = 'FAILED', failure_reason = excluded.failure_reason,
           error_details = excluded.error_details, last_attempted_at = excluded.last_attempted_at,
           updated_at = excluded.last_attempted_at`,
      )
      .bind(deadLetterIds, lastError, now),
    d1
      .prepare(
        `UPDATE usage_outbox SET status = 'FAILED'
          WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'PENDING'
            AND attempts >= ${OUTBOX_MAX_ATTEMPTS}`,
      )
      .bind(idList),
  ]);
}

/** Drops rows published before `before` (the outbox is not an archive). */
export async function purgePublishedOutbox(d1: D1Database, before: string): Promise<number> {
  const result = await d1
    .prepare("DELETE FROM usage_outbox WHERE status = 'PUBLISHED' AND published_at < ?1")
    .bind(before)
    .run();
  return result.meta.changes ?? 0;
}

/** Whether any row still waits to be published (due now or later). */
export async function hasPendingOutbox(d1: D1Database): Promise<boolean> {
  const row = await d1
    .prepare("SELECT 1 AS pending FROM usage_outbox WHERE status = 'PENDING' LIMIT 1")
    .first<{ pending: number }>();
  return row !== null;
}
