import {
  EMPTY_METER_STATE,
  groupKeyOf,
  MAX_GROUP_BY,
  type Meter,
  type MeterAggregation,
  type MeterState,
  mergeMeterStates,
  meterQuantity,
  OVERFLOW_GROUP_KEY,
  type PropertyValue,
  stateOfRow,
} from "@edge-platform/shared/billing/meter";
import type { TimeseriesBucket } from "./usage-timeseries.ts";

/*
 * Reads of metered usage by dimension: which properties a read may split
 * by, the combinations the stored group summaries fall into, and the
 * timeseries buckets of a meter's quantity. Summaries are merged (never
 * re-read from events), so a coarser split or a day is the merge of the
 * groups or hours in it.
 */

export type Dimensions = Record<string, PropertyValue | null>;

/** A combination of the requested properties' values, or the overflow group. */
export interface Combination {
  /** groupKeyOf the values, or OVERFLOW_GROUP_KEY. */
  key: string;
  /** The requested properties with their values ({} for the overflow group). */
  dimensions: Dimensions;
  overflow: boolean;
}

/** The one combination of a read without groupBy. */
export const ALL_USAGE: Combination = { key: "", dimensions: {}, overflow: false };

/**
 * The properties of a `groupBy` query value ("model,direction"), each one
 * the feature's meter splits by, or why the read cannot split so. A
 * property outside the meter's groupBy was never kept apart, so no stored
 * summary could answer it.
 */
export function parseGroupBy(
  raw: string,
  feature: string,
  meter: Meter | null,
): { ok: true; groupBy: string[] } | { ok: false; message: string } {
  const names = raw.split(",").map((name) => name.trim());
  if (names.some((name) => name === "") || names.length > MAX_GROUP_BY) {
    return {
      ok: false,
      message: `groupBy must name 1 to ${MAX_GROUP_BY} properties separated by commas`,
    };
  }
  const twice = names.find((name, index) => names.indexOf(name) !== index);
  if (twice) return { ok: false, message: `groupBy lists "${twice}" twice` };
  const allowed = meter?.groupBy ?? [];
  const outside = names.find((name) => !allowed.includes(name));
  if (outside !== undefined) {
    const kept =
      allowed.length > 0
        ? `its meter groups by: ${allowed.join(", ")}`
        : "its meter has no groupBy";
    return {
      ok: false,
      message: `groupBy: "${outside.slice(0, 64)}" is not a property feature "${feature}" is split by (${kept})`,
    };
  }
  return { ok: true, groupBy: names };
}

/** The combination of a summary row: its overflow flag and the requested properties' values in order. */
export function combinationOf(
  groupBy: readonly string[],
  overflow: boolean,
  values: readonly (PropertyValue | null)[],
): Combination {
  if (overflow) return { key: OVERFLOW_GROUP_KEY, dimensions: {}, overflow: true };
  const dimensions: Dimensions = {};
  groupBy.forEach((name, index) => {
    dimensions[name] = values[index] ?? null;
  });
  return { key: groupKeyOf(dimensions), dimensions, overflow: false };
}

/** Combinations in a stable order: by their values, the overflow group last. */
export function byCombination(a: Combination, b: Combination): number {
  if (a.overflow !== b.overflow) return a.overflow ? 1 : -1;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** Summary columns merged in SQL; `latest` packs latest_at, latest_id and latest_value (LATEST_SEPARATOR). */
export interface SummaryColumns {
  events: number;
  value_sum: number;
  value_min: number | null;
  value_max: number | null;
  weighted_ms: number;
  distinct_values: number;
  latest: string | null;
}

/** Joins the packed `latest` column's parts: what no ISO time or id holds. */
export const LATEST_SEPARATOR = "\u001f";

export function stateOfSummary(row: SummaryColumns): MeterState {
  const [at, id, value] = row.latest === null ? [] : row.latest.split(LATEST_SEPARATOR);
  return stateOfRow({
    events: Number(row.events ?? 0),
    value_sum: Number(row.value_sum ?? 0),
    value_min: row.value_min,
    value_max: row.value_max,
    latest_value: value === undefined || value === "" ? null : Number(value),
    latest_at: at ?? null,
    latest_id: id || null,
    weighted_ms: Number(row.weighted_ms ?? 0),
    distinct_values: Number(row.distinct_values ?? 0),
  });
}

/** One clock hour's merged summary of one combination. */
export interface HourSummary {
  hourStart: string;
  combination: Combination;
  state: MeterState;
}

export interface MeterSeries {
  combination: Combination;
  data: TimeseriesBucket[];
}

/**
 * The buckets of a meter's quantity over `range`, in total and per
 * combination, every bucket listed. Each bucket's value is meterQuantity
 * of the merge of its hours with an open window, so SUM, COUNT, MIN, MAX,
 * AVG and LATEST are those of the bucket's events and UNIQUE_COUNT the
 * distinct values first seen during it; WEIGHTED_SUM is the level at the
 * bucket's end: `levelsBefore` (the changes stored before the range) plus
 * the changes up to the bucket's end, so a bucket without events keeps
 * the level. Hours outside the range are ignored.
 */
export function meterBuckets(
  range: { from: Date; to: Date; buckets: number },
  aggregation: MeterAggregation,
  hours: readonly HourSummary[],
  levelsBefore: readonly { combination: Combination; level: number }[],
): { data: TimeseriesBucket[]; series: MeterSeries[] } {
  const first = range.from.getTime();
  const size = (range.to.getTime() - first) / range.buckets;
  const empty = () => new Array<MeterState>(range.buckets).fill(EMPTY_METER_STATE);
  const total = { states: empty(), level: 0 };
  const combinations = new Map<
    string,
    { combination: Combination; states: MeterState[]; level: number }
  >();
  const entryOf = (combination: Combination) => {
    let entry = combinations.get(combination.key);
    if (!entry) {
      entry = { combination, states: empty(), level: 0 };
      combinations.set(combination.key, entry);
    }
    return entry;
  };
  for (const { combination, level } of levelsBefore) {
    entryOf(combination).level += level;
    total.level += level;
  }
  for (const hour of hours) {
    const index = Math.floor((Date.parse(hour.hourStart) - first) / size);
    if (index < 0 || index >= range.buckets) continue;
    const entry = entryOf(hour.combination);
    entry.states[index] = mergeMeterStates(entry.states[index] ?? EMPTY_METER_STATE, hour.state);
    total.states[index] = mergeMeterStates(total.states[index] ?? EMPTY_METER_STATE, hour.state);
  }
  const bucketsOf = (states: MeterState[], levelBefore: number): TimeseriesBucket[] => {
    let carried = levelBefore;
    return states.map((state, index) => {
      const start = new Date(first + index * size).toISOString();
      const value = meterQuantity(aggregation, state, { start, end: null }, carried);
      if (aggregation === "WEIGHTED_SUM") carried = value;
      return { start, end: new Date(first + (index + 1) * size).toISOString(), value };
    });
  };
  return {
    data: bucketsOf(total.states, total.level),
    series: [...combinations.values()]
      .sort((a, b) => byCombination(a.combination, b.combination))
      .map((entry) => ({
        combination: entry.combination,
        data: bucketsOf(entry.states, entry.level),
      })),
  };
}
