import type { Context } from "hono";
import type { AppEnv } from "../platform/index.ts";
import type { BillingDetailsService } from "./billing-details-service.ts";
import type { CouponService } from "./coupon-service.ts";

/**
 * What the pricing routes are handed: each builds a service for one request.
 * The worker's composition root (src/services.ts) implements it.
 */
export interface PricingRouteServices {
  couponService(c: Context<AppEnv>): CouponService;
  billingDetailsService(c: Context<AppEnv>): BillingDetailsService;
}
