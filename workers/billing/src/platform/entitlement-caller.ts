import type { tenantStatuses } from "@edge-platform/shared/db/schema/identity";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { ApiKeyRow } from "./access-storage.ts";
import { authenticateApiKey } from "./api-key.ts";
import type { AppEnv } from "./app-env.ts";
import { authenticate, bearerToken } from "./auth.ts";
import { API_KEY_MARKER } from "./domain/api-key.ts";
import { tenantContext } from "./tenant.ts";

/** The tenant a check or consume is for, from the member's x-tenant-id or the API key. */
export interface CallerTenant {
  id: string;
  status: (typeof tenantStatuses)[number];
}

/**
 * Entitlement checks come from two kinds of caller: a tenant's server with
 * its API key (the usual case; the key decides the tenant), or a signed-in
 * member with `x-tenant-id` (any role). The bearer's form decides which.
 */
export function memberOrApiKey() {
  const byKey = authenticateApiKey();
  const byUser = authenticate();
  const inTenant = tenantContext();
  return createMiddleware<AppEnv>(async (c, next) => {
    if (bearerToken(c)?.startsWith(API_KEY_MARKER)) {
      await byKey(c, next);
      return;
    }
    await byUser(c, async () => {
      await inTenant(c, next);
    });
  });
}

/** The tenant of the request, whichever way the caller authenticated. */
export function callerTenant(c: Context<AppEnv>): CallerTenant {
  const key = c.get("apiKey") as ApiKeyRow | undefined;
  // The API-key middleware only lets keys of ACTIVE tenants through.
  if (key) return { id: key.tenantId, status: "ACTIVE" };
  const { tenant } = c.var.tenantContext;
  return { id: tenant.id, status: tenant.status };
}
