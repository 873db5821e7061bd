import {
  dimensionsOfGroupKey,
  EMPTY_METER_STATE,
  eventMeterState,
  type MeterContribution,
  type MeterState,
  mergeMeterStates,
  type PropertyValue,
} from "@edge-platform/shared/billing/meter";
import { hourStartOf } from "./hourly-storage.ts";

/*
 * usage_meter_groups: what a flush adds to the meter groups of the events
 * it claimed, folded in by the same D1 batch and flush-id guard that adds
 * their units to usage_aggregates, so an event is in a group's summary
 * exactly when its units are in its window.
 */

/** A flush's merged share of one group of one window. */
export interface MeterGroupDelta {
  subscriptionId: string;
  featureLookupKey: string;
  periodKey: string;
  periodStart: string;
  periodEnd: string | null;
  groupKey: string;
  dimensions: Record<string, PropertyValue | null>;
  state: MeterState;
}

/** A flush's merged share of one group in one clock hour of its events' timestamps. */
export interface MeterHourDelta {
  subscriptionId: string;
  featureLookupKey: string;
  hourStart: string;
  groupKey: string;
  dimensions: Record<string, PropertyValue | null>;
  state: MeterState;
}

/** A claimed event with its contribution and the window it counted in. */
export interface ClaimedMeterEvent {
  id: string;
  timestamp: string;
  subscriptionId: string;
  featureLookupKey: string;
  periodKey: string;
  periodStart: string;
  periodEnd: string | null;
  meter: MeterContribution;
}

/**
 * The events' contributions merged per bucket (`place` names each event's
 * bucket and what a new one holds, and the span its WEIGHTED_SUM part is
 * weighted over): one row to fold in per bucket.
 */
function mergedBy<T extends { state: MeterState }>(
  events: readonly ClaimedMeterEvent[],
  place: (event: ClaimedMeterEvent) => {
    id: string;
    span: { start: string; end: string | null };
    fresh: () => Omit<T, "state">;
  },
): T[] {
  const buckets = new Map<string, T>();
  for (const event of events) {
    const { id, span, fresh } = place(event);
    const bucket = buckets.get(id) ?? ({ ...fresh(), state: EMPTY_METER_STATE } as T);
    bucket.state = mergeMeterStates(
      bucket.state,
      eventMeterState(event.meter.value, event.timestamp, event.id, span, event.meter.newDistinct),
    );
    buckets.set(id, bucket);
  }
  return [...buckets.values()];
}

const dimensionsOf = (event: ClaimedMeterEvent) =>
  event.meter.dimensions ?? dimensionsOfGroupKey(event.meter.groupKey);

/**
 * The claimed events' contributions merged per group and clock hour. An
 * hour's WEIGHTED_SUM part is not kept (the level is a window's), and a
 * distinct value counts in the hour of the event that brought it.
 */
export function meterHourDeltas(events: readonly ClaimedMeterEvent[]): MeterHourDelta[] {
  return mergedBy<MeterHourDelta>(events, (event) => {
    const hourStart = hourStartOf(event.timestamp);
    return {
      id: `${event.subscriptionId}\u0000${event.featureLookupKey}\u0000${hourStart}\u0000${event.meter.groupKey}`,
      span: { start: hourStart, end: null },
      fresh: () => ({
        subscriptionId: event.subscriptionId,
        featureLookupKey: event.featureLookupKey,
        hourStart,
        groupKey: event.meter.groupKey,
        dimensions: dimensionsOf(event),
      }),
    };
  });
}

/** The claimed events' contributions merged per group: one row to fold in per group. */
export function meterGroupDeltas(events: readonly ClaimedMeterEvent[]): MeterGroupDelta[] {
  return mergedBy<MeterGroupDelta>(events, (event) => ({
    id: `${event.subscriptionId}\u0000${event.featureLookupKey}\u0000${event.periodKey}\u0000${event.meter.groupKey}`,
    span: { start: event.periodStart, end: event.periodEnd },
    fresh: () => ({
      subscriptionId: event.subscriptionId,
      featureLookupKey: event.featureLookupKey,
      periodKey: event.periodKey,
      periodStart: event.periodStart,
      periodEnd: event.periodEnd,
      groupKey: event.meter.groupKey,
      dimensions: dimensionsOf(event),
    }),
  }));
}

// One statement folds every group of the flush in (json_each over the
// groups), guarded like the aggregate increments by the flush id being
// absent, so a retried flush adds nothing twice. The SET expressions read
// the row as it was, so the LATEST columns move together. `usage_meter_groups`
// is keyed by window (`period_*`), `usage_meter_hourly` by clock hour.
const STATE_COLUMNS =
  "events, value_sum, value_min, value_max, latest_value, latest_at, latest_id, weighted_ms, distinct_values";
const STATE_VALUES = `json_extract(g.value, '$.n'), json_extract(g.value, '$.sum'),
       json_extract(g.value, '$.min'), json_extract(g.value, '$.max'), json_extract(g.value, '$.lv'),
       json_extract(g.value, '$.la'), json_extract(g.value, '$.li'), json_extract(g.value, '$.w'),
       json_extract(g.value, '$.u')`;

function foldSql(table: string, keyColumns: string, keyValues: string, conflict: string): string {
  const later = `(excluded.latest_at IS NOT NULL AND (${table}.latest_at IS NULL
      OR excluded.latest_at > ${table}.latest_at
      OR (excluded.latest_at = ${table}.latest_at AND excluded.latest_id > ${table}.latest_id)))`;
  const extreme = (column: string, pick: string) =>
    `${column} = CASE WHEN excluded.${column} IS NULL THEN ${table}.${column}
                   WHEN ${table}.${column} IS NULL THEN excluded.${column}
                   ELSE ${pick}(${table}.${column}, excluded.${column}) END`;
  return `
INSERT INTO ${table} (tenant_id, subscription_id, feature_lookup_key, ${keyColumns}, group_key, dimensions, ${STATE_COLUMNS})
SELECT ?1, json_extract(g.value, '$.s'), json_extract(g.value, '$.f'), ${keyValues},
       json_extract(g.value, '$.g'), json_extract(g.value, '$.d'), ${STATE_VALUES}
  FROM json_each(?2) g
 WHERE NOT EXISTS (SELECT 1 FROM usage_flushes WHERE id = ?3)
   AND EXISTS (SELECT 1 FROM subscriptions WHERE id = json_extract(g.value, '$.s') AND tenant_id = ?1)
ON CONFLICT (${conflict}) DO UPDATE SET
  events = ${table}.events + excluded.events,
  value_sum = ${table}.value_sum + excluded.value_sum,
  ${extreme("value_min", "min")},
  ${extreme("value_max", "max")},
  latest_value = CASE WHEN ${later} THEN excluded.latest_value ELSE ${table}.latest_value END,
  latest_at = CASE WHEN ${later} THEN excluded.latest_at ELSE ${table}.latest_at END,
  latest_id = CASE WHEN ${later} THEN excluded.latest_id ELSE ${table}.latest_id END,
  weighted_ms = ${table}.weighted_ms + excluded.weighted_ms,
  distinct_values = ${table}.distinct_values + excluded.distinct_values`;
}

const FOLD_GROUPS_UNLESS_APPLIED = foldSql(
  "usage_meter_groups",
  "period_key, period_start, period_end",
  "json_extract(g.value, '$.p'), json_extract(g.value, '$.ps'), json_extract(g.value, '$.pe')",
  "subscription_id, feature_lookup_key, period_key, group_key",
);

const FOLD_HOURS_UNLESS_APPLIED = foldSql(
  "usage_meter_hourly",
  "hour_start",
  "json_extract(g.value, '$.h')",
  "subscription_id, feature_lookup_key, hour_start, group_key",
);

function stateJson(state: MeterState) {
  return {
    n: state.events,
    sum: state.sum,
    min: state.min,
    max: state.max,
    lv: state.latestValue,
    la: state.latestAt,
    li: state.latestId,
    w: state.weightedMs,
    u: state.distinct,
  };
}

/** The statements folding a flush's groups (and their hours) in; none when it has no groups. */
export function meterGroupFlushStatements(
  d1: D1Database,
  flush: {
    id: string;
    tenantId: string;
    meterGroups?: MeterGroupDelta[];
    meterHours?: MeterHourDelta[];
  },
): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  const groups = flush.meterGroups ?? [];
  if (groups.length > 0) {
    const rows = groups.map((group) => ({
      s: group.subscriptionId,
      f: group.featureLookupKey,
      p: group.periodKey,
      ps: group.periodStart,
      pe: group.periodEnd,
      g: group.groupKey,
      d: JSON.stringify(group.dimensions),
      ...stateJson(group.state),
    }));
    statements.push(
      d1.prepare(FOLD_GROUPS_UNLESS_APPLIED).bind(flush.tenantId, JSON.stringify(rows), flush.id),
    );
  }
  const hours = flush.meterHours ?? [];
  if (hours.length > 0) {
    const rows = hours.map((hour) => ({
      s: hour.subscriptionId,
      f: hour.featureLookupKey,
      h: hour.hourStart,
      g: hour.groupKey,
      d: JSON.stringify(hour.dimensions),
      ...stateJson(hour.state),
    }));
    statements.push(
      d1.prepare(FOLD_HOURS_UNLESS_APPLIED).bind(flush.tenantId, JSON.stringify(rows), flush.id),
    );
  }
  return statements;
}
