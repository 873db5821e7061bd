// The pricing capability's only entry for the rest of the worker (what it owns: README.md).
export { billingDetailsRoutes } from "./billing-details-routes.ts";
export { BillingDetailsService } from "./billing-details-service.ts";
export { findBillingDetails } from "./billing-details-storage.ts";
export { couponRoutes } from "./coupon-routes.ts";
export { CouponCodeSchema } from "./coupon-schemas.ts";
export { CouponService } from "./coupon-service.ts";
export {
  describeCharge,
  MAX_PRICING_TIERS,
  type PricedBilledTier,
  pricingProblem,
  type UsageCharge,
  type UsagePricing,
  usageCharge,
} from "./domain/charge-models.ts";
export {
  type CouponTerms,
  discountCents,
  discountLineDescription,
  LESS_PROGRESSIVE_DISCOUNTS,
  periodDiscountCents,
} from "./domain/coupons.ts";
export {
  ceilMicroCents,
  decimalPriceProblem,
  isDecimalPrice,
  perUnitCents,
  roundedMicroCents,
} from "./domain/fixed-point.ts";
export {
  dimensionMatches,
  type GroupTerms,
  type GroupTermsSource,
  groupTerms,
  type PriceTerms,
  usagePricingOfTerms,
} from "./domain/group-terms.ts";
export {
  type ProgressiveRequest,
  thresholdsReached,
  usageThresholdsProblem,
} from "./domain/progressive.ts";
export { ppmToPercent, taxCents, taxLineDescription } from "./domain/tax.ts";
export type { PricingRouteServices } from "./route-services.ts";
