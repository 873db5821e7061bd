import type { Context } from "hono";
import type { AppEnv } from "../platform/index.ts";
import type { ApiKeyService } from "./api-key-service.ts";
import type { SessionService } from "./session-service.ts";
import type { TenantService } from "./tenant-service.ts";
import type { UserService } from "./user-service.ts";

/**
 * What the identity routes are handed: each builds a service for one request.
 * The worker's composition root (src/services.ts) implements it.
 */
export interface IdentityRouteServices {
  sessionService(c: Context<AppEnv>): SessionService;
  userService(c: Context<AppEnv>): UserService;
  tenantService(c: Context<AppEnv>): TenantService;
  apiKeyService(c: Context<AppEnv>): ApiKeyService;
}
