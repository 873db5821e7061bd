import { database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../app-env.ts";
import { findMembershipWithTenant } from "../db/tenants.ts";
import { type MembershipRole, roleRequirementMessage } from "../domain/roles.ts";

export const TENANT_HEADER = "x-tenant-id";
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Resolves `x-tenant-id` for an authenticated user: 400 when the header is
 * missing or not a UUID, 403 unless the caller is a member. Runs after
 * `authenticate()`.
 */
export function tenantContext() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const header = c.req.header(TENANT_HEADER)?.trim();
    if (!header) throw new ApiError(400, "x-tenant-id header is required");
    if (!UUID_PATTERN.test(header)) throw new ApiError(400, "x-tenant-id must be a valid UUID");
    const found = await findMembershipWithTenant(
      database(c.env.DB),
      c.var.user.id,
      header.toLowerCase(),
    );
    if (!found) throw new ApiError(403, "You do not have access to this tenant");
    c.set("tenantContext", { tenant: found.tenant, role: found.role });
    await next();
  });
}

export function requireRole(...roles: MembershipRole[]) {
  return createMiddleware<AppEnv>(async (c, next) => {
    if (!roles.includes(c.var.tenantContext.role)) {
      throw new ApiError(403, roleRequirementMessage(roles));
    }
    await next();
  });
}

/** A SUSPENDED or CANCELLED tenant stays readable but accepts no changes. */
export function requireWritableTenant() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const { status } = c.var.tenantContext.tenant;
    if (status !== "ACTIVE") {
      throw new ApiError(403, `Tenant is ${status.toLowerCase()}: it can be read but not changed`);
    }
    await next();
  });
}
