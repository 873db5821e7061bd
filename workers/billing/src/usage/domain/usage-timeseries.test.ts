import { describe, expect, it } from "vitest";
import { foldHours, timeseriesRange } from "./usage-timeseries.ts";

describe("usage timeseries buckets", () => {
  it("widens a range to whole buckets", () => {
    const range = timeseriesRange(
      new Date("2026-11-01T10:20:00Z"),
      new Date("2026-11-01T12:00:01Z"),
      "hour",
    );
    expect(range).toEqual({
      ok: true,
      from: new Date("2026-11-01T10:00:00Z"),
      to: new Date("2026-11-01T13:00:00Z"),
      buckets: 3,
    });
    expect(
      timeseriesRange(new Date("2026-11-01T10:20:00Z"), new Date("2026-11-03T00:00:00Z"), "day"),
    ).toMatchObject({ ok: true, buckets: 2, to: new Date("2026-11-03T00:00:00Z") });
  });

  it("refuses an empty, reversed or too long range", () => {
    const at = new Date("2026-11-01T00:00:00Z");
    expect(timeseriesRange(at, at, "hour")).toEqual({
      ok: false,
      message: "to must be after from",
    });
    expect(timeseriesRange(at, new Date("2026-12-15T00:00:00Z"), "hour")).toMatchObject({
      ok: false,
      message: expect.stringContaining("at most 744"),
    });
  });

  it("adds each day's hours and fills empty buckets with zero", () => {
    const range = { from: new Date("2026-11-01T00:00:00Z"), to: new Date("2026-11-04T00:00:00Z") };
    const buckets = foldHours(range, "day", [
      { hourStart: "2026-11-01T00:00:00.000Z", amount: 2 },
      { hourStart: "2026-11-01T23:00:00.000Z", amount: 3 },
      { hourStart: "2026-11-03T05:00:00.000Z", amount: 7 },
    ]);
    expect(buckets).toEqual([
      { start: "2026-11-01T00:00:00.000Z", end: "2026-11-02T00:00:00.000Z", value: 5 },
      { start: "2026-11-02T00:00:00.000Z", end: "2026-11-03T00:00:00.000Z", value: 0 },
      { start: "2026-11-03T00:00:00.000Z", end: "2026-11-04T00:00:00.000Z", value: 7 },
    ]);
  });
});
