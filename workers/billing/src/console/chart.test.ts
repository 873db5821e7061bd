import { describe, expect, it } from "vitest";
import { barChart, chartRange, lineChart, MAX_CHART_SERIES, timeLabel, yTicks } from "./chart.ts";

function hourly(from: string, values: number[]) {
  const start = Date.parse(from);
  return values.map((value, index) => ({
    start: new Date(start + index * 3_600_000).toISOString(),
    end: new Date(start + (index + 1) * 3_600_000).toISOString(),
    value,
  }));
}

describe("usage chart", () => {
  it("puts three or four round y ticks from 0 to at least the largest value", () => {
    expect(yTicks(0)).toEqual([0, 1, 2]);
    expect(yTicks(1)).toEqual([0, 1, 2]);
    expect(yTicks(3)).toEqual([0, 1, 2, 3]);
    expect(yTicks(7383)).toEqual([0, 2000, 4000, 6000, 8000]);
    expect(yTicks(1200)).toEqual([0, 500, 1000, 1500]);
    expect(yTicks(42)).toEqual([0, 20, 40, 60]);
    for (const max of [5, 17, 99, 101, 2499, 123_456]) {
      const ticks = yTicks(max);
      expect(ticks.length).toBeGreaterThanOrEqual(3);
      expect(ticks.length).toBeLessThanOrEqual(5);
      expect(ticks[ticks.length - 1]).toBeGreaterThanOrEqual(max);
      expect(String(ticks[1])).toMatch(/^[125]0*$/);
    }
  });

  it("labels time only on natural UTC boundaries", () => {
    expect(timeLabel("2026-11-25T06:00:00.000Z", "hour", 24)).toEqual({
      text: "06:00",
      major: true,
    });
    expect(timeLabel("2026-11-25T09:00:00.000Z", "hour", 24)).toEqual({
      text: "09:00",
      major: false,
    });
    expect(timeLabel("2026-11-25T10:00:00.000Z", "hour", 24)).toBeNull();
    // Seven days of hours: midnight only.
    expect(timeLabel("2026-11-25T00:00:00.000Z", "hour", 168)?.text).toBe("11-25");
    expect(timeLabel("2026-11-25T12:00:00.000Z", "hour", 168)).toBeNull();
    // Thirty days: every fifth day since the epoch.
    const labelled = Array.from({ length: 30 }, (_, day) =>
      new Date(Date.UTC(2026, 10, 1 + day)).toISOString(),
    ).filter((iso) => timeLabel(iso, "day", 30));
    expect(labelled).toHaveLength(6);
  });

  it("charts whole buckets ending with the one that holds now", () => {
    const range = chartRange(new Date("2026-11-25T14:20:00Z"), 24, "hour");
    expect(range.to.toISOString()).toBe("2026-11-25T15:00:00.000Z");
    expect(range.from.toISOString()).toBe("2026-11-24T15:00:00.000Z");
    const days = chartRange(new Date("2026-11-25T14:20:00Z"), 24 * 30, "day");
    expect(days.to.toISOString()).toBe("2026-11-26T00:00:00.000Z");
  });

  it("draws one bar per bucket with its value in a title, grid lines and the total for screen readers", async () => {
    const svg = String(
      await barChart("api_calls", hourly("2026-11-25T10:00:00Z", [3, 0, 1200]), "hour"),
    );
    expect(svg.match(/<rect class="bar"/g)).toHaveLength(3);
    expect(svg).toContain('data-total="1203"');
    expect(svg).toContain("<title>2026-11-25 12:00 UTC: 1,200 units</title>");
    expect(svg.match(/<line class="grid"/g)).toHaveLength(4);
    expect(svg).toContain(">1.5K</text>");
    expect(svg).toContain(
      'aria-label="api_calls: 1,203 units in 3 hour buckets, at most 1,200 in one."',
    );
    expect(svg).toContain('data-start="2026-11-25T12:00:00.000Z">12:00</text>');
    expect(svg).not.toContain("<script");
  });

  it("draws several series as lines told apart by colour and dash, with a legend and a summary naming each", async () => {
    const series = Array.from({ length: MAX_CHART_SERIES + 2 }, (_, index) => ({
      label: `model-${index}`,
      buckets: hourly("2026-11-25T10:00:00Z", [index, 2 * index, 0]),
    }));
    const svg = String(await lineChart("tokens by model", series, "hour"));
    const lines = [...svg.matchAll(/<polyline class="line"[^>]*>/g)].map(([tag]) => ({
      colour: /stroke="([^"]+)"/.exec(tag)?.[1],
      dash: /stroke-dasharray="([^"]+)"/.exec(tag)?.[1] ?? "",
    }));
    expect(lines).toHaveLength(MAX_CHART_SERIES);
    expect(new Set(lines.map((line) => line.colour)).size).toBe(MAX_CHART_SERIES);
    expect(new Set(lines.map((line) => line.dash)).size).toBe(MAX_CHART_SERIES);
    expect(svg.match(/<li>/g)).toHaveLength(MAX_CHART_SERIES);
    expect(svg).toContain('</svg> model-2 <span class="hint">total 6</span>');
    expect(svg).toContain(
      'aria-label="tokens by model: 8 lines in 3 hour buckets, total of each: model-0 0; model-1 3;',
    );
    expect(svg.match(/<line class="grid"/g)).toHaveLength(4);
    expect(svg).toContain('data-start="2026-11-25T12:00:00.000Z">12:00</text>');
    const peak = String(await lineChart("gpus by zone", series.slice(0, 2), "hour", "peak"));
    expect(peak).toContain('</svg> model-1 <span class="hint">peak 2</span>');
    expect(peak).not.toContain("<script");
  });
});
