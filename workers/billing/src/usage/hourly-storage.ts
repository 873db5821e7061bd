/**
 * Per-hour usage (`usage_hourly`), written by the counter's flush in the
 * same D1 batch as `usage_aggregates` and read by the usage timeseries.
 */
import type { Database } from "@edge-platform/shared/db/client";
import { usageHourly } from "@edge-platform/shared/db/schema/usage-aggregates";
import { and, eq, gte, lt, sql } from "drizzle-orm";

/** Units a flush adds to one hour of a subscription's feature. */
export interface UsageFlushHourDelta {
  subscriptionId: string;
  featureLookupKey: string;
  /** Start of the hour, ISO-8601 UTC. */
  hourStart: string;
  amount: number;
}

/** The start of the UTC hour holding `at` (an ISO-8601 instant), as ISO-8601. */
export function hourStartOf(at: string): string {
  const ms = Date.parse(at);
  return new Date(ms - (((ms % 3_600_000) + 3_600_000) % 3_600_000)).toISOString();
}

interface FlushWindowForHours {
  subscriptionId: string;
  featureLookupKey: string;
  periodKey: string;
  amount: number;
  lastEventAt: string;
}

/**
 * Makes a flush's hour deltas cover each window's direct units exactly:
 * units the counter held without an hour (counted before it kept hours)
 * go to the hour of the window's latest use, so the hours never add up to
 * less than the aggregates.
 */
export function completeHourDeltas(
  windows: FlushWindowForHours[],
  hours: UsageFlushHourDelta[],
): UsageFlushHourDelta[] {
  const bySeries = new Map<string, number>();
  const seriesOf = (row: { subscriptionId: string; featureLookupKey: string }) =>
    `${row.subscriptionId}\u0000${row.featureLookupKey}`;
  for (const hour of hours) {
    bySeries.set(seriesOf(hour), (bySeries.get(seriesOf(hour)) ?? 0) + hour.amount);
  }
  const direct = new Map<string, { window: FlushWindowForHours; amount: number }>();
  for (const window of windows) {
    const entry = direct.get(seriesOf(window)) ?? { window, amount: 0 };
    entry.amount += window.amount;
    if (window.lastEventAt > entry.window.lastEventAt) entry.window = window;
    direct.set(seriesOf(window), entry);
  }
  const completed = hours.filter((hour) => hour.amount > 0);
  for (const [series, { window, amount }] of direct) {
    const missing = amount - (bySeries.get(series) ?? 0);
    if (missing > 0) {
      completed.push({
        subscriptionId: window.subscriptionId,
        featureLookupKey: window.featureLookupKey,
        hourStart: hourStartOf(window.lastEventAt),
        amount: missing,
      });
    }
  }
  return completed;
}

// Every statement is guarded like the aggregate increments: nothing when
// the flush id is already recorded (a retried flush adds nothing) or the
// subscription is gone (its aggregates are dropped too).
const ADD_DIRECT_HOURS = `
INSERT INTO usage_hourly (tenant_id, subscription_id, feature_lookup_key, hour_start, amount)
SELECT ?2, json_extract(h.value, '$.subscriptionId'), json_extract(h.value, '$.featureLookupKey'),
       json_extract(h.value, '$.hourStart'), sum(json_extract(h.value, '$.amount'))
  FROM json_each(?3) AS h
 WHERE NOT EXISTS (SELECT 1 FROM usage_flushes WHERE id = ?1)
   AND EXISTS (SELECT 1 FROM subscriptions s
                WHERE s.id = json_extract(h.value, '$.subscriptionId') AND s.tenant_id = ?2)
 GROUP BY 2, 3, 4
ON CONFLICT (subscription_id, feature_lookup_key, hour_start) DO UPDATE SET
  amount = usage_hourly.amount + excluded.amount`;

/**
 * The statements that add a flush's units to `usage_hourly`; they go into
 * the flush's batch before the flush id is recorded.
 */
export function hourlyFlushStatements(
  d1: D1Database,
  flush: {
    id: string;
    tenantId: string;
    deltas: FlushWindowForHours[];
    hours?: UsageFlushHourDelta[];
  },
): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  const hours = completeHourDeltas(flush.deltas, flush.hours ?? []);
  if (hours.length > 0) {
    statements.push(
      d1.prepare(ADD_DIRECT_HOURS).bind(flush.id, flush.tenantId, JSON.stringify(hours)),
    );
  }
  return statements;
}

/** The tenant's units of a feature per stored hour in [fromHour, toHour), over every subscription. */
export async function readHourlyUsage(
  db: Database,
  query: { tenantId: string; featureLookupKey: string; from: string; to: string },
): Promise<{ hourStart: string; amount: number }[]> {
  return db
    .select({
      hourStart: usageHourly.hourStart,
      amount: sql<number>`sum(${usageHourly.amount})`.mapWith(Number),
    })
    .from(usageHourly)
    .where(
      and(
        eq(usageHourly.tenantId, query.tenantId),
        eq(usageHourly.featureLookupKey, query.featureLookupKey),
        gte(usageHourly.hourStart, query.from),
        lt(usageHourly.hourStart, query.to),
      ),
    )
    .groupBy(usageHourly.hourStart)
    .orderBy(usageHourly.hourStart)
    .all();
}
