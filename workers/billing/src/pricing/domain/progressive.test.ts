import { describe, expect, it } from "vitest";
import { thresholdsReached, usageThresholdsProblem } from "./progressive.ts";

describe("progressive billing thresholds", () => {
  const thresholds = [{ amount: 20_000 }, { amount: 50_000, recurring: true }];

  it("counts fixed thresholds, then the recurring one every amount after the last fixed", () => {
    expect(thresholdsReached(thresholds, 0)).toBe(0);
    expect(thresholdsReached(thresholds, 19_999)).toBe(0);
    expect(thresholdsReached(thresholds, 20_000)).toBe(1);
    expect(thresholdsReached(thresholds, 69_999)).toBe(1);
    expect(thresholdsReached(thresholds, 70_000)).toBe(2);
    expect(thresholdsReached(thresholds, 170_000)).toBe(4);
    expect(thresholdsReached([{ amount: 100 }, { amount: 300 }], 1_000)).toBe(2);
    expect(thresholdsReached(null, 1_000)).toBe(0);
  });

  it("refuses thresholds that do not increase or a recurring one before the last", () => {
    expect(usageThresholdsProblem(thresholds)).toBeUndefined();
    expect(usageThresholdsProblem([{ amount: 500 }, { amount: 500 }])).toMatch(/strictly increase/);
    expect(usageThresholdsProblem([{ amount: 500, recurring: true }, { amount: 900 }])).toMatch(
      /only the last/,
    );
  });
});
