import { eventMeterState, type Meter, mergeMeterStates } from "@edge-platform/shared/billing/meter";
import { describe, expect, it } from "vitest";
import {
  combinationOf,
  LATEST_SEPARATOR,
  meterBuckets,
  parseGroupBy,
  stateOfSummary,
} from "./meter-buckets.ts";
import { timeseriesRange } from "./usage-timeseries.ts";

const meter: Meter = {
  aggregation: "SUM",
  property: "tokens",
  filters: {},
  groupBy: ["model", "direction"],
};

const state = (value: number, at: string, id = at) =>
  eventMeterState(value, at, id, { start: at, end: null }, false);

function range(from: string, to: string, granularity: "hour" | "day" = "hour") {
  const found = timeseriesRange(new Date(from), new Date(to), granularity);
  if (!found.ok) throw new Error(found.message);
  return found;
}

describe("groupBy of usage reads", () => {
  it("takes the meter's properties, in the order asked", () => {
    expect(parseGroupBy("direction, model", "llm", meter)).toEqual({
      ok: true,
      groupBy: ["direction", "model"],
    });
  });

  it.each([
    ["", "groupBy must name 1 to 3 properties separated by commas"],
    ["model,", "groupBy must name 1 to 3 properties separated by commas"],
    ["a,b,c,d", "groupBy must name 1 to 3 properties separated by commas"],
    ["model,model", 'groupBy lists "model" twice'],
    [
      "region",
      'groupBy: "region" is not a property feature "llm" is split by (its meter groups by: model, direction)',
    ],
  ])("refuses %j", (raw, message) => {
    expect(parseGroupBy(raw, "llm", meter)).toEqual({ ok: false, message });
  });

  it("refuses any property of a feature whose meter has no groupBy", () => {
    expect(parseGroupBy("model", "api_calls", null)).toEqual({
      ok: false,
      message:
        'groupBy: "model" is not a property feature "api_calls" is split by (its meter has no groupBy)',
    });
  });

  it("names a combination by its values whatever their order; the overflow group apart", () => {
    const a = combinationOf(["model", "direction"], false, ["large", "input"]);
    const b = combinationOf(["direction", "model"], false, ["input", "large"]);
    expect(a.key).toBe(b.key);
    expect(a.dimensions).toEqual({ model: "large", direction: "input" });
    expect(combinationOf(["model"], false, [])).toMatchObject({ dimensions: { model: null } });
    expect(combinationOf(["model"], true, ["large"])).toEqual({
      key: "*",
      dimensions: {},
      overflow: true,
    });
  });

  it("reads a merged summary's packed latest value exactly", () => {
    const columns = {
      events: 2,
      value_sum: 3,
      value_min: 1,
      value_max: 2,
      weighted_ms: 0,
      distinct_values: 0,
      latest: ["2026-11-01T10:00:00.000Z", "id-2", "0.30000000000000004"].join(LATEST_SEPARATOR),
    };
    expect(stateOfSummary(columns)).toMatchObject({
      latestAt: "2026-11-01T10:00:00.000Z",
      latestId: "id-2",
      latestValue: 0.1 + 0.2,
    });
    expect(stateOfSummary({ ...columns, latest: null })).toMatchObject({
      latestAt: null,
      latestValue: null,
    });
  });
});

describe("meter buckets", () => {
  const large = combinationOf(["model"], false, ["large"]);
  const small = combinationOf(["model"], false, ["small"]);
  const hours = [
    {
      hourStart: "2026-11-01T10:00:00.000Z",
      combination: large,
      state: state(5, "2026-11-01T10:10:00.000Z"),
    },
    {
      hourStart: "2026-11-01T10:00:00.000Z",
      combination: small,
      state: state(2, "2026-11-01T10:20:00.000Z"),
    },
    {
      hourStart: "2026-11-01T12:00:00.000Z",
      combination: large,
      state: mergeMeterStates(
        state(1, "2026-11-01T12:00:00.000Z"),
        state(7, "2026-11-01T12:30:00.000Z"),
      ),
    },
  ];
  const hourly = range("2026-11-01T10:00:00Z", "2026-11-01T13:00:00Z");

  it("answers each aggregation of the bucket's events, in total and per combination, zero-filled", () => {
    const values = (aggregation: Meter["aggregation"]) => {
      const { data, series } = meterBuckets(hourly, aggregation, hours, []);
      return [data, ...series.map((s) => s.data)].map((buckets) => buckets.map((b) => b.value));
    };
    expect(values("SUM")).toEqual([
      [7, 0, 8],
      [5, 0, 8],
      [2, 0, 0],
    ]);
    expect(values("COUNT")).toEqual([
      [2, 0, 2],
      [1, 0, 2],
      [1, 0, 0],
    ]);
    expect(values("MAX")[0]).toEqual([5, 0, 7]);
    expect(values("MIN")[0]).toEqual([2, 0, 1]);
    expect(values("AVG")[0]).toEqual([3.5, 0, 4]);
    expect(values("LATEST")[0]).toEqual([2, 0, 7]);
  });

  it("answers WEIGHTED_SUM as the level at each bucket's end, from the level before the range", () => {
    const { data, series } = meterBuckets(hourly, "WEIGHTED_SUM", hours, [
      { combination: large, level: 100 },
    ]);
    expect(data.map((b) => b.value)).toEqual([107, 107, 115]);
    expect(series.map((s) => s.data.map((b) => b.value))).toEqual([
      [105, 105, 113],
      [2, 2, 2],
    ]);
  });

  it("merges hours into UTC days with the same boundaries as the plain series", () => {
    const days = range("2026-11-01T00:00:00Z", "2026-11-03T00:00:00Z", "day");
    const { data } = meterBuckets(days, "MAX", hours, []);
    expect(data).toEqual([
      { start: "2026-11-01T00:00:00.000Z", end: "2026-11-02T00:00:00.000Z", value: 7 },
      { start: "2026-11-02T00:00:00.000Z", end: "2026-11-03T00:00:00.000Z", value: 0 },
    ]);
  });
});
