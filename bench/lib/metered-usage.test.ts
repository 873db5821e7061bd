import { describe, expect, it } from "vitest";
import {
  addGroupTokens,
  groupKey,
  groupMismatches,
  METER_DIRECTIONS,
  METER_MODELS,
  type MeteredComparison,
  meteredProperties,
  meteredSummary,
  overallRate,
  pairedOrder,
} from "./metered-usage.ts";
import type { BurstResult, UsageEvent } from "./usage-load.ts";

const event = (properties: Record<string, string | number>): UsageEvent => ({
  eventId: crypto.randomUUID(),
  feature: "tokens",
  amount: 1,
  timestamp: "2026-01-01T00:00:00.000Z",
  properties,
});

const burst = (accepted: number, ingestSeconds: number, drainSeconds = 0): BurstResult => ({
  latencies: [100, 200],
  failures: 0,
  ingestSeconds,
  accepted,
  eventsPerSecond: accepted / ingestSeconds,
  batchRps: 1,
  exact: true,
  drainSeconds,
  pipelineRate: accepted / (ingestSeconds + drainSeconds),
});

describe("meteredProperties", () => {
  it("gives three properties, every model and direction within eight events, whole tokens from 1 to 997", () => {
    const first = Array.from({ length: 8 }, (_, index) => meteredProperties(index));
    expect(new Set(first.map((properties) => groupKey(properties))).size).toBe(
      METER_MODELS.length * METER_DIRECTIONS.length,
    );
    for (let index = 0; index < 2000; index++) {
      const properties = meteredProperties(index);
      expect(Object.keys(properties).sort()).toEqual(["direction", "model", "tokens"]);
      expect(Number.isInteger(properties.tokens)).toBe(true);
      expect(properties.tokens).toBeGreaterThanOrEqual(1);
      expect(properties.tokens).toBeLessThanOrEqual(997);
    }
  });
});

describe("group totals", () => {
  it("adds each event's tokens to its model and direction", () => {
    const totals = new Map<string, number>();
    addGroupTokens(totals, [
      event({ model: "small", direction: "input", tokens: 5 }),
      event({ model: "small", direction: "input", tokens: 7 }),
      event({ model: "large", direction: "output", tokens: 3 }),
    ]);
    expect(Object.fromEntries(totals)).toEqual({ "small/input": 12, "large/output": 3 });
  });

  it("finds no mismatch when the rows (over several windows) add up to the totals", () => {
    const expected = new Map([
      ["small/input", 12],
      ["large/output", 3],
    ]);
    expect(
      groupMismatches(expected, [
        { dimensions: { model: "small", direction: "input" }, amount: 10 },
        { dimensions: { model: "small", direction: "input" }, amount: 2 },
        { dimensions: { model: "large", direction: "output" }, amount: 3 },
      ]),
    ).toEqual([]);
  });

  it("names a group counted short, a group missing and a group not sent", () => {
    const expected = new Map([
      ["small/input", 12],
      ["large/output", 3],
    ]);
    expect(
      groupMismatches(expected, [
        { dimensions: { model: "small", direction: "input" }, amount: 11 },
        { dimensions: {}, amount: 4 },
      ]),
    ).toEqual(["/: 4 of 0", "large/output: 0 of 3", "small/input: 11 of 12"]);
  });
});

describe("pairedOrder", () => {
  it("alternates the pairs' order so both scenarios sit at the same mean position", () => {
    expect(pairedOrder(0)).toEqual([]);
    expect(pairedOrder(1)).toEqual(["plain", "metered"]);
    const order = pairedOrder(2);
    expect(order).toEqual(["plain", "metered", "metered", "plain"]);
    const mean = (scenario: string) =>
      order.reduce((sum, name, index) => sum + (name === scenario ? index : 0), 0) / 2;
    expect(mean("plain")).toBe(mean("metered"));
  });
});

describe("overallRate", () => {
  it("divides all events by all time, ingestion alone or with the drains", () => {
    const results = [burst(10_000, 10, 1), burst(5_000, 5, 4)];
    expect(overallRate(results, "ingestion")).toBe(1000);
    expect(overallRate(results, "pipeline")).toBe(750);
    expect(overallRate([], "ingestion")).toBeNaN();
  });
});

describe("meteredSummary", () => {
  const comparison = (overrides: Partial<MeteredComparison> = {}): MeteredComparison => ({
    plain: [burst(10_000, 10, 1), burst(10_000, 10, 1)],
    metered: [burst(9_600, 10, 1), burst(9_000, 10, 1)],
    pairRatios: [0.96, 0.9],
    pipelinePairRatios: [0.96, 0.9],
    groupProblems: [],
    counterProblems: [],
    ...overrides,
  });
  const load = { clients: 4, batch: 1000, seconds: 10 };

  it("reports the median of the pairs' ratios against the plain load with the 0.9x target", () => {
    const summary = meteredSummary(comparison(), load);
    expect(summary.exact).toBe(true);
    const [ingestion, aggregation, totals] = summary.rows;
    expect(ingestion?.ratio).toBe("0.93×");
    expect(ingestion?.target).toEqual({ label: ">= 0.9×", met: true });
    expect(aggregation?.ratio).toBe("0.93×");
    expect(totals?.target).toEqual({ label: "exact", met: true });
    expect(summary.text).toContain("930 events/s accepted");
    expect(summary.text).toContain(
      "vs 1,000 plain; median of the pairs 0.93 x (target >= 0.9×: met)",
    );
  });

  it("is not exact when a group or the counter differs, and names the difference", () => {
    const summary = meteredSummary(
      comparison({ counterProblems: ["tenant 1: used 5 of 6 tokens"] }),
      load,
    );
    expect(summary.exact).toBe(false);
    expect(summary.rows[2]?.target?.met).toBe(false);
    expect(summary.text).toContain("tenant 1: used 5 of 6 tokens");
  });

  it("misses the target below 0.9x", () => {
    const summary = meteredSummary(
      comparison({
        metered: [burst(8_000, 10, 1), burst(8_000, 10, 1)],
        pairRatios: [0.8, 0.8],
        pipelinePairRatios: [0.8, 0.8],
      }),
      load,
    );
    expect(summary.rows[0]?.target?.met).toBe(false);
  });
});
