import { describe, expect, it } from "vitest";
import {
  averagedConcentrationsAt,
  computeAqi,
  computeHourlyAqiSeries,
  type HourlyConcentrations,
  subIndex,
} from "./aqi-calculator.ts";

describe("subIndex: national breakpoints, linear inside each band", () => {
  it("maps PM2.5 band ends and midpoints (24-hour mean, ug/m3)", () => {
    expect(subIndex("PM2.5", 0)).toBe(0);
    expect(subIndex("PM2.5", 30)).toBe(50);
    expect(subIndex("PM2.5", 45)).toBeCloseTo(75, 10); // 50 + 15 * 50/30
    expect(subIndex("PM2.5", 60)).toBe(100);
    expect(subIndex("PM2.5", 90)).toBe(200);
    expect(subIndex("PM2.5", 120)).toBe(300);
    expect(subIndex("PM2.5", 185)).toBeCloseTo(350, 10); // 300 + 65 * 100/130
    expect(subIndex("PM2.5", 250)).toBe(400);
    expect(subIndex("PM2.5", 380)).toBe(500);
  });

  it("maps PM10 (Good ends at 50, Satisfactory at 100)", () => {
    expect(subIndex("PM10", 50)).toBe(50);
    expect(subIndex("PM10", 100)).toBe(100);
    expect(subIndex("PM10", 175)).toBeCloseTo(150, 10); // 100 + 75 * 100/150
    expect(subIndex("PM10", 250)).toBe(200);
    expect(subIndex("PM10", 350)).toBe(300);
    expect(subIndex("PM10", 430)).toBe(400);
    expect(subIndex("PM10", 470)).toBeCloseTo(450, 10);
  });

  it("reads CO in mg/m3, not ug/m3", () => {
    expect(subIndex("CO", 1)).toBe(50);
    expect(subIndex("CO", 1.5)).toBeCloseTo(75, 10);
    expect(subIndex("CO", 2)).toBe(100);
    expect(subIndex("CO", 6)).toBeCloseTo(150, 10); // 100 + 4 * 100/8
    expect(subIndex("CO", 10)).toBe(200);
    expect(subIndex("CO", 17)).toBe(300);
    expect(subIndex("CO", 34)).toBe(400);
    // 1000 ug/m3 passed by mistake would be far off the scale:
    expect(subIndex("CO", 1000)).toBeGreaterThan(500);
  });

  it("maps the gaseous pollutants' band ends", () => {
    expect(subIndex("NO2", 40)).toBe(50);
    expect(subIndex("NO2", 80)).toBe(100);
    expect(subIndex("NO2", 180)).toBe(200);
    expect(subIndex("NO2", 400)).toBe(400);
    expect(subIndex("SO2", 380)).toBe(200);
    expect(subIndex("SO2", 1600)).toBe(400);
    expect(subIndex("NH3", 400)).toBe(100);
    expect(subIndex("NH3", 1200)).toBe(300);
    expect(subIndex("O3", 100)).toBe(100);
    expect(subIndex("O3", 168)).toBe(200);
    expect(subIndex("O3", 188)).toBeCloseTo(250, 10); // 200 + 20 * 100/40
    expect(subIndex("O3", 208)).toBe(300);
    expect(subIndex("O3", 748)).toBe(400);
  });

  it("extends the last band's line beyond the scale", () => {
    expect(subIndex("PM2.5", 445)).toBeCloseTo(550, 10);
  });

  it("rejects negative and non-finite concentrations", () => {
    expect(() => subIndex("PM10", -1)).toThrow(RangeError);
    expect(() => subIndex("PM10", Number.NaN)).toThrow(RangeError);
  });
});

describe("computeAqi: the largest sub-index, with the data rule", () => {
  it("returns the largest sub-index and its pollutant", () => {
    const result = computeAqi({ "PM2.5": 45, PM10: 175, NO2: 40 });
    expect(result.aqi).toBeCloseTo(150, 10);
    expect(result.dominantPollutant).toBe("PM10");
    expect(result.subIndices["PM2.5"]).toBeCloseTo(75, 10);
    expect(result.invalidReason).toBeNull();
  });

  it("needs at least three pollutants", () => {
    const result = computeAqi({ "PM2.5": 200, NO2: 40, SO2: null, CO: undefined });
    expect(result.aqi).toBeNull();
    expect(result.invalidReason).toBe("fewer-than-3-pollutants");
  });

  it("needs PM2.5 or PM10 among them", () => {
    const result = computeAqi({ NO2: 40, SO2: 40, CO: 1, O3: 50 });
    expect(result.aqi).toBeNull();
    expect(result.invalidReason).toBe("no-particulate-matter");
  });

  it("accepts PM10 alone as the particulate pollutant", () => {
    expect(computeAqi({ PM10: 100, NO2: 40, SO2: 40 }).aqi).toBe(100);
  });

  it("caps the AQI at 500 but reports the uncapped index", () => {
    const result = computeAqi({ "PM2.5": 445, PM10: 100, NO2: 40 });
    expect(result.aqi).toBe(500);
    expect(result.uncappedAqi).toBeCloseTo(550, 10);
  });

  it("lets a gas dominate when its sub-index is largest", () => {
    expect(computeAqi({ "PM2.5": 30, PM10: 50, CO: 6 }).dominantPollutant).toBe("CO");
  });
});

function hours(
  count: number,
  fill: (hour: number) => HourlyConcentrations,
): HourlyConcentrations[] {
  return Array.from({ length: count }, (_, hour) => fill(hour));
}

describe("averaging windows", () => {
  it("takes the 24-hour mean of PM2.5 over the hour and the 23 before it", () => {
    const series = hours(30, (hour) => ({ "PM2.5": hour < 6 ? 1000 : 60 }));
    expect(averagedConcentrationsAt(series, 29)["PM2.5"]).toBe(60); // hours 6..29
    expect(averagedConcentrationsAt(series, 28)["PM2.5"]).toBeCloseTo((1000 + 23 * 60) / 24, 10);
  });

  it("needs 16 readings in the 24-hour window", () => {
    const withFifteen = hours(24, (hour) => ({ "PM2.5": hour < 15 ? 60 : null }));
    const withSixteen = hours(24, (hour) => ({ "PM2.5": hour < 16 ? 60 : null }));
    expect(averagedConcentrationsAt(withFifteen, 23)["PM2.5"]).toBeNull();
    expect(averagedConcentrationsAt(withSixteen, 23)["PM2.5"]).toBe(60);
  });

  it("takes the maximum of CO and O3 over 8 hours, not the mean", () => {
    const series = hours(8, (hour) => ({ CO: hour === 3 ? 6 : 1, O3: hour === 7 ? 188 : 20 }));
    const averaged = averagedConcentrationsAt(series, 7);
    expect(averaged.CO).toBe(6);
    expect(averaged.O3).toBe(188);
  });

  it("drops a peak once it leaves the 8-hour window, and needs 6 readings in it", () => {
    const series = hours(9, (hour) => ({ CO: hour === 0 ? 6 : 1 }));
    expect(averagedConcentrationsAt(series, 7).CO).toBe(6); // hours 0..7
    expect(averagedConcentrationsAt(series, 8).CO).toBe(1); // hours 1..8
    const sparse = hours(8, (hour) => ({ CO: hour < 5 ? 1 : null }));
    expect(averagedConcentrationsAt(sparse, 7).CO).toBeNull();
  });

  it("ignores negative readings (instrument faults) as missing", () => {
    const series = hours(24, (hour) => ({ "PM2.5": hour < 20 ? 60 : -5 }));
    expect(averagedConcentrationsAt(series, 23)["PM2.5"]).toBe(60);
  });
});

describe("computeHourlyAqiSeries", () => {
  it("produces an AQI once the windows hold enough data", () => {
    const series = hours(24, () => ({ "PM2.5": 90, NO2: 40, SO2: 40, CO: 0.5 }));
    const results = computeHourlyAqiSeries(series);
    expect(results).toHaveLength(24);
    expect(results[14]?.aqi).toBeNull(); // 15 readings: PM2.5, NO2, SO2 are all short of 16
    expect(results[14]?.invalidReason).toBe("fewer-than-3-pollutants"); // only CO has enough (8-hour rule)
    expect(results[15]?.aqi).toBe(200); // 16 readings of 90 -> 200
    expect(results[23]?.aqi).toBe(200);
    expect(results[23]?.dominantPollutant).toBe("PM2.5");
  });
});
