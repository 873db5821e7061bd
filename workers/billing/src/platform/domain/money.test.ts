import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  divideRoundHalfUp,
  formatCents,
  prorateCents,
  sumCents,
  usageAmountCents,
} from "./money.ts";

describe("the rounding rule (half up, to the cent)", () => {
  it("rounds micro-cents to cents half up", () => {
    expect(usageAmountCents(1010, 15)).toBe(152); // 151.5
    expect(usageAmountCents(1009, 15)).toBe(151); // 151.35
    expect(usageAmountCents(5000, 10)).toBe(500);
    expect(usageAmountCents(1, 49)).toBe(0); // 0.49
    expect(usageAmountCents(1, 50)).toBe(1); // 0.5
    expect(usageAmountCents(0, 1_000_000)).toBe(0);
  });

  it("agrees with exact rational rounding for any numerator and positive denominator", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }),
        fc.bigInt({ min: 1n, max: 10n ** 20n }),
        (n, d) => {
          const q = divideRoundHalfUp(n, d);
          // q is the integer with q - 1/2 <= n/d < q + 1/2, i.e. 2dq - d <= 2n < 2dq + d.
          expect(2n * d * q - d <= 2n * n).toBe(true);
          expect(2n * n < 2n * d * q + d).toBe(true);
        },
      ),
    );
  });

  it("is exact beyond 2^53 intermediates and refuses results that are not safe integers", () => {
    expect(usageAmountCents(1_000_000_000, 1_000_000)).toBe(10_000_000_000_000);
    expect(() => usageAmountCents(Number.MAX_SAFE_INTEGER, 1000)).toThrow(RangeError);
    expect(() => usageAmountCents(1.5, 10)).toThrow(RangeError);
  });

  it("prorates by the same rule and clamps the part to [0, whole]", () => {
    expect(prorateCents(2900, 15, 30)).toBe(1450);
    expect(prorateCents(999, 1, 2)).toBe(500); // 499.5
    expect(prorateCents(1000, 1, 3)).toBe(333);
    expect(prorateCents(1000, -5, 3)).toBe(0);
    expect(prorateCents(1000, 9, 3)).toBe(1000);
    expect(() => prorateCents(1000, 1, 0)).toThrow(RangeError);
    fc.assert(
      fc.property(
        fc.nat({ max: 10_000_000 }),
        fc.nat({ max: 31 * 86_400_000 }),
        fc.integer({ min: 1, max: 31 * 86_400_000 }),
        (amount, part, whole) => {
          const prorated = prorateCents(amount, Math.min(part, whole), whole);
          expect(prorated).toBeGreaterThanOrEqual(0);
          expect(prorated).toBeLessThanOrEqual(amount);
        },
      ),
    );
  });

  it("sums exactly and formats for people", () => {
    expect(sumCents([2900, -1450, 75, 500])).toBe(2025);
    expect(formatCents(123456, "usd")).toBe("1,234.56 USD");
    expect(formatCents(-5, "eur")).toBe("-0.05 EUR");
  });
});
