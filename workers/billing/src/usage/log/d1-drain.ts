import { shardOfEventId, shardOfId, withShard } from "@edge-platform/shared/usage-log/client";
import { tenantShards, usageLogStub } from "./shards.ts";
import type { ImportedEvent } from "./stored-events.ts";

/*
 * The upgrade path from the D1 log of earlier releases (usage_events and
 * usage_outbox, see migrations 0015 and 0018). The Cron Trigger moves the
 * rows, oldest first and a chunk at a time, into their tenants' UsageLog
 * shards, keeping each event's status, then deletes them from D1:
 *   - PENDING and VALIDATED events are unfinished there: whatever message
 *     of theirs is still on its way finishes them, and otherwise the
 *     re-drive sends them on once USAGE_REDRIVE_AFTER_SECONDS has passed;
 *   - AGGREGATED and REJECTED ones are finished and go to the archive.
 * An event's id must name its shard (shared/src/usage-log/client.ts); ids
 * minted by earlier releases do not, so a moved event gets the id with its
 * shard written in (movedEventId). Exactly once still holds: whatever the
 * pipeline held under the old id finds nothing once the row left D1 (the
 * validation stage and the counter's flush wait while it is still there),
 * so the counter's pending units under the old id are given back, a
 * message under the old id is dead-lettered as not found, and the event
 * itself, unfinished, goes through the pipeline once under its new id.
 * Moving is idempotent (an eventId a shard holds is skipped), so a run
 * that dies between the move and the delete only moves the same rows again.
 */

export const DRAIN_CHUNK = 500;
const DRAIN_MAX_CHUNKS = 10;

export interface DrainReport {
  moved: number;
  deleted: number;
  /** Whether the D1 log is empty (or gone): migration 0018 may then run. */
  done: boolean;
}

interface D1EventRow {
  id: string;
  tenantId: string;
  eventId: string;
  subscriptionId: string | null;
  feature: string;
  amount: number;
  timestamp: string;
  receivedAt: string;
  status: ImportedEvent["status"] | "DUPLICATE";
  rejectionCode: string | null;
  rejectionReason: string | null;
  periodKey: string | null;
  periodStart: string | null;
  periodEnd: string | null;
  validatedAt: string | null;
  aggregatedAt: string | null;
  metadata: string | null;
}

const SELECT_CHUNK = `
SELECT id, tenant_id AS tenantId, event_id AS eventId, subscription_id AS subscriptionId,
       feature_lookup_key AS feature, amount, timestamp, received_at AS receivedAt, status,
       rejection_code AS rejectionCode, rejection_reason AS rejectionReason,
       period_key AS periodKey, period_start AS periodStart, period_end AS periodEnd,
       validated_at AS validatedAt, aggregated_at AS aggregatedAt, metadata
  FROM usage_events ORDER BY id LIMIT ?1`;

function isMissingTable(error: unknown): boolean {
  return String(error).includes("no such table");
}

/** The id a moved event keeps in the usage log: its own, with its eventId's shard written in. */
export function movedEventId(id: string, eventId: string, shards: number): string {
  return withShard(id, shardOfEventId(eventId, shards));
}

/** Moves up to DRAIN_MAX_CHUNKS chunks of the D1 log into the usage log. */
export async function drainD1UsageLog(
  env: Pick<Env, "DB" | "USAGE_LOG" | "USAGE_LOG_SHARDS" | "USAGE_LOG_TENANT_SHARDS">,
  options: { chunk?: number; maxChunks?: number } = {},
): Promise<DrainReport> {
  const chunk = options.chunk ?? DRAIN_CHUNK;
  const report: DrainReport = { moved: 0, deleted: 0, done: false };
  for (let round = 0; round < (options.maxChunks ?? DRAIN_MAX_CHUNKS); round++) {
    let rows: D1EventRow[];
    try {
      rows = (await env.DB.prepare(SELECT_CHUNK).bind(chunk).all<D1EventRow>()).results;
    } catch (error) {
      if (isMissingTable(error)) return { ...report, done: true };
      throw error;
    }
    if (rows.length === 0) return { ...report, done: true };
    const byShard = new Map<string, { tenantId: string; shard: number; events: ImportedEvent[] }>();
    for (const row of rows) {
      const shards = tenantShards(env, row.tenantId).shards;
      const id = movedEventId(row.id, row.eventId, shards);
      const shard = shardOfId(id);
      const key = `${row.tenantId}/${shard}`;
      const group = byShard.get(key) ?? { tenantId: row.tenantId, shard, events: [] };
      group.events.push({
        id,
        eventId: row.eventId,
        feature: row.feature,
        amount: row.amount,
        timestamp: row.timestamp,
        receivedAt: row.receivedAt,
        // DUPLICATE was never written by this pipeline; such a row is finished.
        status: row.status === "DUPLICATE" ? "REJECTED" : row.status,
        reason: row.rejectionCode,
        message: row.rejectionReason,
        subscriptionId: row.subscriptionId,
        periodKey: row.periodKey,
        periodStart: row.periodStart,
        periodEnd: row.periodEnd,
        validatedAt: row.validatedAt,
        aggregatedAt: row.aggregatedAt,
        metadata: JSON.parse(row.metadata || "{}") as Record<string, unknown>,
        // The D1 log predates properties.
        properties: {},
      });
      byShard.set(key, group);
    }
    await Promise.all(
      [...byShard.values()].map(async (group) => {
        report.moved += await usageLogStub(env.USAGE_LOG, group.tenantId, group.shard).import(
          group,
        );
      }),
    );
    const ids = JSON.stringify(rows.map((row) => row.id));
    const [, events] = await env.DB.batch([
      env.DB.prepare("DELETE FROM usage_outbox WHERE id IN (SELECT value FROM json_each(?1))").bind(
        ids,
      ),
      env.DB.prepare("DELETE FROM usage_events WHERE id IN (SELECT value FROM json_each(?1))").bind(
        ids,
      ),
    ]);
    report.deleted += events?.meta.changes ?? 0;
    if (rows.length < chunk) return { ...report, done: true };
  }
  return report;
}
