export { EntitlementCounter } from "./counter/entitlement-counter.ts";
export { pruneUsageFlushIds } from "./counter/flush-prune.ts";
export { entitlementRoutes } from "./routes.ts";
export { EntitlementService } from "./service.ts";
