// The catalog capability's only entry for the rest of the worker (what it owns: README.md).
export { featureRoutes } from "./feature-routes.ts";
export { FeatureService } from "./feature-service.ts";
export { planEntitlementRoutes } from "./plan-entitlement-routes.ts";
export { PlanEntitlementService } from "./plan-entitlement-service.ts";
export { planPriceRoutes } from "./plan-price-routes.ts";
export { planRoutes } from "./plan-routes.ts";
export { PlanService } from "./plan-service.ts";
export type { CatalogRouteServices } from "./route-services.ts";
export {
  CancelBody,
  CheckSchema,
  ConsumeBody,
  ConsumeSchema,
  FeatureKeyParam,
  SubscribeBody,
  SubscriptionSchema,
} from "./schemas.ts";
export {
  findFeatureByLookupKey,
  findPlanById,
  findPlanPrice,
  listPlanEntitlements,
} from "./storage.ts";
