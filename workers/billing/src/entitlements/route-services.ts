import type { Context } from "hono";
import type { AppEnv } from "../platform/index.ts";
import type { EntitlementService } from "./service.ts";

/**
 * What the entitlements routes are handed: each builds a service for one request.
 * The worker's composition root (src/services.ts) implements it.
 */
export interface EntitlementRouteServices {
  entitlementService(c: Context<AppEnv>): EntitlementService;
}
