import { describe, expect, it } from "vitest";
import { computeHourlyAqiSeries, type HourlyConcentrations, subIndex } from "./aqi-calculator.ts";
import {
  aqiAtLatestReading,
  encodeHistoryColumns,
  HISTORY_COLUMNS,
  recentHoursIssues,
  windowArithmetic,
} from "./history.ts";
import type { RecentHour } from "./recent-hours.ts";

/** Readings hours_before from..to, each from `values(hoursBefore)`. */
function readings(
  from: number,
  to: number,
  values: (hoursBefore: number) => Partial<Record<"pm25" | "pm10" | "no2" | "co" | "o3", number>>,
): RecentHour[] {
  const out: RecentHour[] = [];
  for (let hoursBefore = from; hoursBefore <= to; hoursBefore += 1) {
    out.push({ hours_before: hoursBefore, ...values(hoursBefore) });
  }
  return out;
}

const column = (columns: number[], name: string): number =>
  columns[(HISTORY_COLUMNS as readonly string[]).indexOf(name)]!;

describe("the AQI at the newest reading", () => {
  it("is the calculator's hourly AQI of the same hours, windows ending at the newest reading", () => {
    // A varying series; the calculator's own series over the same hours must agree at the newest hour.
    const series = readings(3, 40, (k) => ({
      pm25: 80 + 40 * Math.sin(k / 3),
      pm10: 150 + k,
      no2: 30 + (k % 7),
      co: 1 + (k % 5) / 4,
    }));
    const latest = aqiAtLatestReading(series);
    const hourly: HourlyConcentrations[] = [];
    for (let k = 40; k >= 3; k -= 1) {
      const reading = series.find((entry) => entry.hours_before === k)!;
      hourly.push({
        "PM2.5": reading.pm25 ?? null,
        PM10: reading.pm10 ?? null,
        NO2: reading.no2 ?? null,
        CO: reading.co ?? null,
      });
    }
    const expected = computeHourlyAqiSeries(hourly).at(-1)!;
    expect(latest.aqi).toBe(expected.aqi);
    expect(latest.dominantPollutant).toBe(expected.dominantPollutant);
  });

  it("a flat series gives the sub-index of its level (PM2.5 100 ug/m3 -> 233.33, dominant)", () => {
    const flat = readings(1, 30, () => ({ pm25: 100, pm10: 200, no2: 40 }));
    const latest = aqiAtLatestReading(flat);
    expect(latest.aqi).toBeCloseTo(subIndex("PM2.5", 100), 10);
    expect(latest.aqi).toBeCloseTo(233.333, 3);
    expect(latest.dominantPollutant).toBe("PM2.5");
  });
});

describe("the window arithmetic", () => {
  it("keeps the measured hours of the predicted hour's window and fills the unknown ones with the mean of the newest three", () => {
    // Newest reading 2 h before: hours_before 0 and 1 are unknown.
    const series = readings(2, 40, (k) => ({ pm25: k <= 4 ? 200 : 50, pm10: 60, no2: 20 }));
    const arithmetic = windowArithmetic(series);
    // Window of the predicted hour: hours_before 0..23: 2 filled with mean(200, 200, 200), 3 measured at 200 (2-4), 19 at 50.
    const pm25Mean = (2 * 200 + 3 * 200 + 19 * 50) / 24;
    expect(arithmetic.computed).toBe(true);
    expect(arithmetic.averaged["PM2.5"]).toBeCloseTo(pm25Mean, 10);
    expect(arithmetic.aqi).toBeCloseTo(subIndex("PM2.5", pm25Mean), 10);
    // It sees the rise coming, persistence (the window ending 2 h before) does not.
    expect(arithmetic.aqi).toBeGreaterThan(aqiAtLatestReading(series).aqi!);
  });

  it("from 24 hours ahead is the AQI at the newest reading (no hour of the window is measured)", () => {
    const series = readings(24, 60, (k) => ({ pm25: k, pm10: 100, no2: 30 }));
    expect(windowArithmetic(series)).toMatchObject({
      aqi: aqiAtLatestReading(series).aqi,
      computed: false,
    });
  });
});

describe("the history columns", () => {
  it("hold the horizon, the newest reading's hour and per-pollutant figures, NaN for an unmeasured pollutant", () => {
    const series = readings(3, 72, (k) => ({ pm25: 100 + k, pm10: 200, no2: 40 }));
    const { columns, horizon } = encodeHistoryColumns(series, 5);
    expect(columns).toHaveLength(HISTORY_COLUMNS.length);
    expect(horizon).toBe(3);
    expect(column(columns, "horizon_hours")).toBe(3);
    expect(column(columns, "latest_reading_hour")).toBe(2);
    expect(column(columns, "pm25_last")).toBe(103);
    expect(column(columns, "pm25_mean_last3")).toBe(104);
    expect(column(columns, "pm25_mean_prev3")).toBe(107);
    expect(column(columns, "pm25_same_hour_day_before")).toBe(124);
    // The newest reading's window is hours_before 3..26; the predicted hour's 0..23: 24..26 leave it.
    expect(column(columns, "pm25_leaving_mean")).toBe(125);
    expect(column(columns, "pm25_avg_latest")).toBeCloseTo(100 + (3 + 26) / 2, 10);
    expect(Number.isNaN(column(columns, "so2_avg_latest"))).toBe(true);
    expect(Number.isNaN(column(columns, "co_last"))).toBe(true);
    expect(encodeHistoryColumns(series, 1).columns[1]).toBe(22);
  });

  it("refuses readings without a CPCB AQI at the newest reading", () => {
    expect(() =>
      encodeHistoryColumns(
        readings(1, 10, () => ({ pm25: 50 })),
        0,
      ),
    ).toThrow(/no CPCB AQI/);
  });
});

describe("recentHoursIssues", () => {
  const loc = ["body", "recent_hours"];
  const complete = readings(1, 30, () => ({ pm25: 90, pm10: 150, no2: 30 }));

  it("accepts readings with an AQI at a newest reading 1 to 48 hours before", () => {
    expect(recentHoursIssues(complete, loc)).toEqual([]);
    expect(
      recentHoursIssues(
        readings(48, 72, () => ({ pm25: 90, pm10: 150, no2: 30 })),
        loc,
      ),
    ).toEqual([]);
  });

  it("a reading without any concentration is refused at its own position", () => {
    const issues = recentHoursIssues([...complete, { hours_before: 40, pm25: null }], loc);
    expect(issues).toEqual([
      expect.objectContaining({
        type: "value_error",
        loc: ["body", "recent_hours", 30],
        msg: "Value error, the reading 40 hours before has no concentration: send at least one of pm25, pm10, no2, so2, nh3, co, o3",
      }),
    ]);
  });

  it("repeated hours are refused, naming them", () => {
    const issues = recentHoursIssues([...complete, { hours_before: 5, pm25: 1 }], loc);
    expect(issues).toEqual([
      expect.objectContaining({
        loc,
        msg: "Value error, hours_before must be unique within recent_hours: 5 appears more than once",
        input: [5],
      }),
    ]);
  });

  it("a newest reading more than 48 hours before is refused", () => {
    const issues = recentHoursIssues(
      readings(49, 72, () => ({ pm25: 90, pm10: 150, no2: 30 })),
      loc,
    );
    expect(issues[0]?.msg).toBe(
      "Value error, the newest reading is 49 hours before the predicted hour; it must be 1 to 48 hours before (forecasts reach at most 48 hours ahead)",
    );
  });

  it("too few hours of PM2.5 and PM10 for a 24-hour average is refused, with the counts", () => {
    const sparse = readings(1, 30, (k) => ({ pm25: k <= 15 ? 90 : undefined, no2: 30, co: 1 }));
    const [issue] = recentHoursIssues(sparse, loc);
    expect(issue?.msg).toBe(
      "Value error, too few readings to compute the CPCB AQI at the newest reading (1 hours before the predicted hour): its 24-hour averages need at least 16 of the 24 hours of PM2.5 or PM10; hours 1-24 before the predicted hour hold 15 of PM2.5 and 0 of PM10",
    );
    expect(issue?.input).toEqual({ newest_hours_before: 1, pm25_hours: 15, pm10_hours: 0 });
  });

  it("fewer than three pollutants with enough data is refused, naming those that have it", () => {
    const [issue] = recentHoursIssues(
      readings(1, 30, () => ({ pm25: 90, pm10: 150 })),
      loc,
    );
    expect(issue?.msg).toMatch(
      /^Value error, too few readings to compute the CPCB AQI at the newest reading \(1 hours before the predicted hour\): it needs at least 3 pollutants .* only PM2\.5, PM10 have enough$/,
    );
  });
});
