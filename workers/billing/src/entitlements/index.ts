// The entitlements capability's only entry for the rest of the worker (what it owns: README.md).
export type { CounterEffects } from "./counter/effects.ts";
export { EntitlementCounterObject } from "./counter/entitlement-counter.ts";
export { pruneUsageFlushIds } from "./counter/flush-prune.ts";
export type { EntitlementRouteServices } from "./route-services.ts";
export { entitlementRoutes } from "./routes.ts";
export { EntitlementService } from "./service.ts";
