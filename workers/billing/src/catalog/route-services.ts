import type { Context } from "hono";
import type { AppEnv } from "../platform/index.ts";
import type { FeatureService } from "./feature-service.ts";
import type { PlanEntitlementService } from "./plan-entitlement-service.ts";
import type { PlanService } from "./plan-service.ts";

/**
 * What the catalog routes are handed: each builds a service for one request.
 * The worker's composition root (src/services.ts) implements it.
 */
export interface CatalogRouteServices {
  planService(c: Context<AppEnv>): PlanService;
  featureService(c: Context<AppEnv>): FeatureService;
  planEntitlementService(c: Context<AppEnv>): PlanEntitlementService;
}
