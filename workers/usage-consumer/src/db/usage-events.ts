export async function loadTenantStatuses(
  d1: D1Database,
  ids: string[],
): Promise<Map<string, { status: "ACTIVE" | "SUSPENDED" | "CANCELLED" }>> {
  if (ids.length === 0) return new Map();
  const { results } = await d1
    .prepare("SELECT id, status FROM tenants WHERE id IN (SELECT value FROM json_each(?1))")
    .bind(JSON.stringify(ids))
    .all<{ id: string; status: "ACTIVE" | "SUSPENDED" | "CANCELLED" }>();
  return new Map(results.map((row) => [row.id, { status: row.status }]));
}

export interface DeadLetterInsert {
  id: string;
  sourceEventId: string | null;
  tenantId: string | null;
  topic: string;
  failureStage: string;
  failureReason: string;
  originalPayload: unknown;
  errorDetails: string | null;
  retryCount: number;
}

/**
 * Stores dead letters; ids are derived from what failed, so the same failure
 * stored twice is one row (a retried one that fails again is FAILED again).
 */
export function upsertDeadLettersStatement(
  d1: D1Database,
  records: DeadLetterInsert[],
  at: string,
) {
  return d1
    .prepare(
      `INSERT INTO dead_letter_events
         (id, source_event_id, tenant_id, topic, failure_stage, failure_reason, original_payload,
          error_details, retry_count, first_failed_at, last_attempted_at)
       SELECT json_extract(d.value, '$.id'), json_extract(d.value, '$.sourceEventId'),
              json_extract(d.value, '$.tenantId'), json_extract(d.value, '$.topic'),
              json_extract(d.value, '$.failureStage'), json_extract(d.value, '$.failureReason'),
              json_extract(d.value, '$.originalPayload'), json_extract(d.value, '$.errorDetails'),
              json_extract(d.value, '$.retryCount'), ?2, ?2
         FROM json_each(?1) AS d
        WHERE true
       ON CONFLICT (id) DO UPDATE SET
         status = CASE WHEN dead_letter_events.status = 'RETRYING' THEN 'FAILED' ELSE dead_letter_events.status END,
         failure_reason = excluded.failure_reason,
         last_attempted_at = excluded.last_attempted_at,
         updated_at = excluded.last_attempted_at`,
    )
    .bind(
      JSON.stringify(
        records.map((record) => ({
          ...record,
          originalPayload: JSON.stringify(record.originalPayload ?? null),
        })),
      ),
      at,
    );
}

/** RETRYING dead letters whose event has now got through become RESOLVED. */
export function resolveDeadLettersStatement(d1: D1Database, ids: string[], at: string) {
  return d1
    .prepare(
      `UPDATE dead_letter_events SET status = 'RESOLVED', resolved_at = ?2, updated_at = ?2
        WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'RETRYING'`,
    )
    .bind(JSON.stringify(ids), at);
}

/** A RETRYING dead letter whose retry failed again goes back to FAILED. */
export function failDeadLettersStatement(
  d1: D1Database,
  failures: { id: string; reason: string }[],
  at: string,
) {
  return d1
    .prepare(
      `UPDATE dead_letter_events
          SET status = 'FAILED', failure_reason = json_extract(f.value, '$.reason'),
              last_attempted_at = ?2, updated_at = ?2
         FROM json_each(?1) AS f
        WHERE dead_letter_events.id = json_extract(f.value, '$.id')
          AND dead_letter_events.status = 'RETRYING'`,
    )
    .bind(JSON.stringify(failures), at);
}
