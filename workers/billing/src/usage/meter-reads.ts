import {
  isPlainMeter,
  type Meter,
  type MeterAggregation,
  type MeterState,
  OVERFLOW_GROUP_KEY,
  type PropertyValue,
} from "@edge-platform/shared/billing/meter";
import type { Database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import {
  ALL_USAGE,
  type Combination,
  combinationOf,
  type HourSummary,
  parseGroupBy,
  type SummaryColumns,
  stateOfSummary,
} from "./domain/meter-buckets.ts";

/*
 * Reads of the usage of metered features from their stored group
 * summaries (usage_meter_groups per reset window, usage_meter_hourly per
 * clock hour). The summaries are merged in SQL per requested combination
 * of property values, so a read of a feature with many groups and hours
 * moves one row per window (or hour) and combination, not per group.
 */

/** The meter a feature has in the catalog, or null (plain, or no such feature). */
export async function readFeatureMeter(db: Database, lookupKey: string): Promise<Meter | null> {
  const row = await db.$client
    .prepare("SELECT meter FROM features WHERE lookup_key = ?1")
    .bind(lookupKey)
    .first<{ meter: string | null }>();
  const meter = row?.meter ? (JSON.parse(row.meter) as Meter) : null;
  return isPlainMeter(meter) ? null : meter;
}

/** The properties a read splits by, checked against the feature's meter (422 when it cannot). */
export function checkedGroupBy(raw: string, feature: string, meter: Meter | null): string[] {
  const parsed = parseGroupBy(raw, feature, meter);
  if (!parsed.ok) throw new ApiError(422, parsed.message, { code: "group_by_invalid" });
  return parsed.groupBy;
}

/** Bound parameters of one statement, numbered as they are added. */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `?${this.values.length}`;
  }
}

// Merges stored summaries in SQL as mergeMeterStates does: sums, extremes,
// and the latest value packed behind its time and id so max() picks it
// (times are ISO-8601, compared as text as the flush compares them), with
// 17 significant digits so the value reads back exactly.
const SUMMARY = `sum(events) AS events, sum(value_sum) AS value_sum,
       min(value_min) AS value_min, max(value_max) AS value_max,
       sum(weighted_ms) AS weighted_ms, sum(distinct_values) AS distinct_values,
       max(latest_at || char(31) || coalesce(latest_id, '') || char(31) ||
           CASE WHEN latest_value IS NULL THEN '' ELSE printf('%!.17g', latest_value) END) AS latest`;

/** The select and group-by terms of a split: the overflow flag, then one column per property. */
function splitColumns(groupBy: readonly string[], params: Params) {
  if (groupBy.length === 0) return { select: "", names: "" };
  const columns = groupBy.map(
    (name, index) =>
      `CASE WHEN group_key = '${OVERFLOW_GROUP_KEY}' THEN NULL ELSE json_extract(dimensions, ${params.add(`$.${name}`)}) END AS d${index}`,
  );
  const names = ["overflow", ...groupBy.map((_, index) => `d${index}`)].join(", ");
  return {
    select: `, CASE WHEN group_key = '${OVERFLOW_GROUP_KEY}' THEN 1 ELSE 0 END AS overflow, ${columns.join(", ")}`,
    names: `, ${names}`,
  };
}

type SplitRow = { overflow?: number } & Record<`d${number}`, PropertyValue | null>;

function combinationOfRow(groupBy: readonly string[], row: SplitRow): Combination {
  if (groupBy.length === 0) return ALL_USAGE;
  return combinationOf(
    groupBy,
    row.overflow === 1,
    groupBy.map((_, index) => row[`d${index}`] ?? null),
  );
}

/** A metered window's usage of one combination, merged over its groups. */
export interface WindowSummary {
  subscriptionId: string;
  feature: string;
  periodKey: string;
  periodStart: string;
  periodEnd: string | null;
  aggregation: MeterAggregation;
  combination: Combination;
  state: MeterState;
  /** WEIGHTED_SUM: the level the merged groups carry in from earlier windows. */
  carried: number;
  updatedAt: string;
}

type WindowRow = SummaryColumns &
  SplitRow & {
    subscription_id: string;
    feature_lookup_key: string;
    period_key: string;
    period_start: string;
    period_end: string | null;
    aggregation: MeterAggregation;
    carried: number | null;
    updated_at: string;
  };

/**
 * The tenant's metered windows (usage_meter_groups), one summary per window
 * and combination of `groupBy` values. A window's aggregation is the one
 * its subscription counted with (the snapshot's meter), else the
 * feature's. `carried` is summed per group like billing's: the group's
 * changes in the tenant's earlier windows of the feature.
 */
export async function readWindowSummaries(
  db: Database,
  tenantId: string,
  filter: { feature?: string; periodKey?: string; subscriptionId?: string },
  groupBy: readonly string[],
): Promise<WindowSummary[]> {
  const params = new Params();
  const conditions = [`g.tenant_id = ${params.add(tenantId)}`];
  if (filter.feature) conditions.push(`g.feature_lookup_key = ${params.add(filter.feature)}`);
  if (filter.periodKey) conditions.push(`g.period_key = ${params.add(filter.periodKey)}`);
  if (filter.subscriptionId) {
    conditions.push(`g.subscription_id = ${params.add(filter.subscriptionId)}`);
  }
  const split = splitColumns(groupBy, params);
  const statement = `
WITH grp AS (
  SELECT g.*, coalesce(
           (SELECT json_extract(s.meter, '$.aggregation') FROM entitlement_snapshots s
             WHERE s.subscription_id = g.subscription_id AND s.feature_lookup_key = g.feature_lookup_key),
           (SELECT json_extract(f.meter, '$.aggregation') FROM features f
             WHERE f.lookup_key = g.feature_lookup_key),
           'SUM') AS aggregation
    FROM usage_meter_groups g
   WHERE ${conditions.join(" AND ")}
)
SELECT subscription_id, feature_lookup_key, period_key, min(period_start) AS period_start,
       max(period_end) AS period_end, max(aggregation) AS aggregation${split.select},
       ${SUMMARY}, max(updated_at) AS updated_at,
       sum(CASE WHEN aggregation = 'WEIGHTED_SUM' THEN
             (SELECT coalesce(sum(p.value_sum), 0) FROM usage_meter_groups p
               WHERE p.tenant_id = grp.tenant_id AND p.feature_lookup_key = grp.feature_lookup_key
                 AND p.group_key = grp.group_key AND p.period_end IS NOT NULL
                 AND p.period_end <= grp.period_start)
           ELSE 0 END) AS carried
  FROM grp
 GROUP BY subscription_id, feature_lookup_key, period_key${split.names}`;
  const { results } = await db.$client
    .prepare(statement)
    .bind(...params.values)
    .all<WindowRow>();
  return results.map((row) => ({
    subscriptionId: row.subscription_id,
    feature: row.feature_lookup_key,
    periodKey: row.period_key,
    periodStart: row.period_start,
    periodEnd: row.period_end,
    aggregation: row.aggregation,
    combination: combinationOfRow(groupBy, row),
    state: stateOfSummary(row),
    carried: Number(row.carried ?? 0),
    updatedAt: row.updated_at,
  }));
}

/** The tenant's hours of a metered feature in [from, to), one summary per hour and combination. */
export async function readHourSummaries(
  db: Database,
  query: { tenantId: string; feature: string; from: string; to: string },
  groupBy: readonly string[],
): Promise<HourSummary[]> {
  const params = new Params();
  const tenant = params.add(query.tenantId);
  const feature = params.add(query.feature);
  const from = params.add(query.from);
  const to = params.add(query.to);
  const split = splitColumns(groupBy, params);
  const statement = `
SELECT hour_start${split.select}, ${SUMMARY}
  FROM usage_meter_hourly
 WHERE tenant_id = ${tenant} AND feature_lookup_key = ${feature}
   AND hour_start >= ${from} AND hour_start < ${to}
 GROUP BY hour_start${split.names}`;
  const { results } = await db.$client
    .prepare(statement)
    .bind(...params.values)
    .all<SummaryColumns & SplitRow & { hour_start: string }>();
  return results.map((row) => ({
    hourStart: row.hour_start,
    combination: combinationOfRow(groupBy, row),
    state: stateOfSummary(row),
  }));
}

/**
 * The WEIGHTED_SUM level each combination reached before `before`: the
 * sum of every change stored in earlier hours of the tenant's feature.
 */
export async function readLevelsBefore(
  db: Database,
  query: { tenantId: string; feature: string; before: string },
  groupBy: readonly string[],
): Promise<{ combination: Combination; level: number }[]> {
  const params = new Params();
  const tenant = params.add(query.tenantId);
  const feature = params.add(query.feature);
  const before = params.add(query.before);
  const split = splitColumns(groupBy, params);
  const grouping = split.names ? `GROUP BY ${split.names.slice(2)}` : "";
  const statement = `
SELECT coalesce(sum(value_sum), 0) AS level${split.select}
  FROM usage_meter_hourly
 WHERE tenant_id = ${tenant} AND feature_lookup_key = ${feature} AND hour_start < ${before}
 ${grouping}`;
  const { results } = await db.$client
    .prepare(statement)
    .bind(...params.values)
    .all<SplitRow & { level: number }>();
  return results
    .filter((row) => Number(row.level) !== 0)
    .map((row) => ({ combination: combinationOfRow(groupBy, row), level: Number(row.level) }));
}
