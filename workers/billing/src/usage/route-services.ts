import type { Context } from "hono";
import type { AppEnv } from "../platform/index.ts";
import type { UsageDeadLetterService } from "./dead-letter-service.ts";
import type { UsageIngestionService } from "./ingestion.ts";
import type { UsageViewService } from "./views.ts";

/**
 * What the usage routes are handed: each builds a service for one request.
 * The worker's composition root (src/services.ts) implements it.
 */
export interface UsageRouteServices {
  usageViewService(c: Context<AppEnv>): UsageViewService;
  usageIngestionService(c: Context<AppEnv>): UsageIngestionService;
  usageDeadLetterService(c: Context<AppEnv>): UsageDeadLetterService;
}
