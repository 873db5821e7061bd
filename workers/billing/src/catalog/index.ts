export { entitlementService, subscriptionReader, subscriptionService } from "./context.ts";
export { featureRoutes } from "./feature-routes.ts";
export { planEntitlementRoutes } from "./plan-entitlement-routes.ts";
export { planPriceRoutes } from "./plan-price-routes.ts";
export { planRoutes } from "./plan-routes.ts";
export {
  CancelBody,
  CheckSchema,
  ConsumeBody,
  ConsumeSchema,
  CouponCodeSchema,
  FeatureKeyParam,
  integer,
  SubscribeBody,
  SubscriptionSchema,
} from "./schemas.ts";
export {
  findFeatureByLookupKey,
  findPlanById,
  findPlanPrice,
  listPlanEntitlements,
} from "./storage.ts";
