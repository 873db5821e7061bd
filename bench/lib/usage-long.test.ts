import { describe, expect, it } from "vitest";
import type { ExternalBaseline } from "./external-baseline.ts";
import type { BurstResult } from "./usage-load.ts";
import {
  type FillMark,
  fillPlan,
  judgeLongRun,
  type LongRun,
  longModeReport,
  segmentEnds,
  segmentRates,
} from "./usage-long.ts";

describe("fillPlan", () => {
  it("cuts 3,000,000 into segments of 500,000 after a warm burst at 250,000", () => {
    const plan = fillPlan(3_000_000);
    expect(plan).toEqual({ warmStored: 250_000, segmentSize: 500_000 });
    expect(segmentEnds(plan.warmStored, 3_000_000, plan.segmentSize)).toEqual([
      500_000, 1_000_000, 1_500_000, 2_000_000, 2_500_000, 3_000_000,
    ]);
  });

  it("takes the largest size that still gives four segments", () => {
    expect(fillPlan(2_000_000).segmentSize).toBe(500_000);
    expect(fillPlan(1_500_000).segmentSize).toBe(250_000);
    expect(fillPlan(1_000_000).segmentSize).toBe(100_000);
    expect(fillPlan(600_000)).toEqual({ warmStored: 250_000, segmentSize: 100_000 });
  });

  it("moves the warm point to half of a small N", () => {
    expect(fillPlan(300_000)).toEqual({ warmStored: 150_000, segmentSize: 25_000 });
    expect(fillPlan(50_000).warmStored).toBe(20_000);
    expect(fillPlan(5_000).warmStored).toBe(10_000);
  });
});

describe("segmentEnds", () => {
  it("starts at the count the warm burst left and ends at N", () => {
    expect(segmentEnds(312_000, 3_000_000, 500_000)).toEqual([
      500_000, 1_000_000, 1_500_000, 2_000_000, 2_500_000, 3_000_000,
    ]);
    expect(segmentEnds(250_000, 600_000, 100_000)).toEqual([300_000, 400_000, 500_000, 600_000]);
  });

  it("joins a first segment shorter than a quarter of a segment to the next", () => {
    expect(segmentEnds(390_000, 3_000_000, 500_000)).toEqual([
      1_000_000, 1_500_000, 2_000_000, 2_500_000, 3_000_000,
    ]);
    expect(segmentEnds(480_000, 700_000, 100_000)).toEqual([600_000, 700_000]);
  });

  it("keeps a last segment shorter than the others and has none when N is reached", () => {
    expect(segmentEnds(250_000, 620_000, 100_000)).toEqual([
      300_000, 400_000, 500_000, 600_000, 620_000,
    ]);
    expect(segmentEnds(3_000_000, 3_000_000, 500_000)).toEqual([]);
    expect(segmentEnds(3_100_000, 3_000_000, 500_000)).toEqual([]);
  });
});

describe("segmentRates", () => {
  it("divides the events between two marks by the seconds between them", () => {
    const marks: FillMark[] = [
      { end: 312_000, stored: 312_000, at: 1_000 },
      { end: 500_000, stored: 500_400, at: 31_400 },
      { end: 1_000_000, stored: 1_000_000, at: 131_320 },
    ];
    const [first, second] = segmentRates(marks);
    expect(first).toMatchObject({ from: 312_000, to: 500_000, events: 188_400 });
    expect(first!.seconds).toBeCloseTo(30.4);
    expect(first!.eventsPerSecond).toBeCloseTo(6_197.37, 2);
    expect(second).toMatchObject({ from: 500_000, to: 1_000_000, events: 499_600 });
    expect(second!.eventsPerSecond).toBeCloseTo(5_000);
    expect(segmentRates(marks.slice(0, 1))).toEqual([]);
    expect(segmentRates([])).toEqual([]);
  });
});

describe("judgeLongRun", () => {
  it("judges the burst after N against the warm burst in raw events/s", () => {
    const met = judgeLongRun({ warmBurst: 6_000, afterStored: 5_400, segments: [6_000] });
    expect(met.afterStoredRatio).toBeCloseTo(0.9);
    expect(met.afterStored).toEqual({ label: ">= 0.9×", met: true });
    const table = judgeLongRun({ warmBurst: 6_177, afterStored: 3_645, segments: [6_200] });
    expect(table.afterStoredRatio).toBeCloseTo(0.59, 2);
    expect(table.afterStored.met).toBe(false);
  });

  it("judges each segment against the first and names the lowest", () => {
    const segments = [6_200, 5_306, 5_305, 5_183, 4_344, 4_640];
    const judgment = judgeLongRun({ warmBurst: 6_177, afterStored: 6_000, segments });
    expect(judgment.segmentRatios[0]).toBe(1);
    expect(judgment.segmentRatios[4]).toBeCloseTo(0.7, 2);
    expect(judgment.lowest).toBe(4);
    expect(judgment.segments.met).toBe(false);
    const steady = judgeLongRun({ warmBurst: 1, afterStored: 1, segments: [6_000, 5_100, 5_900] });
    expect(steady.segments).toEqual({ label: "each >= 0.85× the first", met: true });
    expect(steady.lowest).toBe(1);
  });

  it("fails the segments when there are none or a rate is not a number", () => {
    expect(judgeLongRun({ warmBurst: 1, afterStored: 1, segments: [] }).segments.met).toBe(false);
    const broken = judgeLongRun({ warmBurst: 1, afterStored: 1, segments: [6_000, Number.NaN] });
    expect(broken.segments.met).toBe(false);
    expect(broken.lowest).toBe(1);
    expect(judgeLongRun({ warmBurst: 0, afterStored: 1, segments: [1] }).afterStored.met).toBe(
      true,
    );
    expect(
      judgeLongRun({ warmBurst: 1, afterStored: Number.NaN, segments: [1] }).afterStored.met,
    ).toBe(false);
  });
});

function burst(eventsPerSecond: number, seconds = 10): BurstResult {
  return {
    latencies: [1000],
    failures: 0,
    ingestSeconds: seconds,
    accepted: Math.round(eventsPerSecond * seconds),
    eventsPerSecond,
    batchRps: eventsPerSecond / 1000,
    exact: true,
    drainSeconds: 1,
    pipelineRate: eventsPerSecond,
  };
}

const baseline = (rps: number): ExternalBaseline => ({
  rps,
  p50: 1,
  p99: 4,
  seconds: 10,
  connections: 20,
});

describe("longModeReport", () => {
  const run: LongRun = {
    plan: { warmStored: 250_000, segmentSize: 500_000 },
    warm: { stored: 250_000, burst: burst(6_177) },
    segments: segmentRates([
      { end: 311_770, stored: 311_770, at: 0 },
      { end: 500_000, stored: 500_000, at: 30_360 },
      { end: 1_000_000, stored: 1_000_000, at: 124_593 },
    ]),
    baselineAgain: baseline(9_000),
    afterStored: { stored: 1_000_000, burst: burst(3_645) },
    storedAfter: 1_036_450,
    exact: true,
  };
  const report = longModeReport({
    run,
    first: { stored: 4_000, burst: burst(7_015) },
    firstName: "first 10-s burst, fresh stack",
    burstSeconds: 10,
    target: 1_000_000,
    baselineStart: baseline(10_000),
  });

  it("prints every point in raw events/s with its ratio and the external baseline beside them", () => {
    expect(report.text).toContain("first 10-s burst, fresh stack");
    expect(report.text).toMatch(
      /10-s burst after 250,000 stored\s+250,000 -> 311,770\s+10\.0\s+6,177/,
    );
    expect(report.text).toMatch(
      /fill 311,770 -> 500,000\s+311,770 -> 500,000\s+30\.4\s+6,200\s+\(the reference of the segments\)/,
    );
    expect(report.text).toMatch(
      /fill 500,000 -> 1,000,000 .* 5,306\s+0\.86× the first segment\s+>= 0\.85×\s+met/,
    );
    expect(report.text).toMatch(
      /10-s burst after 1,000,000 stored .* 3,645\s+0\.59× the warm burst\s+>= 0\.9×\s+NOT met/,
    );
    expect(report.text).toContain("10,000 req/s (p50 1 ms, p99 4 ms) at the start");
    expect(report.text).toContain("9,000 req/s (p50 1 ms, p99 4 ms) before the last burst = 0.90×");
  });

  it("judges in raw events/s: the drift of the baseline changes no verdict", () => {
    expect(report.criteria.map(([name, ok]) => [name, ok])).toEqual([
      ["burst after 1,000,000 stored >= 0.9x the burst after 250,000 stored (raw events/s)", false],
      ["fill segments of 500,000 each >= 0.85x the first (raw events/s)", true],
    ]);
    expect(report.criteria[0]![2]).toContain("3,645 events/s after 1,000,000 stored = 0.59×");
  });

  it("gives the doc one row per point between the two baseline rows", () => {
    expect(report.rows.map((row) => row.benchmark)).toEqual([
      expect.stringContaining("external baseline at the start"),
      "first 10-s burst, fresh stack",
      "10-s burst after 250,000 stored",
      "fill 311,770 -> 500,000",
      "fill 500,000 -> 1,000,000",
      "10-s burst after 1,000,000 stored",
      "external baseline again, before the last burst",
    ]);
    const after = report.rows[5]!;
    expect(after.ratio).toBe("0.59×");
    expect(after.target).toEqual({ label: ">= 0.9×", met: false });
    expect(report.rows[6]!.ratio).toBe("0.90×");
  });
});
