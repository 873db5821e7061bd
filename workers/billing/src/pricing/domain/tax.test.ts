import { describe, expect, it } from "vitest";
import { formatPercent, percentToPpm, ppmToPercent, taxCents, taxLineDescription } from "./tax.ts";

describe("tax rates", () => {
  it("take a percentage with up to 4 decimals, from 0 to 100", () => {
    expect(percentToPpm(10)).toBe(100_000);
    expect(percentToPpm(8.875)).toBe(88_750);
    expect(percentToPpm(19.6)).toBe(196_000);
    expect(percentToPpm(0.0001)).toBe(1);
    expect(percentToPpm(100)).toBe(1_000_000);
    expect(percentToPpm(0)).toBe(0);
    expect(percentToPpm(8.87501)).toBeNull();
    expect(percentToPpm(-1)).toBeNull();
    expect(percentToPpm(100.0001)).toBeNull();
    expect(percentToPpm(Number.NaN)).toBeNull();
    expect(ppmToPercent(88_750)).toBe(8.875);
  });

  it("are shown without trailing zeros", () => {
    expect(formatPercent(100_000)).toBe("10");
    expect(formatPercent(88_750)).toBe("8.875");
    expect(formatPercent(1)).toBe("0.0001");
    expect(taxLineDescription(200_000)).toBe("Tax (20%)");
  });
});

describe("taxCents", () => {
  it("is the rate's share of the taxable amount, rounded half up once", () => {
    expect(taxCents(2320, 100_000)).toBe(232);
    expect(taxCents(1005, 100_000)).toBe(101); // 100.5 -> 101
    expect(taxCents(1004, 100_000)).toBe(100); // 100.4 -> 100
    expect(taxCents(999, 88_750)).toBe(89); // 88.66 -> 89
    expect(taxCents(0, 100_000)).toBe(0);
    expect(taxCents(-50, 100_000)).toBe(0);
    expect(taxCents(1000, 0)).toBe(0);
  });
});
