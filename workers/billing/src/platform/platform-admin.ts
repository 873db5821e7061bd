import { ApiError } from "@edge-platform/shared/http/api-error";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "./app-env.ts";
import { authenticate, bearerToken } from "./auth.ts";
import { API_KEY_MARKER } from "./domain/api-key.ts";

export const PLATFORM_ADMIN_REQUIRED = "Platform admin access required";

/**
 * The global catalog is rewritten only by platform administrators (a user
 * flag, not a tenant role: an OWNER of some tenant is not one). Runs after
 * `authenticate()`.
 */
export function requirePlatformAdmin() {
  return createMiddleware<AppEnv>(async (c, next) => {
    if (!c.var.user.isPlatformAdmin) throw new ApiError(403, PLATFORM_ADMIN_REQUIRED);
    await next();
  });
}

/**
 * For public routes that show platform admins more: authenticates when an
 * access token is presented (a bad one is still a 401), and lets anonymous
 * callers, and servers presenting their API key, through as anonymous.
 */
export function optionalAuthentication() {
  const required = authenticate();
  return createMiddleware<AppEnv>(async (c, next) => {
    const token = bearerToken(c);
    if (!c.req.header("authorization") || token?.startsWith(API_KEY_MARKER)) {
      await next();
      return;
    }
    await required(c, next);
  });
}

export function isPlatformAdmin(c: { get(key: "user"): unknown }): boolean {
  const user = c.get("user") as { isPlatformAdmin?: boolean } | undefined;
  return user?.isPlatformAdmin === true;
}
