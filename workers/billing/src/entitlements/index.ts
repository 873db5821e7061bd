export type { CounterEffects } from "./counter/effects.ts";
export { EntitlementCounterObject } from "./counter/entitlement-counter.ts";
export { pruneUsageFlushIds } from "./counter/flush-prune.ts";
export type { EntitlementRouteServices } from "./route-services.ts";
export { entitlementRoutes } from "./routes.ts";
export { EntitlementService } from "./service.ts";
