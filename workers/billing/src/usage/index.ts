// The usage capability's only entry for the rest of the worker (what it owns: README.md).
export {
  pruneUsageFlushes,
  readTenantWindowUsage,
  type UsageFlushEventClaim,
  type UsageFlushWindowDelta,
} from "./aggregates-storage.ts";
export { usageDeadLetterRoutes } from "./dead-letter-routes.ts";
export { UsageDeadLetterService } from "./dead-letter-service.ts";
export { hourStartOf, type UsageFlushHourDelta } from "./hourly-storage.ts";
export { UsageIngestionService } from "./ingestion.ts";
export { drainD1UsageLog } from "./log/d1-drain.ts";
export { applyCounterFlush } from "./log/flush-claims.ts";
export { UsageLog } from "./log/usage-log.ts";
export type { MeterGroupDelta } from "./meter-groups-storage.ts";
export type { UsageRouteServices } from "./route-services.ts";
export { usageRoutes } from "./routes.ts";
export { UsageViewService } from "./views.ts";
