export {
  pruneUsageFlushes,
  readTenantWindowUsage,
  type UsageFlushEventClaim,
  type UsageFlushWindowDelta,
} from "./aggregates-storage.ts";
export { usageDeadLetterRoutes } from "./dead-letter-routes.ts";
export { hourStartOf, type UsageFlushHourDelta } from "./hourly-storage.ts";
export { drainD1UsageLog } from "./log/d1-drain.ts";
export { applyCounterFlush } from "./log/flush-claims.ts";
export { UsageLog } from "./log/usage-log.ts";
export { usageRoutes } from "./routes.ts";
