import { describe, expect, it } from "vitest";
import {
  type CouponTerms,
  couponLabel,
  discountCents,
  periodDiscountCents,
  periodsLeft,
  redemptionProblem,
} from "./coupons.ts";

const percent = (percentOff: number, extra: Partial<CouponTerms> = {}): CouponTerms => ({
  code: "SAVE",
  percentOff,
  amountOff: null,
  currency: null,
  duration: "forever",
  durationInPeriods: null,
  ...extra,
});
const amount = (amountOff: number, currency = "usd"): CouponTerms => ({
  ...percent(0),
  percentOff: null,
  amountOff,
  currency,
});
const usd = (subtotal: number) => ({ subtotal, currency: "usd" });

describe("discountCents", () => {
  it("takes percentOff of the subtotal, rounded half up once", () => {
    expect(discountCents(percent(20), 0, usd(9400))).toBe(1880);
    expect(discountCents(percent(15), 0, usd(2915))).toBe(437); // 437.25
    expect(discountCents(percent(10), 0, usd(1005))).toBe(101); // 100.5 -> 101
    expect(discountCents(percent(100), 0, usd(2900))).toBe(2900);
    expect(discountCents(percent(20), 0, usd(0))).toBe(0);
  });

  it("takes amountOff in its currency, never more than the subtotal", () => {
    expect(discountCents(amount(500), 0, usd(2900))).toBe(500);
    expect(discountCents(amount(5000), 0, usd(2900))).toBe(2900);
    expect(discountCents(amount(500, "eur"), 0, usd(2900))).toBeNull();
  });

  it("applies for the coupon's duration: once, repeating N, forever", () => {
    const once = percent(20, { duration: "once" });
    const twice = percent(20, { duration: "repeating", durationInPeriods: 2 });
    expect([0, 1, 2].map((used) => discountCents(once, used, usd(1000)))).toEqual([
      200,
      null,
      null,
    ]);
    expect([0, 1, 2].map((used) => discountCents(twice, used, usd(1000)))).toEqual([
      200,
      200,
      null,
    ]);
    expect([0, 1, 50].map((used) => discountCents(percent(20), used, usd(1000)))).toEqual([
      200, 200, 200,
    ]);
    expect(periodsLeft(twice, 1)).toBe(1);
    expect(periodsLeft(percent(20), 99)).toBeNull();
  });
});

describe("periodDiscountCents: one discount per billing period, spread over its invoices", () => {
  /** An invoice of the period: its subtotal, the period's charges so far, what earlier ones took. */
  const part = (subtotal: number, charges: number, discountedEarlier: number) => ({
    subtotal,
    currency: "usd",
    charges,
    discountedEarlier,
  });

  it("rounds percentOff once over the period, not once per invoice", () => {
    // 610 then 1,810 more: 25% of 610 = 152.5 -> 153; of 2,420 = 605, so 452 are left.
    expect(periodDiscountCents(percent(25), 0, part(610, 610, 0))).toBe(153);
    expect(periodDiscountCents(percent(25), 0, part(1810, 2420, 153))).toBe(452);
    // Each invoice on its own would take 153 + 453 = 606.
    expect(discountCents(percent(25), 0, usd(1810))).toBe(453);
  });

  it("spends amountOff across the period's invoices, never more in total", () => {
    expect(periodDiscountCents(amount(2000), 0, part(610, 610, 0))).toBe(610);
    expect(periodDiscountCents(amount(2000), 0, part(1810, 2420, 610))).toBe(1390);
    expect(periodDiscountCents(amount(500), 0, part(1810, 2420, 500))).toBe(0);
  });

  it("never takes more than the invoice's subtotal, never gives back, and keeps discountCents' null", () => {
    // Redeemed after a progressive invoice billed 800 undiscounted: 20% of 900 is 180, 100 to take it from.
    expect(periodDiscountCents(percent(20), 0, part(100, 900, 0))).toBe(100);
    // A period that cost less than its progressive invoices billed: nothing to take.
    expect(periodDiscountCents(percent(20), 0, part(0, 750, 160))).toBe(0);
    expect(periodDiscountCents(amount(500, "eur"), 0, part(100, 100, 0))).toBeNull();
    expect(periodDiscountCents(percent(20, { duration: "once" }), 1, part(100, 100, 0))).toBeNull();
  });
});

describe("coupon labels and redemption rules", () => {
  it("labels the DISCOUNT line", () => {
    expect(couponLabel(percent(20))).toBe("SAVE (20% off)");
    expect(couponLabel({ ...amount(123_456), code: "BIG" })).toBe("BIG (1,234.56 USD off)");
  });

  it("refuses archived, expired and fully redeemed coupons", () => {
    const base = {
      code: "SAVE",
      status: "ACTIVE",
      redeemBy: null,
      maxRedemptions: null,
      timesRedeemed: 0,
    };
    const now = new Date("2026-06-01T00:00:00.000Z");
    expect(redemptionProblem(base, now)).toBeUndefined();
    expect(redemptionProblem({ ...base, status: "ARCHIVED" }, now)).toMatch(/archived/);
    expect(redemptionProblem({ ...base, redeemBy: "2026-05-31T23:59:59.000Z" }, now)).toMatch(
      /could be redeemed until/,
    );
    expect(
      redemptionProblem({ ...base, redeemBy: "2026-06-02T00:00:00.000Z" }, now),
    ).toBeUndefined();
    expect(redemptionProblem({ ...base, maxRedemptions: 1, timesRedeemed: 1 }, now)).toMatch(
      /maximum number of times \(1\)/,
    );
  });
});
