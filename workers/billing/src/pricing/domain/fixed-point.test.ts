import { describe, expect, it } from "vitest";
import {
  ceilMicroCents,
  decimalPriceProblem,
  perUnitCents,
  roundedMicroCents,
  scalePrice,
  scaleQuantity,
  unscaleQuantity,
} from "./fixed-point.ts";

describe("fixed-point quantities and prices", () => {
  it("keeps whole quantities exact and rounds fractions to 9 decimals", () => {
    expect(scaleQuantity(3)).toBe(3_000_000_000n);
    expect(scaleQuantity(Number.MAX_SAFE_INTEGER)).toBe(
      BigInt(Number.MAX_SAFE_INTEGER) * 1_000_000_000n,
    );
    expect(scaleQuantity(0.1 + 0.2)).toBe(300_000_000n);
    expect(scaleQuantity(1.0000000004)).toBe(1_000_000_000n);
    expect(scaleQuantity(1.0000000006)).toBe(1_000_000_001n);
    expect(scaleQuantity(-2.5)).toBe(-2_500_000_000n);
    expect(() => scaleQuantity(Number.NaN)).toThrow(RangeError);
    expect(() => scaleQuantity(Number.POSITIVE_INFINITY)).toThrow(RangeError);
    expect(unscaleQuantity(scaleQuantity(1234.5))).toBe(1234.5);
    expect(unscaleQuantity(scaleQuantity(12))).toBe(12);
  });

  it("reads decimal prices exactly, to 10 decimals", () => {
    expect(scalePrice(15)).toBe(150_000_000_000n);
    expect(scalePrice("15")).toBe(150_000_000_000n);
    expect(scalePrice("0.15")).toBe(1_500_000_000n);
    expect(scalePrice("0.0000000001")).toBe(1n);
    expect(() => scalePrice("-1")).toThrow(RangeError);
    expect(() => scalePrice(1.5)).toThrow(RangeError);
    expect(decimalPriceProblem("overagePriceDecimal", "abc")).toMatch(
      /^overagePriceDecimal must be a non-negative decimal string/,
    );
    expect(decimalPriceProblem("overagePriceDecimal", "0.5")).toBeUndefined();
  });

  it("rounds a decimal price to whole micro-cents half up, or up", () => {
    expect(roundedMicroCents("0.15")).toBe(0);
    expect(roundedMicroCents("0.5")).toBe(1);
    expect(roundedMicroCents("12")).toBe(12);
    expect(ceilMicroCents("0.0000000001")).toBe(1);
    expect(ceilMicroCents("0")).toBe(0);
    expect(ceilMicroCents("12")).toBe(12);
    expect(ceilMicroCents("12.01")).toBe(13);
  });
});

describe("perUnitCents", () => {
  it("prices decimal micro-cents exactly and rounds half up once", () => {
    // 333,333 x 0.15 = 49,999.95 micro-cents = 499.9995 cents -> 500
    expect(perUnitCents(333_333, "0.15")).toBe(500);
    expect(perUnitCents(2_000_000, "0.03")).toBe(600);
    expect(perUnitCents(3_000_000, "0.01")).toBe(300);
    expect(perUnitCents(1, "0.0000000001")).toBe(0);
    expect(perUnitCents(50, "1")).toBe(1); // 0.5 cent -> 1
  });

  it("prices fractional quantities", () => {
    expect(perUnitCents(2.5, 100)).toBe(3); // 2.5 cents -> 3
    expect(perUnitCents(2.49, 100)).toBe(2);
    expect(perUnitCents(0.333333333, 300)).toBe(1);
    expect(perUnitCents(1.5, "0.5")).toBe(0);
  });

  it("keeps whole quantities at whole prices as before", () => {
    expect(perUnitCents(1010, 15)).toBe(152); // 151.5 -> 152
    expect(perUnitCents(0, 15)).toBe(0);
    expect(perUnitCents(-3, 50)).toBe(-1); // -1.5 -> -1 (half up)
  });
});
