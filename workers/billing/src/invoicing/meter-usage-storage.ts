import type { ResetWindow } from "@edge-platform/shared/billing/billing-period";
import {
  dimensionsOfGroupKey,
  type Meter,
  type MeterStateColumns,
  meterQuantity,
  type PropertyValue,
  stateOfRow,
} from "@edge-platform/shared/billing/meter";
import { type UsageWindowReading, usageLineWindowKey } from "./domain/invoice.ts";
import { readBilledUsage } from "./storage.ts";

/*
 * The usage of features with a meter, as invoices bill it: one reading per
 * usage window and group (usage_meter_groups), its quantity read from the
 * group's summary by the meter's aggregation. A USAGE line of a group
 * names its window and group in usage_window_key (usageLineWindowKey), so
 * what earlier invoices billed is found per group.
 */

interface MeterGroupRow extends MeterStateColumns {
  feature_lookup_key: string;
  period_key: string;
  period_start: string;
  period_end: string | null;
  group_key: string;
  dimensions: string;
  carried: number | null;
}

// `carried`: the level a WEIGHTED_SUM group brings into the window, the
// changes of the tenant's earlier windows of the feature and group.
const METER_WINDOWS = `
SELECT g.feature_lookup_key, g.period_key, g.period_start, g.period_end, g.group_key, g.dimensions,
       g.events, g.value_sum, g.value_min, g.value_max, g.latest_value, g.latest_at, g.latest_id,
       g.weighted_ms, g.distinct_values,
       (SELECT sum(p.value_sum) FROM usage_meter_groups p
         WHERE p.tenant_id = g.tenant_id AND p.feature_lookup_key = g.feature_lookup_key
           AND p.group_key = g.group_key AND p.period_end IS NOT NULL
           AND p.period_end <= g.period_start) AS carried
  FROM usage_meter_groups g
 WHERE g.subscription_id = ?1 AND g.period_start >= ?2 AND g.period_start < ?3
 ORDER BY g.feature_lookup_key, g.period_start, g.group_key`;

// The row-to-state mapping lives beside MeterState, where the usage reads find it too.

/** What readMeterWindows needs to know of the subscription being billed. */
export interface MeterWindowsQuery {
  tenantId: string;
  subscriptionId: string;
  /** Metered features by lookup key, with their meter and reset windows (for levels carried in). */
  meters: ReadonlyMap<string, { meter: Meter; windows: readonly ResetWindow[] }>;
  billableFrom: string;
  before: string;
  excludeInvoiceId: string | null;
  excludeProgressive: boolean;
}

/**
 * The group readings of the subscription's metered features in windows
 * that started inside [billableFrom, before), with what other billing
 * invoices billed of each group. A WEIGHTED_SUM group holding a level
 * bills it in a window with no events of its own too.
 */
export async function readMeterWindows(
  d1: D1Database,
  db: Parameters<typeof readBilledUsage>[0],
  query: MeterWindowsQuery,
): Promise<UsageWindowReading[]> {
  if (query.meters.size === 0) return [];
  const [{ results }, billed] = await Promise.all([
    d1
      .prepare(METER_WINDOWS)
      .bind(query.subscriptionId, query.billableFrom, query.before)
      .all<MeterGroupRow>(),
    readBilledUsage(db, query.subscriptionId, query.excludeInvoiceId, query.excludeProgressive),
  ]);
  const held = await heldLevelRows(d1, query, results);
  return [...results, ...held].flatMap((row) => {
    const meter = query.meters.get(row.feature_lookup_key)?.meter;
    if (!meter) return [];
    const used = meterQuantity(
      meter.aggregation,
      stateOfRow(row),
      { start: row.period_start, end: row.period_end },
      row.carried ?? 0,
    );
    const lineKey = usageLineWindowKey(row.period_key, row.group_key);
    const earlier = billed.get(`${row.feature_lookup_key}\u0000${lineKey}`);
    const dimensions = JSON.parse(row.dimensions || "{}") as Record<string, PropertyValue | null>;
    return [
      {
        featureLookupKey: row.feature_lookup_key,
        windowKey: row.period_key,
        windowStart: new Date(row.period_start),
        windowEnd: row.period_end ? new Date(row.period_end) : null,
        used,
        alreadyBilled: earlier?.units ?? 0,
        alreadyCharged: earlier?.cents ?? 0,
        groupKey: row.group_key,
        dimensions:
          Object.keys(dimensions).length > 0 ? dimensions : dimensionsOfGroupKey(row.group_key),
      },
    ];
  });
}

// The level each group of a feature holds when a window starts: the sum of
// its changes in the tenant's windows that ended by then.
const LEVELS_BEFORE = `
SELECT group_key, max(dimensions) AS dimensions, sum(value_sum) AS level
  FROM usage_meter_groups
 WHERE tenant_id = ?1 AND feature_lookup_key = ?2 AND period_end IS NOT NULL AND period_end <= ?3
 GROUP BY group_key HAVING sum(value_sum) <> 0`;

/**
 * Rows for the windows in range where a WEIGHTED_SUM group holds a level
 * but had no event: nothing changed, so the window bills the level it
 * carried in, in full.
 */
async function heldLevelRows(
  d1: D1Database,
  query: MeterWindowsQuery,
  rows: readonly MeterGroupRow[],
): Promise<MeterGroupRow[]> {
  const held: MeterGroupRow[] = [];
  for (const [feature, { meter, windows }] of query.meters) {
    if (meter.aggregation !== "WEIGHTED_SUM") continue;
    for (const window of windows) {
      const start = window.start.toISOString();
      if (window.end === null || start < query.billableFrom || start >= query.before) continue;
      const present = new Set(
        rows
          .filter((row) => row.feature_lookup_key === feature && row.period_key === window.key)
          .map((row) => row.group_key),
      );
      const { results } = await d1
        .prepare(LEVELS_BEFORE)
        .bind(query.tenantId, feature, start)
        .all<{ group_key: string; dimensions: string; level: number }>();
      for (const level of results) {
        if (present.has(level.group_key)) continue;
        held.push({
          ...EMPTY_ROW,
          feature_lookup_key: feature,
          period_key: window.key,
          period_start: start,
          period_end: window.end.toISOString(),
          group_key: level.group_key,
          dimensions: level.dimensions,
          carried: level.level,
        });
      }
    }
  }
  return held;
}

const EMPTY_ROW = {
  events: 0,
  value_sum: 0,
  value_min: null,
  value_max: null,
  latest_value: null,
  latest_at: null,
  latest_id: null,
  weighted_ms: 0,
  distinct_values: 0,
} as const;
