import type { UsageEventStatus } from "@edge-platform/shared/db/schema/usage-events";

export interface StoredEventRow {
  id: string;
  tenantId: string;
  eventId: string;
  feature: string;
  amount: number;
  timestamp: string;
  receivedAt: string;
  status: UsageEventStatus;
  subscriptionId: string | null;
  periodKey: string | null;
  periodStart: string | null;
  periodEnd: string | null;
  validatedAt: string | null;
}

/** The event rows of a batch, by id (one query). */
export async function loadEventRows(
  d1: D1Database,
  ids: string[],
): Promise<Map<string, StoredEventRow>> {
  if (ids.length === 0) return new Map();
  const { results } = await d1
    .prepare(
      `SELECT id, tenant_id AS tenantId, event_id AS eventId, feature_lookup_key AS feature,
              amount, timestamp, received_at AS receivedAt, status,
              subscription_id AS subscriptionId, period_key AS periodKey,
              period_start AS periodStart, period_end AS periodEnd, validated_at AS validatedAt
         FROM usage_events WHERE id IN (SELECT value FROM json_each(?1))`,
    )
    .bind(JSON.stringify(ids))
    .all<StoredEventRow>();
  return new Map(results.map((row) => [row.id, row]));
}

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

export interface ValidatedUpdate {
  id: string;
  subscriptionId: string;
  periodKey: string;
  periodStart: string;
  periodEnd: string | null;
}

export interface RejectedUpdate {
  id: string;
  code: string;
  reason: string;
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
 * PENDING -> VALIDATED, only for rows still PENDING (a redelivery changes
 * nothing); one statement per window, every row a primary-key lookup.
 */
export function markValidatedStatements(d1: D1Database, updates: ValidatedUpdate[], at: string) {
  const groups = new Map<string, ValidatedUpdate[]>();
  for (const update of updates) {
    const key = JSON.stringify([
      update.subscriptionId,
      update.periodKey,
      update.periodStart,
      update.periodEnd,
    ]);
    const group = groups.get(key) ?? [];
    group.push(update);
    groups.set(key, group);
  }
  return [...groups.values()].map((group) => {
    const first = group[0] as ValidatedUpdate;
    return d1
      .prepare(
        `UPDATE usage_events
            SET status = 'VALIDATED', subscription_id = ?2, period_key = ?3,
                period_start = ?4, period_end = ?5, validated_at = ?6, updated_at = ?6
          WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'PENDING'`,
      )
      .bind(
        JSON.stringify(group.map((update) => update.id)),
        first.subscriptionId,
        first.periodKey,
        first.periodStart,
        first.periodEnd,
        at,
      );
  });
}

/** PENDING -> REJECTED with the code and reason. */
export function markRejectedStatement(d1: D1Database, updates: RejectedUpdate[], at: string) {
  return d1
    .prepare(
      `UPDATE usage_events
          SET status = 'REJECTED',
              rejection_code = json_extract(r.value, '$.code'),
              rejection_reason = json_extract(r.value, '$.reason'),
              updated_at = ?2
         FROM json_each(?1) AS r
        WHERE usage_events.id = json_extract(r.value, '$.id')
          AND usage_events.status = 'PENDING'`,
    )
    .bind(JSON.stringify(updates), at);
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
