/**
 * Measures what meters keep, with the product's own statements on
 * node:sqlite like capacity-measure.ts: the EntitlementCounter's meter
 * groups (workers/billing/src/entitlements/counter/meter-groups.ts, the
 * class the counter runs over `ctx.storage.sql`: `meter_groups` and
 * `meter_values`) and the flush's fold into D1's `usage_meter_groups`
 * (usage/meter-groups-storage.ts) on the migrations' schema. Bytes from
 * dbstat, times in process CPU time (see capacity-measure.ts).
 */
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import {
  count,
  cpuMs,
  d1Database,
  migratedD1,
  pageBytes,
  sqlStorage,
  transaction,
} from "./capacity-measure.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");

interface Reading {
  groupKey: string;
  dimensions: Record<string, string>;
  value: number;
  distinct: string | null;
}

interface WindowKey {
  subscriptionId: string;
  featureKey: string;
  window: { key: string; start: Date; end: Date | null };
}

/** What this measurement calls of the counter's CounterMeterGroups. */
interface CounterMeterGroupsApi {
  place(key: WindowKey, reading: Reading): { groupKey: string; newDistinct: boolean };
}

interface ClaimedMeterEvent {
  id: string;
  timestamp: string;
  subscriptionId: string;
  featureLookupKey: string;
  periodKey: string;
  periodStart: string;
  periodEnd: string | null;
  meter: {
    groupKey: string;
    dimensions: Record<string, string>;
    value: number;
    newDistinct: boolean;
  };
}

/** Loaded at run time, as in capacity-measure.ts (typed against the Workers runtime). */
async function meterModules() {
  const billing = path.join(ROOT, "workers/billing/src");
  const counter = (await import(path.join(billing, "entitlements/counter/meter-groups.ts"))) as {
    CounterMeterGroups: new (sql: unknown) => CounterMeterGroupsApi;
  };
  const d1 = (await import(path.join(billing, "usage/meter-groups-storage.ts"))) as {
    meterGroupDeltas(events: ClaimedMeterEvent[]): unknown[];
    meterGroupFlushStatements(
      d1: unknown,
      flush: { id: string; tenantId: string; meterGroups: unknown[] },
    ): { run(): Promise<unknown> }[];
  };
  const meter = (await import(path.join(ROOT, "shared/src/billing/meter.ts"))) as {
    MAX_GROUP_COMBINATIONS: number;
    OVERFLOW_GROUP_KEY: string;
  };
  return { ...counter, ...d1, ...meter };
}

export interface MeterMeasurement {
  /** Distinct values placed per table measured. */
  values: number;
  /** A distinct value's `meter_values` row, ungrouped meter (group key ''). */
  valueBytes: number;
  /** The same with a 2-dimension group key (`[["direction","input"],["model","large"]]`). */
  groupedValueBytes: number;
  /** A group combination's `meter_groups` row. */
  groupRowBytes: number;
  /** A group's `usage_meter_groups` row in D1 with its index. */
  d1GroupRowBytes: number;
  /** CPU ms of one flush's fold statement, per group it folds (SQLite alone). */
  d1MsPerGroup: number;
  /** CPU ms per event of placing a reading in the counter, by case. */
  placeMsPerEvent: {
    /** A known group, no distinct value (the in-memory set; no statement). */
    known: number;
    /** A known group, a value new to it (one INSERT ... ON CONFLICT DO NOTHING that writes). */
    newValue: number;
    /** A known group, a value it has seen (the same INSERT, a no-op). */
    repeatValue: number;
    /** The first event of a combination (SELECT, count of the window's groups, INSERT). */
    newGroup: number;
    /** An event of a combination beyond MAX_GROUP_COMBINATIONS (SELECT and count, every time). */
    overflow: number;
  };
  maxGroupCombinations: number;
}

const FEATURE = "unique_users";
const PERIOD_START = "2026-11-01T00:00:00.000Z";
const PERIOD_END = "2026-12-01T00:00:00.000Z";
const GROUPED = { direction: "input", model: "large" };
const GROUPED_KEY = '[["direction","input"],["model","large"]]';

/** A subscription's monthly window of the feature, as the counter names it. */
function windowKey(subscriptionId: string): WindowKey {
  return {
    subscriptionId,
    featureKey: FEATURE,
    window: { key: PERIOD_START, start: new Date(PERIOD_START), end: new Date(PERIOD_END) },
  };
}

/** Places readings in batches of 1,000 (a transaction each, as a record batch is one step), CPU ms per reading. */
function placeAll(
  db: DatabaseSync,
  groups: CounterMeterGroupsApi,
  key: WindowKey,
  readings: Reading[],
): number {
  let ms = 0;
  for (let start = 0; start < readings.length; start += 1_000) {
    const batch = readings.slice(start, start + 1_000);
    const begin = cpuMs();
    transaction(db, () => {
      for (const reading of batch) groups.place(key, reading);
    });
    ms += cpuMs() - begin;
  }
  return ms / Math.max(1, readings.length);
}

/** Distinct values (36-char user ids) in one group of one window: bytes per row and the placing times. */
async function measureValues(groupKey: string, dimensions: Record<string, string>, values: number) {
  const { CounterMeterGroups } = await meterModules();
  const db = new DatabaseSync(":memory:");
  const groups = new CounterMeterGroups(sqlStorage(db, { cacheStatements: true }));
  const key = windowKey(crypto.randomUUID());
  const users = Array.from({ length: values }, () => crypto.randomUUID());
  const reading = (distinct: string | null): Reading => ({
    groupKey,
    dimensions,
    value: 1,
    distinct,
  });
  const newValue = placeAll(db, groups, key, users.map(reading));
  const repeatValue = placeAll(db, groups, key, users.map(reading));
  const known = placeAll(
    db,
    groups,
    key,
    users.map(() => reading(null)),
  );
  return {
    bytes: (pageBytes(db).get("meter_values") ?? 0) / count(db, "meter_values"),
    newValue,
    repeatValue,
    known,
  };
}

/** MAX_GROUP_COMBINATIONS groups in each of `windows` windows, then events of further combinations. */
async function measureGroups(windows: number) {
  const { CounterMeterGroups, MAX_GROUP_COMBINATIONS } = await meterModules();
  const db = new DatabaseSync(":memory:");
  const groups = new CounterMeterGroups(sqlStorage(db, { cacheStatements: true }));
  const combination = (index: number): Reading => {
    const dimensions = { direction: index % 2 ? "output" : "input", model: `m-${index}` };
    return {
      groupKey: JSON.stringify(Object.entries(dimensions)),
      dimensions,
      value: 1,
      distinct: null,
    };
  };
  let newGroup = 0;
  let key = windowKey(crypto.randomUUID());
  for (let window = 0; window < windows; window++) {
    key = windowKey(crypto.randomUUID());
    const readings = Array.from({ length: MAX_GROUP_COMBINATIONS }, (_, i) => combination(i));
    newGroup += placeAll(db, groups, key, readings) / windows;
  }
  const rows = count(db, "meter_groups");
  const bytes = (pageBytes(db).get("meter_groups") ?? 0) / rows;
  // The last window is full: every further combination counts in the overflow group.
  const beyond = Array.from({ length: 2_000 }, (_, i) => combination(MAX_GROUP_COMBINATIONS + i));
  const overflow = placeAll(db, groups, key, beyond);
  return { bytes, newGroup, overflow, maxGroupCombinations: MAX_GROUP_COMBINATIONS };
}

/**
 * The flush's fold into D1: `flushes` flushes of `groupsPerFlush` groups
 * (two events each), each in the next monthly window of the subscription,
 * so every group is a new `usage_meter_groups` row.
 */
async function measureD1Groups(flushes: number, groupsPerFlush: number) {
  const { meterGroupDeltas, meterGroupFlushStatements } = await meterModules();
  const { db, tenantId, subscriptionId } = migratedD1();
  const d1 = d1Database(db);
  let ms = 0;
  for (let flush = 0; flush < flushes; flush++) {
    const periodStart = new Date(Date.UTC(2026, flush, 1)).toISOString();
    const periodEnd = new Date(Date.UTC(2026, flush + 1, 1)).toISOString();
    const events = Array.from({ length: groupsPerFlush * 2 }, (_, index) => {
      const dimensions = { direction: index % 2 ? "output" : "input", model: `m-${index >> 1}` };
      return {
        id: crypto.randomUUID(),
        timestamp: new Date(Date.parse(periodStart) + index * 1_000).toISOString(),
        subscriptionId,
        featureLookupKey: FEATURE,
        periodKey: periodStart,
        periodStart,
        periodEnd,
        meter: {
          groupKey: JSON.stringify(Object.entries(dimensions)),
          dimensions,
          value: (index % 7) + 1,
          newDistinct: index % 3 === 0,
        },
      };
    });
    const [statement] = meterGroupFlushStatements(d1, {
      id: crypto.randomUUID(),
      tenantId,
      meterGroups: meterGroupDeltas(events),
    });
    const start = cpuMs();
    await statement?.run();
    ms += cpuMs() - start;
  }
  const rows = count(db, "usage_meter_groups");
  const bytes = [...pageBytes(db)]
    .filter(
      ([name]) =>
        name.startsWith("usage_meter_groups") || name === "sqlite_autoindex_usage_meter_groups_1",
    )
    .reduce((sum, [, size]) => sum + size, 0);
  return { rowBytes: bytes / rows, msPerGroup: ms / Math.max(1, rows) };
}

export async function measureMeters(
  options: { values?: number; groupWindows?: number; d1Flushes?: number } = {},
): Promise<MeterMeasurement> {
  const values = options.values ?? 50_000;
  const ungrouped = await measureValues("", {}, values);
  const grouped = await measureValues(GROUPED_KEY, GROUPED, values);
  const groups = await measureGroups(options.groupWindows ?? 20);
  const d1 = await measureD1Groups(options.d1Flushes ?? 20, 1_000);
  return {
    values,
    valueBytes: ungrouped.bytes,
    groupedValueBytes: grouped.bytes,
    groupRowBytes: groups.bytes,
    d1GroupRowBytes: d1.rowBytes,
    d1MsPerGroup: d1.msPerGroup,
    placeMsPerEvent: {
      known: Math.max(ungrouped.known, grouped.known),
      newValue: Math.max(ungrouped.newValue, grouped.newValue),
      repeatValue: Math.max(ungrouped.repeatValue, grouped.repeatValue),
      newGroup: groups.newGroup,
      overflow: groups.overflow,
    },
    maxGroupCombinations: groups.maxGroupCombinations,
  };
}
