import { describe, expect, it } from "vitest";
import { barChart, niceCeiling } from "./chart.ts";

describe("usage chart", () => {
  it("rounds the axis up to 1, 2 or 5 times a power of ten", () => {
    expect([0, 1, 3, 10, 11, 42, 120, 999].map(niceCeiling)).toEqual([
      1, 1, 5, 10, 20, 50, 200, 1000,
    ]);
  });

  it("draws one bar per bucket, with its value as a tooltip and the total for screen readers", async () => {
    const svg = String(
      await barChart(
        "api_calls",
        [
          { start: "2026-11-25T10:00:00.000Z", end: "2026-11-25T11:00:00.000Z", value: 3 },
          { start: "2026-11-25T11:00:00.000Z", end: "2026-11-25T12:00:00.000Z", value: 0 },
          { start: "2026-11-25T12:00:00.000Z", end: "2026-11-25T13:00:00.000Z", value: 1200 },
        ],
        "hour",
      ),
    );
    expect(svg.match(/<rect class="bar"/g)).toHaveLength(3);
    expect(svg).toContain('data-total="1203"');
    expect(svg).toContain("<title>11-25 12h: 1,200</title>");
    expect(svg).toContain(
      'aria-label="api_calls: 1,203 units in 3 hour buckets, at most 1,200 in one."',
    );
    expect(svg).not.toContain("<script");
  });
});
