import { z } from "zod";

/*
 * Meters: how a feature's usage is measured from its events. An event
 * carries `amount` and `properties`; a feature's meter picks which events
 * count (`filters`), what each contributes (`aggregation` of `property`),
 * and how its usage splits (`groupBy`). Pure rules shared by ingestion,
 * the usage pipeline, the EntitlementCounter and billing.
 *
 * A group's usage is kept as a MeterState, a summary that merges (the
 * state of a set of events is the merge of their one-event states, in any
 * order), so the counter can hand states to D1 per flush and D1 can fold
 * them into its rows without reading events again. The quantity billed is
 * read from the state once the window is known (meterQuantity).
 */

export const meterAggregations = [
  "SUM",
  "COUNT",
  "UNIQUE_COUNT",
  "MAX",
  "MIN",
  "AVG",
  "LATEST",
  "WEIGHTED_SUM",
] as const;
export type MeterAggregation = (typeof meterAggregations)[number];

/** A property value: a string of at most 256 characters or a finite number. */
export type PropertyValue = string | number;
export type EventProperties = Record<string, PropertyValue>;

export interface Meter {
  aggregation: MeterAggregation;
  /** The property aggregated; null: SUM of `amount` (or COUNT of events). */
  property: string | null;
  /** Only events whose property has one of the listed values count. */
  filters: Record<string, PropertyValue[]>;
  /** Up to 3 properties whose values split the usage into groups. */
  groupBy: string[];
}

/** The meter of a feature that has none: SUM of `amount`, no filter, no groups. */
export const DEFAULT_METER: Meter = {
  aggregation: "SUM",
  property: null,
  filters: {},
  groupBy: [],
};

export const PROPERTY_KEY_PATTERN = /^[a-z0-9_]{1,64}$/;
export const MAX_EVENT_PROPERTIES = 20;
export const MAX_PROPERTY_TEXT = 256;
export const MAX_GROUP_BY = 3;
export const MAX_FILTER_PROPERTIES = 10;
export const MAX_FILTER_VALUES = 100;
/**
 * Group combinations one feature keeps apart in one window (per
 * subscription). Events of a further combination are still counted and
 * priced, in the overflow group (OVERFLOW_GROUP_KEY), at the entitlement's
 * default price.
 */
export const MAX_GROUP_COMBINATIONS = 1000;
export const OVERFLOW_GROUP_KEY = "*";
/** The group of a meter with no groupBy. */
export const NO_GROUP_KEY = "";

/** Aggregations that read a numeric property. */
const NUMERIC: ReadonlySet<MeterAggregation> = new Set([
  "MAX",
  "MIN",
  "AVG",
  "LATEST",
  "WEIGHTED_SUM",
]);

/** Aggregations whose window total only grows as events arrive (quotas, credits, thresholds). */
export const GROWING_AGGREGATIONS: ReadonlySet<MeterAggregation> = new Set([
  "SUM",
  "COUNT",
  "UNIQUE_COUNT",
]);

const propertyValue = z.union([z.string().max(MAX_PROPERTY_TEXT), z.number()]);

export const meterSchema = z.strictObject({
  aggregation: z.enum(meterAggregations, {
    message: `meter.aggregation must be one of: ${meterAggregations.join(", ")}`,
  }),
  property: z
    .string()
    .regex(PROPERTY_KEY_PATTERN, "meter.property must match [a-z0-9_]{1,64}")
    .nullable()
    .optional(),
  filters: z.record(z.string(), z.array(propertyValue)).optional(),
  groupBy: z.array(z.string()).optional(),
});
export type MeterInput = z.infer<typeof meterSchema>;

/** The meter a request describes, completed with defaults, or why it cannot be used. */
export function resolveMeter(
  input: MeterInput,
): { ok: true; meter: Meter } | { ok: false; message: string } {
  const meter: Meter = {
    aggregation: input.aggregation,
    property: input.property ?? null,
    filters: input.filters ?? {},
    groupBy: input.groupBy ?? [],
  };
  const problem = meterProblem(meter);
  return problem ? { ok: false, message: problem } : { ok: true, meter };
}

/** Why a meter cannot be used (the first problem found), or undefined. */
export function meterProblem(meter: Meter): string | undefined {
  const { aggregation, property, filters, groupBy } = meter;
  if ((NUMERIC.has(aggregation) || aggregation === "UNIQUE_COUNT") && property === null) {
    return `meter.property is required for ${aggregation}`;
  }
  if (aggregation === "COUNT" && property !== null) {
    return "meter.property is not used by COUNT: leave it out";
  }
  const named = [...(property ? [property] : []), ...groupBy, ...Object.keys(filters)];
  if (named.includes("__proto__")) return 'meter: property "__proto__" is reserved';
  if (groupBy.length > MAX_GROUP_BY)
    return `meter.groupBy takes at most ${MAX_GROUP_BY} properties`;
  if (new Set(groupBy).size !== groupBy.length) return "meter.groupBy lists a property twice";
  for (const key of groupBy) {
    if (!PROPERTY_KEY_PATTERN.test(key))
      return `meter.groupBy: "${key}" must match [a-z0-9_]{1,64}`;
  }
  const filterKeys = Object.keys(filters);
  if (filterKeys.length > MAX_FILTER_PROPERTIES) {
    return `meter.filters takes at most ${MAX_FILTER_PROPERTIES} properties`;
  }
  for (const key of filterKeys) {
    if (!PROPERTY_KEY_PATTERN.test(key))
      return `meter.filters: "${key}" must match [a-z0-9_]{1,64}`;
    const values = filters[key] ?? [];
    if (values.length === 0 || values.length > MAX_FILTER_VALUES) {
      return `meter.filters.${key} must list 1 to ${MAX_FILTER_VALUES} values`;
    }
    if (values.some((value) => typeof value === "number" && !Number.isFinite(value))) {
      return `meter.filters.${key} values must be strings or finite numbers`;
    }
  }
  return undefined;
}

/** Whether a feature with this meter is measured as before meters existed (SUM of amount, one group). */
export function isPlainMeter(meter: Meter | null | undefined): boolean {
  return (
    !meter ||
    (meter.aggregation === "SUM" &&
      meter.property === null &&
      meter.groupBy.length === 0 &&
      Object.keys(meter.filters).length === 0)
  );
}

/** Why an event's `properties` cannot be stored, naming the key; undefined when they are fine. */
export function propertiesProblem(
  value: unknown,
): { key: string | null; message: string } | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { key: null, message: "properties must be an object" };
  }
  // A for-in loop over own keys: every event passes here at several stages.
  const record = value as Record<string, unknown>;
  let keys = 0;
  for (const key in record) {
    if (!Object.hasOwn(record, key)) continue;
    if (++keys > MAX_EVENT_PROPERTIES) {
      return { key: null, message: `properties must have at most ${MAX_EVENT_PROPERTIES} keys` };
    }
    const problem = propertyProblem(key, record[key]);
    if (problem) return { key, message: problem };
  }
  return undefined;
}

/**
 * Properties as the pipeline's messages and the counter's inputs parse
 * them: the rules of propertiesProblem, checked by a plain loop (a zod
 * record of unions costs about ten times as much per event, and every
 * event is parsed at several stages).
 */
export const eventPropertiesSchema = z.custom<EventProperties>(
  (value) => value !== undefined && propertiesProblem(value) === undefined,
  {
    message: "properties must be an object of [a-z0-9_]{1,64} keys with strings or finite numbers",
  },
);

function propertyProblem(key: string, item: unknown): string | undefined {
  if (!PROPERTY_KEY_PATTERN.test(key)) {
    return `property key "${key.slice(0, 80)}" must match [a-z0-9_]{1,64}`;
  }
  if (key === "__proto__") return 'property key "__proto__" is reserved';
  if (typeof item === "string") {
    return item.length > MAX_PROPERTY_TEXT
      ? `property "${key}" must be at most ${MAX_PROPERTY_TEXT} characters`
      : undefined;
  }
  if (typeof item !== "number" || !Number.isFinite(item)) {
    return `property "${key}" must be a string or a finite number`;
  }
  return undefined;
}

/** The canonical key of a group's values (stable key order), "" without groupBy. */
export function groupKeyOf(dimensions: Record<string, PropertyValue | null>): string {
  const keys = Object.keys(dimensions).sort();
  if (keys.length === 0) return NO_GROUP_KEY;
  return JSON.stringify(keys.map((key) => [key, dimensions[key] ?? null]));
}

/** The values a group key names ({} for the ungrouped and the overflow group). */
export function dimensionsOfGroupKey(groupKey: string): Record<string, PropertyValue | null> {
  if (groupKey === NO_GROUP_KEY || groupKey === OVERFLOW_GROUP_KEY) return {};
  const pairs = JSON.parse(groupKey) as [string, PropertyValue | null][];
  return Object.fromEntries(pairs);
}

/** A property's own value (never one inherited from Object.prototype, like `constructor`). */
function own(properties: EventProperties, key: string): PropertyValue | undefined {
  return Object.hasOwn(properties, key) ? properties[key] : undefined;
}

function sameValue(a: PropertyValue | undefined, b: PropertyValue): boolean {
  return a !== undefined && String(a) === String(b);
}

/** What one event adds to its feature's usage under a meter. */
export type MeterReading =
  | { counts: false; reason: "FILTERED" }
  | { counts: false; reason: "PROPERTY_MISSING" | "PROPERTY_NOT_NUMERIC"; message: string }
  | {
      counts: true;
      groupKey: string;
      dimensions: Record<string, PropertyValue | null>;
      /** The number aggregated (1 for COUNT, `amount` for SUM without property). */
      value: number;
      /** The distinct value (UNIQUE_COUNT). */
      distinct: string | null;
    };

/** How an event with `amount` and `properties` counts under `meter`. */
export function readEvent(
  meter: Meter,
  event: { amount: number; properties: EventProperties },
): MeterReading {
  const { properties } = event;
  for (const [key, allowed] of Object.entries(meter.filters)) {
    if (!allowed.some((value) => sameValue(own(properties, key), value))) {
      return { counts: false, reason: "FILTERED" };
    }
  }
  const dimensions: Record<string, PropertyValue | null> = {};
  for (const key of meter.groupBy) dimensions[key] = own(properties, key) ?? null;
  const groupKey = groupKeyOf(dimensions);
  const property = meter.property;
  if (meter.aggregation === "COUNT") {
    return { counts: true, groupKey, dimensions, value: 1, distinct: null };
  }
  if (property === null) {
    return { counts: true, groupKey, dimensions, value: event.amount, distinct: null };
  }
  const raw = own(properties, property);
  if (raw === undefined) {
    return {
      counts: false,
      reason: "PROPERTY_MISSING",
      message: `the ${meter.aggregation} meter reads property "${property}", which the event does not have`,
    };
  }
  if (meter.aggregation === "UNIQUE_COUNT") {
    return { counts: true, groupKey, dimensions, value: 1, distinct: String(raw) };
  }
  const value = typeof raw === "number" ? raw : Number(raw);
  if (typeof raw === "string" && (raw.trim() === "" || !Number.isFinite(value))) {
    return {
      counts: false,
      reason: "PROPERTY_NOT_NUMERIC",
      message: `the ${meter.aggregation} meter reads property "${property}" as a number, but it is "${raw.slice(0, 40)}"`,
    };
  }
  return { counts: true, groupKey, dimensions, value, distinct: null };
}

/**
 * The summary of a group's events in one window: merges with any other
 * (mergeMeterStates), so per-flush summaries add up to the window's.
 */
export interface MeterState {
  events: number;
  sum: number;
  min: number | null;
  max: number | null;
  latestValue: number | null;
  latestAt: string | null;
  /** Breaks ties of `latestAt`: the later received (our ids are time-ordered). */
  latestId: string | null;
  /** WEIGHTED_SUM: sum of change x (window end - its time), in ms. */
  weightedMs: number;
  /** Distinct values first seen (UNIQUE_COUNT; decided by the counter). */
  distinct: number;
}

export const EMPTY_METER_STATE: MeterState = {
  events: 0,
  sum: 0,
  min: null,
  max: null,
  latestValue: null,
  latestAt: null,
  latestId: null,
  weightedMs: 0,
  distinct: 0,
};

/** The state of one event: `value` at `at` (ISO), our id `id`, `newDistinct` when it brought a new value. */
export function eventMeterState(
  value: number,
  at: string,
  id: string,
  window: { start: string; end: string | null },
  newDistinct: boolean,
): MeterState {
  const atMs = Date.parse(at);
  const endMs = window.end === null ? null : Date.parse(window.end);
  const startMs = Date.parse(window.start);
  const held = endMs === null ? 0 : Math.max(0, endMs - Math.max(startMs, Math.min(atMs, endMs)));
  return {
    events: 1,
    sum: value,
    min: value,
    max: value,
    latestValue: value,
    latestAt: at,
    latestId: id,
    weightedMs: value * held,
    distinct: newDistinct ? 1 : 0,
  };
}

function later(a: MeterState, b: MeterState): MeterState {
  if (b.latestAt === null) return a;
  if (a.latestAt === null) return b;
  if (b.latestAt > a.latestAt) return b;
  if (b.latestAt === a.latestAt && (b.latestId ?? "") > (a.latestId ?? "")) return b;
  return a;
}

function pick(a: number | null, b: number | null, choose: (x: number, y: number) => number) {
  if (a === null) return b;
  if (b === null) return a;
  return choose(a, b);
}

export function mergeMeterStates(a: MeterState, b: MeterState): MeterState {
  const latest = later(a, b);
  return {
    events: a.events + b.events,
    sum: a.sum + b.sum,
    min: pick(a.min, b.min, Math.min),
    max: pick(a.max, b.max, Math.max),
    latestValue: latest.latestValue,
    latestAt: latest.latestAt,
    latestId: latest.latestId,
    weightedMs: a.weightedMs + b.weightedMs,
    distinct: a.distinct + b.distinct,
  };
}

/**
 * The quantity a group's state bills in its window. WEIGHTED_SUM: the
 * level carried in from earlier windows (the sum of their changes) plus
 * each change weighted by the share of the window it was held, so 100
 * held for half the window bills 50. A window with no end (NEVER resets)
 * bills the level reached.
 */
export function meterQuantity(
  aggregation: MeterAggregation,
  state: MeterState,
  window: { start: string; end: string | null },
  carriedLevel = 0,
): number {
  switch (aggregation) {
    case "SUM":
      return state.sum;
    case "COUNT":
      return state.events;
    case "UNIQUE_COUNT":
      return state.distinct;
    case "MAX":
      return state.max ?? 0;
    case "MIN":
      return state.min ?? 0;
    case "AVG":
      return state.events === 0 ? 0 : state.sum / state.events;
    case "LATEST":
      return state.latestValue ?? 0;
    case "WEIGHTED_SUM": {
      if (window.end === null) return carriedLevel + state.sum;
      const length = Date.parse(window.end) - Date.parse(window.start);
      return length <= 0 ? carriedLevel + state.sum : carriedLevel + state.weightedMs / length;
    }
  }
}

/**
 * What the usage pipeline hands the counter with an event of a feature
 * that has a meter: the event's reading (readEvent), before the counter
 * decides its group against the combination bound and whether its
 * distinct value is new.
 */
export interface EventMeterReading {
  groupKey: string;
  dimensions: Record<string, PropertyValue | null>;
  value: number;
  distinct: string | null;
}

/**
 * A counted event's share of its group, as the counter's flush carries it
 * to D1. Stored and carried without `dimensions` (its group key names
 * them: dimensionsOfGroupKey), to keep each event's row small.
 */
export interface MeterContribution {
  groupKey: string;
  dimensions?: Record<string, PropertyValue | null>;
  value: number;
  /** Whether the event brought its group a distinct value not seen before in the window. */
  newDistinct: boolean;
}

/**
 * The units an event adds to the counter's window total (what HARD limits,
 * alerts and credits count): for a plain meter its `amount`; COUNT and
 * UNIQUE_COUNT 1 (the counter keeps only a new distinct value's); SUM its
 * value when that is a whole number; the other aggregations, whose total
 * does not only grow, none. A filtered event adds nothing.
 */
/** The largest value one event adds to a counter (its MAX_USAGE_AMOUNT). */
const MAX_COUNTED_VALUE = 1_000_000_000;

export function counterUnits(meter: Meter, amount: number, reading: MeterReading): number {
  if (isPlainMeter(meter)) return amount;
  if (!reading.counts) return 0;
  switch (meter.aggregation) {
    case "COUNT":
    case "UNIQUE_COUNT":
      return 1;
    case "SUM":
      return Number.isSafeInteger(reading.value) &&
        reading.value >= 0 &&
        reading.value <= MAX_COUNTED_VALUE
        ? reading.value
        : 0;
    default:
      return 0;
  }
}

/**
 * The summary columns of a stored group row (usage_meter_groups,
 * usage_meter_hourly), as D1 answers them: read back into a MeterState by
 * stateOfRow, so billing and the usage reads agree on what a row holds.
 */
export interface MeterStateColumns {
  events: number;
  value_sum: number;
  value_min: number | null;
  value_max: number | null;
  latest_value: number | null;
  latest_at: string | null;
  latest_id: string | null;
  weighted_ms: number;
  distinct_values: number;
}

export function stateOfRow(row: MeterStateColumns): MeterState {
  return {
    events: row.events,
    sum: row.value_sum,
    min: row.value_min,
    max: row.value_max,
    latestValue: row.latest_value,
    latestAt: row.latest_at,
    latestId: row.latest_id,
    weightedMs: row.weighted_ms,
    distinct: row.distinct_values,
  };
}
