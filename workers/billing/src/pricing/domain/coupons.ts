import type { CouponDuration } from "@edge-platform/shared/db/schema/billing";
import { divideRoundHalfUp, formatCents, toSafeInteger } from "../../platform/index.ts";

// Coupons: what one takes off an invoice and for how many invoices. Pure.
//
// A coupon discounts the SUBTOTAL (the charges), before tax and before the
// credit balance: percentOff rounds half up once, amountOff takes its
// cents; either way never more than the subtotal, so a total never goes
// below zero. An amountOff coupon only applies to invoices in its currency.
// Each period's own invoice finalized while the redemption is active counts
// as one of its periods: `once` discounts one period, `repeating`
// durationInPeriods of them, `forever` every one. The discount is for the
// billing period as a whole, so usage costs the same whether it is billed on
// a PROGRESSIVE invoice or at the period's end: each invoice of the period
// takes the coupon's discount on the period's charges so far less what the
// period's earlier invoices took (periodDiscountCents), and a PROGRESSIVE
// invoice is discounted without counting as a period.
// invoicing/discount-storage.ts applies the same rule in SQL inside the
// finalize batch (so each period is used once).

export interface CouponTerms {
  code: string;
  percentOff: number | null;
  amountOff: number | null;
  currency: string | null;
  duration: CouponDuration;
  durationInPeriods: number | null;
}

/** The text of the coupon's DISCOUNT line: "SAVE20 (20% off)", "WELCOME (10.00 USD off)". */
export function couponLabel(coupon: Omit<CouponTerms, "duration" | "durationInPeriods">): string {
  const off =
    coupon.percentOff !== null
      ? `${coupon.percentOff}% off`
      : `${formatCents(coupon.amountOff ?? 0, coupon.currency ?? "")} off`;
  return `${coupon.code} (${off})`;
}

/** Ends the DISCOUNT line of a period's invoice whose progressive invoices took part of the discount. */
export const LESS_PROGRESSIVE_DISCOUNTS =
  " on the whole period, less what its progressive invoices were discounted";

export const discountLineDescription = (label: string, lessProgressive = false) =>
  `Discount: ${label}${lessProgressive ? LESS_PROGRESSIVE_DISCOUNTS : ""}`;

/** Invoices a redemption may still discount (null: no end). */
export function periodsLeft(coupon: CouponTerms, invoicesDiscounted: number): number | null {
  if (coupon.duration === "forever") return null;
  const periods = coupon.duration === "once" ? 1 : (coupon.durationInPeriods ?? 0);
  return Math.max(0, periods - invoicesDiscounted);
}

/**
 * Cents the coupon takes off an invoice with `subtotal` in `currency`, or
 * null when it does not apply to it (another currency, or no periods left).
 */
export function discountCents(
  coupon: CouponTerms,
  invoicesDiscounted: number,
  invoice: { subtotal: number; currency: string },
): number | null {
  if (periodsLeft(coupon, invoicesDiscounted) === 0) return null;
  const subtotal = Math.max(0, invoice.subtotal);
  if (coupon.percentOff !== null) {
    return toSafeInteger(divideRoundHalfUp(BigInt(subtotal) * BigInt(coupon.percentOff), 100n));
  }
  if (coupon.currency !== invoice.currency) return null;
  return Math.min(coupon.amountOff ?? 0, subtotal);
}

/**
 * Cents the coupon takes off one invoice of a billing period: its discount
 * on the period's `charges` so far (this invoice's included, before what
 * progressive invoices billed is subtracted), less the `discountedEarlier`
 * cents the period's earlier invoices took, kept within 0 and the invoice's
 * subtotal; null when the coupon does not apply. Rounded once over the
 * period, so split invoices add up to what one invoice would have cost.
 */
export function periodDiscountCents(
  coupon: CouponTerms,
  invoicesDiscounted: number,
  invoice: { subtotal: number; currency: string; charges: number; discountedEarlier: number },
): number | null {
  const whole = discountCents(coupon, invoicesDiscounted, {
    subtotal: invoice.charges,
    currency: invoice.currency,
  });
  if (whole === null) return null;
  return Math.max(0, Math.min(whole - invoice.discountedEarlier, invoice.subtotal));
}

/** Why a coupon cannot be redeemed now, or undefined when it can. */
export function redemptionProblem(
  coupon: {
    code: string;
    status: string;
    redeemBy: string | null;
    maxRedemptions: number | null;
    timesRedeemed: number;
  },
  now: Date,
): string | undefined {
  if (coupon.status !== "ACTIVE") return `Coupon ${coupon.code} is archived`;
  if (coupon.redeemBy !== null && coupon.redeemBy <= now.toISOString()) {
    return `Coupon ${coupon.code} could be redeemed until ${coupon.redeemBy}`;
  }
  if (coupon.maxRedemptions !== null && coupon.timesRedeemed >= coupon.maxRedemptions) {
    return `Coupon ${coupon.code} has been redeemed the maximum number of times (${coupon.maxRedemptions})`;
  }
  return undefined;
}
