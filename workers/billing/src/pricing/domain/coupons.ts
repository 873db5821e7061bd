import type { CouponDuration } from "@edge-platform/shared/db/schema/billing";
import { divideRoundHalfUp, formatCents, toSafeInteger } from "../../platform/index.ts";

// Coupons: what one takes off an invoice and for how many invoices. Pure.
//
// A coupon discounts the SUBTOTAL (the charges), before tax and before the
// credit balance: percentOff rounds half up once, amountOff takes its
// cents; either way never more than the subtotal, so a total never goes
// below zero. An amountOff coupon only applies to invoices in its currency.
// Each invoice finalized while the redemption is active counts as one of
// its periods: `once` discounts one invoice, `repeating` durationInPeriods
// of them, `forever` every one. invoicing/storage.ts applies the same rule in
// SQL inside the finalize batch (so each period is used once).

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

export const discountLineDescription = (label: string) => `Discount: ${label}`;

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
