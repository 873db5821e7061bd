import { describe, expect, it } from "vitest";
import {
  counterUnits,
  DEFAULT_METER,
  dimensionsOfGroupKey,
  EMPTY_METER_STATE,
  eventMeterState,
  groupKeyOf,
  isPlainMeter,
  type Meter,
  type MeterState,
  mergeMeterStates,
  meterQuantity,
  propertiesProblem,
  readEvent,
  resolveMeter,
} from "./meter.ts";

const meter = (overrides: Partial<Meter>): Meter => ({ ...DEFAULT_METER, ...overrides });
const WINDOW = { start: "2026-11-01T00:00:00.000Z", end: "2026-12-01T00:00:00.000Z" };

describe("meters: definitions", () => {
  it("completes a meter with defaults and refuses one it cannot read", () => {
    expect(resolveMeter({ aggregation: "COUNT" })).toEqual({
      ok: true,
      meter: { aggregation: "COUNT", property: null, filters: {}, groupBy: [] },
    });
    for (const [input, message] of [
      [{ aggregation: "MAX" }, "meter.property is required for MAX"],
      [{ aggregation: "UNIQUE_COUNT" }, "meter.property is required for UNIQUE_COUNT"],
      [{ aggregation: "COUNT", property: "x" }, "not used by COUNT"],
      [{ aggregation: "SUM", groupBy: ["a", "b", "c", "d"] }, "at most 3"],
      [{ aggregation: "SUM", groupBy: ["a", "a"] }, "twice"],
      [{ aggregation: "SUM", groupBy: ["Bad"] }, "must match"],
      [{ aggregation: "SUM", filters: { region: [] } }, "1 to 100 values"],
      [{ aggregation: "SUM", groupBy: ["__proto__"] }, "reserved"],
    ] as const) {
      const resolved = resolveMeter(input as Parameters<typeof resolveMeter>[0]);
      expect(resolved.ok).toBe(false);
      if (!resolved.ok) expect(resolved.message).toContain(message);
    }
  });

  it("knows the plain meter (SUM of amount, no filters, no groups)", () => {
    expect(isPlainMeter(null)).toBe(true);
    expect(isPlainMeter(DEFAULT_METER)).toBe(true);
    expect(isPlainMeter(meter({ property: "tokens" }))).toBe(false);
    expect(isPlainMeter(meter({ groupBy: ["model"] }))).toBe(false);
  });
});

describe("meters: event properties", () => {
  it("accepts up to 20 keys of [a-z0-9_]{1,64} with short strings or finite numbers", () => {
    expect(propertiesProblem(undefined)).toBeUndefined();
    expect(propertiesProblem({ model: "large", tokens: 12.5 })).toBeUndefined();
    expect(propertiesProblem([])).toMatchObject({ key: null });
    expect(propertiesProblem({ "Bad-Key": 1 })).toMatchObject({ key: "Bad-Key" });
    expect(propertiesProblem({ a: "x".repeat(257) })).toMatchObject({ key: "a" });
    expect(propertiesProblem({ a: Number.POSITIVE_INFINITY })).toMatchObject({ key: "a" });
    expect(propertiesProblem({ a: true })).toMatchObject({ key: "a" });
    expect(propertiesProblem(JSON.parse('{"__proto__": 1}'))).toMatchObject({ key: "__proto__" });
    const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, i]));
    expect(propertiesProblem(many)?.message).toContain("at most 20");
  });
});

describe("meters: reading an event", () => {
  it("filters, groups and reads the aggregated value", () => {
    const tokens = meter({
      property: "tokens",
      filters: { region: ["eu", 1] },
      groupBy: ["model", "direction"],
    });
    expect(readEvent(tokens, { amount: 1, properties: { region: "us", tokens: 5 } })).toEqual({
      counts: false,
      reason: "FILTERED",
    });
    const read = readEvent(tokens, {
      amount: 1,
      properties: { region: "1", model: "large", tokens: 5 },
    });
    expect(read).toMatchObject({
      counts: true,
      value: 5,
      dimensions: { model: "large", direction: null },
    });
    if (read.counts) expect(dimensionsOfGroupKey(read.groupKey)).toEqual(read.dimensions);
  });

  it("reports a missing or non-numeric property, never an inherited one", () => {
    const peak = meter({ aggregation: "MAX", property: "constructor" });
    expect(readEvent(peak, { amount: 1, properties: {} })).toMatchObject({
      counts: false,
      reason: "PROPERTY_MISSING",
    });
    expect(
      readEvent(meter({ aggregation: "MAX", property: "gpus" }), {
        amount: 1,
        properties: { gpus: "many" },
      }),
    ).toMatchObject({ counts: false, reason: "PROPERTY_NOT_NUMERIC" });
    expect(
      readEvent(meter({ aggregation: "MAX", property: "gpus" }), {
        amount: 1,
        properties: { gpus: "8" },
      }),
    ).toMatchObject({ counts: true, value: 8 });
  });

  it("keys a group by its values whatever the order of its properties", () => {
    expect(groupKeyOf({ b: 1, a: "x" })).toBe(groupKeyOf({ a: "x", b: 1 }));
    expect(groupKeyOf({})).toBe("");
  });

  it("gives the counter whole growing units only", () => {
    const units = (m: Meter, value: number) =>
      counterUnits(m, 3, readEvent(m, { amount: 3, properties: { v: value } }));
    expect(units(DEFAULT_METER, 0)).toBe(3);
    expect(units(meter({ aggregation: "COUNT" }), 7)).toBe(1);
    expect(units(meter({ property: "v" }), 7)).toBe(7);
    expect(units(meter({ property: "v" }), 2.5)).toBe(0);
    expect(units(meter({ aggregation: "UNIQUE_COUNT", property: "v" }), 7)).toBe(1);
    expect(units(meter({ aggregation: "MAX", property: "v" }), 7)).toBe(0);
  });
});

describe("meters: states and quantities", () => {
  const state = (value: number, at: string, id: string): MeterState =>
    eventMeterState(value, at, id, WINDOW, false);

  it("merges in any order to the same state", () => {
    const events = [
      state(3, "2026-11-02T00:00:00.000Z", "a"),
      state(8, "2026-11-05T00:00:00.000Z", "b"),
      state(5, "2026-11-03T00:00:00.000Z", "c"),
    ];
    const forward = events.reduce(mergeMeterStates, EMPTY_METER_STATE);
    const backward = [...events].reverse().reduce(mergeMeterStates, EMPTY_METER_STATE);
    expect(forward).toEqual(backward);
    expect(meterQuantity("MAX", forward, WINDOW)).toBe(8);
    expect(meterQuantity("MIN", forward, WINDOW)).toBe(3);
    expect(meterQuantity("AVG", forward, WINDOW)).toBeCloseTo(16 / 3, 12);
    expect(meterQuantity("LATEST", forward, WINDOW)).toBe(8);
    expect(meterQuantity("COUNT", forward, WINDOW)).toBe(3);
  });

  it("breaks a LATEST tie by the later id (the later received)", () => {
    const at = "2026-11-02T00:00:00.000Z";
    const merged = mergeMeterStates(state(1, at, "b"), state(2, at, "a"));
    expect(meterQuantity("LATEST", merged, WINDOW)).toBe(1);
  });

  it("WEIGHTED_SUM integrates the level: held for half the window bills half, the carried level in full", () => {
    const half = eventMeterState(100, "2026-11-16T00:00:00.000Z", "a", WINDOW, false);
    expect(meterQuantity("WEIGHTED_SUM", half, WINDOW)).toBeCloseTo(50, 9);
    expect(meterQuantity("WEIGHTED_SUM", EMPTY_METER_STATE, WINDOW, 100)).toBe(100);
    const lastMs = eventMeterState(100, "2026-11-30T23:59:59.999Z", "b", WINDOW, false);
    expect(meterQuantity("WEIGHTED_SUM", lastMs, WINDOW)).toBeCloseTo(100 / (30 * 86_400_000), 15);
  });
});
