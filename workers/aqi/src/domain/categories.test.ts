import { describe, expect, it } from "vitest";
import {
  AQI_CATEGORIES,
  aqiCategoryRanges,
  categoryForAqi,
  categoryIndexForAqi,
} from "./categories.ts";

describe("AQI category table", () => {
  it("assigns each band's integer ends to that band", () => {
    const cases: [number, string][] = [
      [0, "Good"],
      [50, "Good"],
      [51, "Satisfactory"],
      [100, "Satisfactory"],
      [101, "Moderate"],
      [200, "Moderate"],
      [201, "Poor"],
      [300, "Poor"],
      [301, "Very Poor"],
      [400, "Very Poor"],
      [401, "Severe"],
      [500, "Severe"],
    ];
    for (const [aqi, label] of cases) {
      expect(categoryForAqi(aqi), `AQI ${aqi}`).toBe(label);
    }
  });

  it("puts values between two bands in the upper band (first band whose upper bound is >= the value)", () => {
    expect(categoryForAqi(50.004)).toBe("Satisfactory");
    expect(categoryForAqi(50.5)).toBe("Satisfactory");
    expect(categoryForAqi(100.2)).toBe("Moderate");
    expect(categoryForAqi(400.5)).toBe("Severe");
  });

  it("treats values off the scale as its ends", () => {
    expect(categoryForAqi(-0.4)).toBe("Good");
    expect(categoryForAqi(512.8)).toBe("Severe");
    expect(categoryIndexForAqi(10_000)).toBe(AQI_CATEGORIES.length - 1);
  });

  it("refuses NaN rather than guessing a band", () => {
    expect(() => categoryForAqi(Number.NaN)).toThrow(RangeError);
  });

  it("lists the ranges as /model/info returns them, in scale order", () => {
    const ranges = aqiCategoryRanges();
    expect(ranges).toEqual({
      "0-50": "Good",
      "51-100": "Satisfactory",
      "101-200": "Moderate",
      "201-300": "Poor",
      "301-400": "Very Poor",
      "401-500": "Severe",
    });
    expect(Object.keys(ranges)).toEqual([
      "0-50",
      "51-100",
      "101-200",
      "201-300",
      "301-400",
      "401-500",
    ]);
  });
});
