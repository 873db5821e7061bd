import type { UsageArchivePartStatus } from "@edge-platform/shared/db/schema/usage-archive";
import type { ArchivedUsageEvent } from "../domain/usage-archive.ts";

export interface ArchivePart {
  key: string;
  tenantId: string;
  day: string;
  part: number;
  eventCount: number;
  firstId: string;
  lastId: string;
  bytes: number;
  status: UsageArchivePartStatus;
  deletedAt: string | null;
}

const PART_COLUMNS = `key, tenant_id AS tenantId, day, part, event_count AS eventCount,
  first_id AS firstId, last_id AS lastId, bytes, status, deleted_at AS deletedAt`;

/**
 * Tenant days with events received before `horizon`, among the oldest
 * `scan` such events (usage_events_received_idx), oldest first.
 */
export async function archiveCandidates(
  d1: D1Database,
  horizon: string,
  scan: number,
): Promise<{ tenantId: string; day: string }[]> {
  const { results } = await d1
    .prepare(
      `SELECT tenant_id AS tenantId, substr(received_at, 1, 10) AS day, min(received_at) AS first
         FROM (SELECT tenant_id, received_at FROM usage_events
                WHERE received_at < ?1 ORDER BY received_at LIMIT ?2)
        GROUP BY tenant_id, day
        ORDER BY first`,
    )
    .bind(horizon, scan)
    .all<{ tenantId: string; day: string }>();
  return results.map(({ tenantId, day }) => ({ tenantId, day }));
}

/** Whether any event of the tenant's day is still on its way (PENDING or VALIDATED). */
export async function dayHasUnfinishedEvents(
  d1: D1Database,
  tenantId: string,
  bounds: { start: string; end: string },
): Promise<boolean> {
  const row = await d1
    .prepare(
      `SELECT 1 AS found FROM usage_events
        WHERE received_at >= ?2 AND received_at < ?3 AND tenant_id = ?1
          AND status IN ('PENDING', 'VALIDATED')
        LIMIT 1`,
    )
    .bind(tenantId, bounds.start, bounds.end)
    .first<{ found: number }>();
  return row !== null;
}

const EVENT_COLUMNS = `id, tenant_id AS tenantId, event_id AS eventId, subscription_id AS subscriptionId,
  feature_lookup_key AS feature, amount, timestamp, received_at AS receivedAt, status,
  rejection_code AS rejectionCode, rejection_reason AS rejectionReason, period_key AS periodKey,
  period_start AS periodStart, period_end AS periodEnd, validated_at AS validatedAt,
  aggregated_at AS aggregatedAt, aggregation_flush_id AS aggregationFlushId, metadata,
  created_at AS createdAt, updated_at AS updatedAt`;

/** The next part's events: the first `limit` finished events of the tenant's day by id. */
export async function eventsForNextPart(
  d1: D1Database,
  tenantId: string,
  bounds: { start: string; end: string },
  limit: number,
): Promise<ArchivedUsageEvent[]> {
  const { results } = await d1
    .prepare(
      `SELECT ${EVENT_COLUMNS} FROM usage_events
        WHERE received_at >= ?2 AND received_at < ?3 AND tenant_id = ?1
          AND status IN ('AGGREGATED', 'REJECTED')
        ORDER BY id LIMIT ?4`,
    )
    .bind(tenantId, bounds.start, bounds.end, limit)
    .all<Omit<ArchivedUsageEvent, "metadata"> & { metadata: string }>();
  return results.map((row) => ({ ...row, metadata: JSON.parse(row.metadata || "{}") }));
}

/** The number the tenant's day's next part gets. */
export async function nextPartNumber(d1: D1Database, tenantId: string, day: string) {
  const row = await d1
    .prepare(
      "SELECT coalesce(max(part) + 1, 0) AS next FROM usage_archive_parts WHERE tenant_id = ?1 AND day = ?2",
    )
    .bind(tenantId, day)
    .first<{ next: number }>();
  return row?.next ?? 0;
}

/** Records an uploaded part; a part recorded before (a repeated run) is kept as it was. */
export async function recordUploadedPart(
  d1: D1Database,
  part: Omit<ArchivePart, "status" | "deletedAt">,
) {
  await d1
    .prepare(
      `INSERT INTO usage_archive_parts (key, tenant_id, day, part, event_count, first_id, last_id, bytes)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
       ON CONFLICT DO NOTHING`,
    )
    .bind(
      part.key,
      part.tenantId,
      part.day,
      part.part,
      part.eventCount,
      part.firstId,
      part.lastId,
      part.bytes,
    )
    .run();
}

/** Parts whose upload is done and whose rows may still be in D1. */
export async function uploadedParts(d1: D1Database, limit: number): Promise<ArchivePart[]> {
  const { results } = await d1
    .prepare(
      `SELECT ${PART_COLUMNS} FROM usage_archive_parts WHERE status = 'UPLOADED' ORDER BY created_at LIMIT ?1`,
    )
    .bind(limit)
    .all<ArchivePart>();
  return results;
}

export async function findArchivePart(d1: D1Database, key: string) {
  return d1
    .prepare(`SELECT ${PART_COLUMNS} FROM usage_archive_parts WHERE key = ?1`)
    .bind(key)
    .first<ArchivePart>();
}

// A part's rows: the tenant's day, ids from first to last, finished. The
// part was cut from exactly these rows (ordered by id, when the whole day
// was finished), and no event is received into a past day.
const PART_ROWS = `tenant_id = ?1 AND received_at >= ?2 AND received_at < ?3
  AND id >= ?4 AND id <= ?5 AND status IN ('AGGREGATED', 'REJECTED')`;

function bindPart(
  statement: D1PreparedStatement,
  part: ArchivePart,
  bounds: { start: string; end: string },
) {
  return statement.bind(part.tenantId, bounds.start, bounds.end, part.firstId, part.lastId);
}

/** eventIds of the part's rows still in D1 (for the archive index). */
export async function eventIdsStillInD1(
  d1: D1Database,
  part: ArchivePart,
  bounds: { start: string; end: string },
): Promise<string[]> {
  const { results } = await bindPart(
    d1.prepare(`SELECT event_id AS eventId FROM usage_events WHERE ${PART_ROWS}`),
    part,
    bounds,
  ).all<{ eventId: string }>();
  return results.map((row) => row.eventId);
}

/** Deletes at most `limit` of the part's rows; returns how many went. */
export async function deletePartRows(
  d1: D1Database,
  part: ArchivePart,
  bounds: { start: string; end: string },
  limit: number,
): Promise<number> {
  const result = await d1
    .prepare(
      `DELETE FROM usage_events WHERE id IN (SELECT id FROM usage_events WHERE ${PART_ROWS} LIMIT ?6)`,
    )
    .bind(part.tenantId, bounds.start, bounds.end, part.firstId, part.lastId, limit)
    .run();
  return result.meta.changes ?? 0;
}

export async function markPartDeleted(d1: D1Database, key: string, at: string) {
  await d1
    .prepare(
      "UPDATE usage_archive_parts SET status = 'DELETED', deleted_at = ?2 WHERE key = ?1 AND status = 'UPLOADED'",
    )
    .bind(key, at)
    .run();
}
