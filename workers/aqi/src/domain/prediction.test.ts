import { describe, expect, it } from "vitest";
import {
  aqiFromReadingZ,
  interpretModelOutputs,
  roundHalfToEven,
  roundTo2Decimals,
} from "./prediction.ts";

describe("roundHalfToEven (Python round)", () => {
  it("rounds exact halves to the even neighbour", () => {
    expect(roundHalfToEven(50.5)).toBe(50);
    expect(roundHalfToEven(51.5)).toBe(52);
    expect(roundHalfToEven(499.5)).toBe(500);
    expect(roundHalfToEven(2.5)).toBe(2);
    expect(roundHalfToEven(0.5)).toBe(0);
  });

  it("rounds everything else to the nearest integer", () => {
    expect(roundHalfToEven(2.4999)).toBe(2);
    expect(roundHalfToEven(2.5001)).toBe(3);
    expect(roundHalfToEven(-1.6)).toBe(-2);
  });

  it("never returns negative zero", () => {
    expect(Object.is(roundHalfToEven(-0.5), 0)).toBe(true);
    expect(Object.is(roundHalfToEven(-0.4), 0)).toBe(true);
  });
});

describe("roundTo2Decimals (Python round(x, 2))", () => {
  it("sends exact binary ties to even", () => {
    expect(roundTo2Decimals(0.125)).toBe(0.12);
    expect(roundTo2Decimals(0.375)).toBe(0.38);
    expect(roundTo2Decimals(451.125)).toBe(451.12);
  });

  it("rounds the exact binary value, like Python, for decimal-looking ties", () => {
    // 2.675 is stored as 2.67499999..., 1.005 as 1.00499999...
    expect(roundTo2Decimals(2.675)).toBe(2.67);
    expect(roundTo2Decimals(1.005)).toBe(1);
    expect(roundTo2Decimals(451.0512)).toBe(451.05);
    expect(roundTo2Decimals(-0.4)).toBe(-0.4);
  });
});

describe("interpretModelOutputs", () => {
  it("keeps the raw value unclipped but clips the rounded value and the interval", () => {
    expect(interpretModelOutputs(512.8, 400, 600)).toEqual({
      aqi_predicted: 512.8,
      aqi_rounded: 500,
      category: "Severe",
      aqi_interval: { low: 400, high: 500 },
    });
    const low = interpretModelOutputs(-0.4, -5, 10);
    expect(low.aqi_rounded).toBe(0);
    expect(low.category).toBe("Good");
    expect(low.aqi_interval).toEqual({ low: 0, high: 10 });
  });

  it("takes the category from aqi_rounded", () => {
    expect(interpretModelOutputs(50.4, 30, 80).category).toBe("Good");
    expect(interpretModelOutputs(50.5, 30, 80).category).toBe("Good"); // 50.5 rounds to 50
    expect(interpretModelOutputs(51.5, 30, 80).category).toBe("Satisfactory"); // 51.5 rounds to 52
  });

  it("widens a crossed or one-sided interval to contain the point", () => {
    expect(interpretModelOutputs(100, 120, 90).aqi_interval).toEqual({ low: 90, high: 120 });
    expect(interpretModelOutputs(100, 110, 130).aqi_interval).toEqual({ low: 100, high: 130 });
    expect(interpretModelOutputs(100, 60, 95).aqi_interval).toEqual({ low: 60, high: 100 });
  });
});

describe("aqiFromReadingZ: the recent-reading model's z back to AQI", () => {
  it("z = 0 repeats the reading; z is per square root of the age in log space", () => {
    expect(aqiFromReadingZ(0, 287, 3)).toBeCloseTo(287, 10);
    // log1p(aqi) = log1p(100) + sqrt(4) * 0.1
    expect(aqiFromReadingZ(0.1, 100, 4)).toBeCloseTo(101 * Math.exp(0.2) - 1, 10);
    expect(aqiFromReadingZ(-0.05, 400, 16)).toBeLessThan(400);
  });

  it("is monotone in z, so interval ends stay ordered", () => {
    const values = [-0.3, -0.1, 0, 0.05, 0.2].map((z) => aqiFromReadingZ(z, 180, 12));
    for (let index = 1; index < values.length; index += 1) {
      expect(values[index]!).toBeGreaterThan(values[index - 1]!);
    }
  });
});
