import {
  type UsageFlushDelta,
  usageAggregates,
} from "@edge-platform/shared/db/schema/usage-aggregates";
import { and, eq } from "drizzle-orm";
import type { Database } from "./client.ts";

/** A flush's units for one window, with the window's bounds for a first insert. */
export interface UsageFlushWindowDelta extends UsageFlushDelta {
  periodStart: string;
  periodEnd: string | null;
  /** Latest usage time among the units (ISO-8601 UTC). */
  lastEventAt: string;
}

export interface UsageFlush {
  /** Minted by the counter object before the first attempt and reused on every retry. */
  id: string;
  tenantId: string;
  deltas: UsageFlushWindowDelta[];
}

/** Units stored for one (subscription, feature, window); 0 when nothing was stored yet. */
export async function readUsageAggregate(
  db: Database,
  key: { subscriptionId: string; featureLookupKey: string; periodKey: string },
): Promise<number> {
  const row = await db
    .select({ amount: usageAggregates.amount })
    .from(usageAggregates)
    .where(
      and(
        eq(usageAggregates.subscriptionId, key.subscriptionId),
        eq(usageAggregates.featureLookupKey, key.featureLookupKey),
        eq(usageAggregates.periodKey, key.periodKey),
      ),
    )
    .get();
  return row?.amount ?? 0;
}

// Written as SQL rather than through drizzle: the increment must be an
// INSERT ... SELECT guarded by NOT EXISTS on the flush id, which is the
// whole point of the statement.
const INCREMENT_UNLESS_APPLIED = `
INSERT INTO usage_aggregates
  (id, tenant_id, subscription_id, feature_lookup_key, period_key, period_start, period_end, amount, last_event_at)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9
WHERE NOT EXISTS (SELECT 1 FROM usage_flushes WHERE id = ?10)
  AND EXISTS (SELECT 1 FROM subscriptions WHERE id = ?3 AND tenant_id = ?2)
ON CONFLICT (subscription_id, feature_lookup_key, period_key) DO UPDATE SET
  amount = usage_aggregates.amount + excluded.amount,
  last_event_at = max(coalesce(usage_aggregates.last_event_at, ''), excluded.last_event_at),
  updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;

const RECORD_FLUSH = `
INSERT INTO usage_flushes (id, tenant_id, units, deltas)
SELECT ?1, ?2, ?3, ?4
WHERE EXISTS (SELECT 1 FROM tenants WHERE id = ?2)
ON CONFLICT (id) DO NOTHING`;

/**
 * Adds a flush's units to `usage_aggregates` exactly once. One D1 batch (a
 * transaction): every increment is conditional on the flush id not being
 * recorded yet, and the last statement records it, so a retry of a flush
 * whose first attempt committed but whose response was lost adds nothing.
 * Units of a deleted subscription or tenant are dropped rather than left to
 * fail the batch for ever. Returns whether this call applied the flush.
 */
export async function applyUsageFlush(d1: D1Database, flush: UsageFlush): Promise<boolean> {
  const statements = flush.deltas.map((delta) =>
    d1
      .prepare(INCREMENT_UNLESS_APPLIED)
      .bind(
        crypto.randomUUID(),
        flush.tenantId,
        delta.subscriptionId,
        delta.featureLookupKey,
        delta.periodKey,
        delta.periodStart,
        delta.periodEnd,
        delta.amount,
        delta.lastEventAt,
        flush.id,
      ),
  );
  const ledger: UsageFlushDelta[] = flush.deltas.map(
    ({ subscriptionId, featureLookupKey, periodKey, amount }) => ({
      subscriptionId,
      featureLookupKey,
      periodKey,
      amount,
    }),
  );
  const units = ledger.reduce((sum, delta) => sum + delta.amount, 0);
  statements.push(
    d1.prepare(RECORD_FLUSH).bind(flush.id, flush.tenantId, units, JSON.stringify(ledger)),
  );
  const results = await d1.batch(statements);
  return (results.at(-1)?.meta.changes ?? 0) === 1;
}
