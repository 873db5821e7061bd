import { LIFETIME_WINDOW_KEY } from "@edge-platform/shared/billing/billing-period";
import type { MeterContribution } from "@edge-platform/shared/billing/meter";
import type { Database } from "@edge-platform/shared/db/client";
import {
  type UsageFlushDelta,
  usageAggregates,
} from "@edge-platform/shared/db/schema/usage-aggregates";
import { and, asc, desc, eq, gte, lt, ne, or, sql } from "drizzle-orm";
import { hourlyFlushStatements, type UsageFlushHourDelta } from "./hourly-storage.ts";
import {
  type MeterGroupDelta,
  type MeterHourDelta,
  meterGroupFlushStatements,
} from "./meter-groups-storage.ts";

/** A flush's units for one window, with the window's bounds for a first insert. */
export interface UsageFlushWindowDelta extends UsageFlushDelta {
  periodStart: string;
  periodEnd: string | null;
  /** Latest usage time among the units (ISO-8601 UTC). */
  lastEventAt: string;
}

/** A usage event the flush claims in the usage log; its units join the delta of its window. */
export interface UsageFlushEventClaim {
  /** The event's id in the usage log. */
  id: string;
  subscriptionId: string;
  featureLookupKey: string;
  periodKey: string;
  /** Its share of its meter group, for a feature with a meter. */
  meter?: MeterContribution;
  /** The units its counter counted (counterUnits): a metered or filtered event's are not its amount. */
  units?: number;
}

export interface UsageFlush {
  /** Minted by the counter object before the first attempt and reused on every retry. */
  id: string;
  tenantId: string;
  /** Per window: `amount` is the units that are not tied to a logged event (consumes). */
  deltas: UsageFlushWindowDelta[];
  /** Logged events to claim; their units are added only if this flush claims them. */
  claims?: UsageFlushEventClaim[];
  /** Per hour of use, the units of the deltas (claimed events' included), for usage_hourly. */
  hours?: UsageFlushHourDelta[];
  /** The claimed events' meter contributions, merged per group. */
  meterGroups?: MeterGroupDelta[];
  /** The same per clock hour of the events (usage_meter_hourly). */
  meterHours?: MeterHourDelta[];
}

export interface UsageFlushOutcome {
  /** Whether this call applied the flush (false: an earlier attempt already had). */
  applied: boolean;
  /** The logged events this flush claimed, whichever attempt applied it. */
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

// One increment per window.
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

// The flush id, with a ledger of what each window received.
const RECORD_FLUSH = `
INSERT INTO usage_flushes (id, tenant_id, units, deltas)
SELECT ?1, ?2, ?3, ?4
WHERE EXISTS (SELECT 1 FROM tenants WHERE id = ?2)
ON CONFLICT (id) DO NOTHING`;

/**
 * Adds a flush's units to `usage_aggregates` exactly once. One D1 batch (a
 * transaction): increment each window and record the flush id; every
 * statement is conditional on the flush id not being recorded yet, so a
 * retry of a flush whose first attempt committed but whose response was
 * lost changes nothing. Units of a deleted subscription or tenant are
 * dropped rather than left to fail the batch for ever. Each delta's amount
 * is every unit of its window (the usage log's claimed events included:
 * usage/log/flush-claims.ts). Returns whether this call applied the flush.
 */
export async function applyUsageFlush(d1: D1Database, flush: UsageFlush): Promise<boolean> {
  const statements: D1PreparedStatement[] = flush.deltas.map((delta) =>
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
  const planned: UsageFlushDelta[] = flush.deltas.map(
    ({ subscriptionId, featureLookupKey, periodKey, amount }) => ({
      subscriptionId,
      featureLookupKey,
      periodKey,
      amount,
    }),
  );
  statements.push(...hourlyFlushStatements(d1, flush));
  statements.push(...meterGroupFlushStatements(d1, flush));
  const units = planned.reduce((sum, delta) => sum + delta.amount, 0);
  statements.push(
    d1.prepare(RECORD_FLUSH).bind(flush.id, flush.tenantId, units, JSON.stringify(planned)),
  );
  const results = await d1.batch(statements);
  return (results.at(-1)?.meta.changes ?? 0) === 1;
}

/*
 * Forgets flush ids no retry can need. A tenant's flushes apply in order:
 * its counter claims a new flush only once the previous one is settled
 * (applied and its events finished), so when a tenant has a later row, the
 * earlier ones will never be tried again. Each tenant's latest row stays,
 * whatever its age (its flush may still be retried); the others go once
 * older than the cutoff. Rows are inserted in applied_at order, so their
 * rowids are too: the statement walks only the expired rows, from the oldest.
 */
const PRUNE_FLUSH_IDS = `
DELETE FROM usage_flushes WHERE rowid IN (
  SELECT f.rowid FROM usage_flushes f
   WHERE f.rowid < coalesce(
           (SELECT rowid FROM usage_flushes WHERE applied_at >= ?1 ORDER BY rowid LIMIT 1),
           9223372036854775807)
     AND EXISTS (SELECT 1 FROM usage_flushes later
                  WHERE later.tenant_id = f.tenant_id AND later.applied_at >= f.applied_at
                    AND later.rowid > f.rowid)
   ORDER BY f.rowid LIMIT ?2)`;

/** Deletes up to `limit` usage_flushes rows applied before `appliedBefore` that no retry can need; answers how many. */
export async function pruneUsageFlushes(
  d1: D1Database,
  appliedBefore: string,
  limit: number,
): Promise<number> {
  const result = await d1.prepare(PRUNE_FLUSH_IDS).bind(appliedBefore, limit).run();
  return result.meta.changes ?? 0;
}

export function listUsageAggregates(
  db: Database,
  tenantId: string,
  filter: { feature?: string; periodKey?: string; subscriptionId?: string },
) {
  const conditions = [eq(usageAggregates.tenantId, tenantId)];
  if (filter.feature) conditions.push(eq(usageAggregates.featureLookupKey, filter.feature));
  if (filter.periodKey) conditions.push(eq(usageAggregates.periodKey, filter.periodKey));
  if (filter.subscriptionId) {
    conditions.push(eq(usageAggregates.subscriptionId, filter.subscriptionId));
  }
  return db
    .select()
    .from(usageAggregates)
    .where(and(...conditions))
    .orderBy(
      asc(usageAggregates.featureLookupKey),
      desc(usageAggregates.periodStart),
      asc(usageAggregates.subscriptionId),
    )
    .all();
}
