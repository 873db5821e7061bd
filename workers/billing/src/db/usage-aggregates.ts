import { LIFETIME_WINDOW_KEY } from "@edge-platform/shared/billing/billing-period";
import type { Database } from "@edge-platform/shared/db/client";
import {
  type UsageFlushDelta,
  usageAggregates,
} from "@edge-platform/shared/db/schema/usage-aggregates";
import { and, eq, gte, lt, ne, or, sql } from "drizzle-orm";
import { hourlyFlushStatements, type UsageFlushHourDelta } from "./usage-hourly.ts";

/** A flush's units for one window, with the window's bounds for a first insert. */
export interface UsageFlushWindowDelta extends UsageFlushDelta {
  periodStart: string;
  periodEnd: string | null;
  /** Latest usage time among the units (ISO-8601 UTC). */
  lastEventAt: string;
}

/** A usage event whose row the flush claims; its units are in the delta of its window. */
export interface UsageFlushEventClaim {
  /** usage_events.id */
  id: string;
  subscriptionId: string;
  featureLookupKey: string;
  periodKey: string;
}

export interface UsageFlush {
  /** Minted by the counter object before the first attempt and reused on every retry. */
  id: string;
  tenantId: string;
  /** Per window: `amount` is the units that are not tied to an event row (consumes). */
  deltas: UsageFlushWindowDelta[];
  /** Event rows to claim; their units are added only if this flush claims them. */
  claims?: UsageFlushEventClaim[];
  /** The direct units (`amount` of the deltas) per hour of use, for usage_hourly. */
  hours?: UsageFlushHourDelta[];
}

export interface UsageFlushOutcome {
  /** Whether this call applied the flush (false: an earlier attempt already had). */
  applied: boolean;
  /** The event rows this flush claimed, whichever attempt applied it. */
  claimedEventIds: string[];
}

/**
 * The tenant's units stored for a feature in a reset window, over every
 * subscription: rows keyed by the window, and rows written before window
 * keys followed the billing cycle (a plan change's first window was keyed
 * by the change instant) whose window starts inside it. 0 when none.
 */
export async function readTenantWindowUsage(
  db: Database,
  window: {
    tenantId: string;
    featureLookupKey: string;
    periodKey: string;
    windowStart: string;
    /** Null for the NEVER-reset `lifetime` window. */
    windowEnd: string | null;
  },
): Promise<number> {
  const inWindow =
    window.windowEnd === null
      ? eq(usageAggregates.periodKey, window.periodKey)
      : or(
          eq(usageAggregates.periodKey, window.periodKey),
          and(
            ne(usageAggregates.periodKey, LIFETIME_WINDOW_KEY),
            gte(usageAggregates.periodStart, window.windowStart),
            lt(usageAggregates.periodStart, window.windowEnd),
          ),
        );
  const row = await db
    .select({ amount: sql<number | null>`sum(${usageAggregates.amount})` })
    .from(usageAggregates)
    .where(
      and(
        eq(usageAggregates.tenantId, window.tenantId),
        eq(usageAggregates.featureLookupKey, window.featureLookupKey),
        inWindow,
      ),
    )
    .get();
  return Number(row?.amount ?? 0);
}

// Written as SQL rather than through drizzle: every statement is guarded
// by the flush id being absent from usage_flushes, which is the whole point.

// Step 1: the claim, one statement per window. Rows of this tenant still
// VALIDATED in the very window the counter counted them in, or still
// PENDING (the validation stage counted them through the counter at once
// and left the status to this claim: one status write per event instead of
// two), move to AGGREGATED with the window, the subscription and the flush
// id; the increments below add exactly the units of those rows. A row that
// validation meanwhile REJECTED, or another flush took, is not claimed.
// Rows are found by primary key (`id IN (json_each)`); `+tenant_id` keeps
// SQLite from walking the tenant's whole (tenant, eventId) index instead.
const CLAIM_EVENTS = `
UPDATE usage_events
   SET status = 'AGGREGATED',
       subscription_id = ?4,
       period_key = ?6,
       period_start = ?7,
       period_end = ?8,
       validated_at = coalesce(validated_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
       aggregation_flush_id = ?1,
       aggregated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
       updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
 WHERE id IN (SELECT value FROM json_each(?3))
   AND +tenant_id = ?2
   AND feature_lookup_key = ?5
   AND (status = 'PENDING' OR (status = 'VALIDATED' AND subscription_id = ?4 AND period_key = ?6))
   AND NOT EXISTS (SELECT 1 FROM usage_flushes WHERE id = ?1)`;

// Step 2: one increment per window: the units not tied to event rows plus
// the units of the rows this flush claimed in step 1.
const INCREMENT_UNLESS_APPLIED = `
INSERT INTO usage_aggregates
  (id, tenant_id, subscription_id, feature_lookup_key, period_key, period_start, period_end, amount, last_event_at)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7,
       ?8 + coalesce((SELECT sum(amount) FROM usage_events
                       WHERE aggregation_flush_id = ?10 AND subscription_id = ?3
                         AND feature_lookup_key = ?4 AND period_key = ?5), 0),
       ?9
WHERE NOT EXISTS (SELECT 1 FROM usage_flushes WHERE id = ?10)
  AND EXISTS (SELECT 1 FROM subscriptions WHERE id = ?3 AND tenant_id = ?2)
ON CONFLICT (subscription_id, feature_lookup_key, period_key) DO UPDATE SET
  amount = usage_aggregates.amount + excluded.amount,
  last_event_at = max(coalesce(usage_aggregates.last_event_at, ''), excluded.last_event_at),
  updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;

// Step 3: the flush id, with a ledger of what each window really received.
const RECORD_FLUSH = `
INSERT INTO usage_flushes (id, tenant_id, units, deltas)
SELECT ?1, ?2,
       ?3 + coalesce((SELECT sum(amount) FROM usage_events WHERE aggregation_flush_id = ?1), 0),
       (SELECT json_group_array(json_object(
                 'subscriptionId', json_extract(d.value, '$.subscriptionId'),
                 'featureLookupKey', json_extract(d.value, '$.featureLookupKey'),
                 'periodKey', json_extract(d.value, '$.periodKey'),
                 'amount', json_extract(d.value, '$.amount') + coalesce((
                    SELECT sum(e.amount) FROM usage_events e
                     WHERE e.aggregation_flush_id = ?1
                       AND e.subscription_id = json_extract(d.value, '$.subscriptionId')
                       AND e.feature_lookup_key = json_extract(d.value, '$.featureLookupKey')
                       AND e.period_key = json_extract(d.value, '$.periodKey')), 0)))
          FROM json_each(?4) AS d)
WHERE EXISTS (SELECT 1 FROM tenants WHERE id = ?2)
ON CONFLICT (id) DO NOTHING`;

const CLAIMED_BY_FLUSH = "SELECT id FROM usage_events WHERE aggregation_flush_id = ?1";

/**
 * Adds a flush's units to `usage_aggregates` exactly once. One D1 batch (a
 * transaction): claim the flush's event rows, increment each window, and
 * record the flush id; every statement is conditional on the flush id not
 * being recorded yet, so a retry of a flush whose first attempt committed
 * but whose response was lost changes nothing. Units of a deleted
 * subscription or tenant are dropped rather than left to fail the batch
 * for ever. Returns whether this call applied the flush.
 */
export async function applyUsageFlush(d1: D1Database, flush: UsageFlush): Promise<boolean> {
  return (await applyUsageFlushWithClaims(d1, flush)).applied;
}

/** applyUsageFlush, also telling which event rows the flush claimed. */
export async function applyUsageFlushWithClaims(
  d1: D1Database,
  flush: UsageFlush,
): Promise<UsageFlushOutcome> {
  const statements: D1PreparedStatement[] = [];
  const claims = flush.claims ?? [];
  const windowOf = (row: { subscriptionId: string; featureLookupKey: string; periodKey: string }) =>
    `${row.subscriptionId}\u0000${row.featureLookupKey}\u0000${row.periodKey}`;
  const claimsByWindow = new Map<string, UsageFlushEventClaim[]>();
  for (const claim of claims) {
    const window = windowOf(claim);
    const group = claimsByWindow.get(window) ?? [];
    group.push(claim);
    claimsByWindow.set(window, group);
  }
  const deltaByWindow = new Map(flush.deltas.map((delta) => [windowOf(delta), delta]));
  for (const [window, group] of claimsByWindow) {
    const delta = deltaByWindow.get(window);
    // The counter puts a delta (the window's bounds) beside every window it claims rows in.
    if (!delta) throw new Error("usage flush claims events in a window it has no delta for");
    statements.push(
      d1
        .prepare(CLAIM_EVENTS)
        .bind(
          flush.id,
          flush.tenantId,
          JSON.stringify(group.map((claim) => claim.id)),
          delta.subscriptionId,
          delta.featureLookupKey,
          delta.periodKey,
          delta.periodStart,
          delta.periodEnd,
        ),
    );
  }
  for (const delta of flush.deltas) {
    statements.push(
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
  }
  const planned: UsageFlushDelta[] = flush.deltas.map(
    ({ subscriptionId, featureLookupKey, periodKey, amount }) => ({
      subscriptionId,
      featureLookupKey,
      periodKey,
      amount,
    }),
  );
  statements.push(...hourlyFlushStatements(d1, { ...flush, claimsEvents: claims.length > 0 }));
  const directUnits = planned.reduce((sum, delta) => sum + delta.amount, 0);
  statements.push(
    d1.prepare(RECORD_FLUSH).bind(flush.id, flush.tenantId, directUnits, JSON.stringify(planned)),
  );
  if (claims.length > 0) statements.push(d1.prepare(CLAIMED_BY_FLUSH).bind(flush.id));
  const results = await d1.batch<{ id: string }>(statements);
  const recordIndex = claims.length > 0 ? results.length - 2 : results.length - 1;
  return {
    applied: (results[recordIndex]?.meta.changes ?? 0) === 1,
    claimedEventIds: claims.length > 0 ? (results.at(-1)?.results ?? []).map((row) => row.id) : [],
  };
}
