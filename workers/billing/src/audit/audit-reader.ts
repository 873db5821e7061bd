import { database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../platform/index.ts";
import {
  findMembershipWithTenant,
  findTenantById,
  MANAGERS,
  roleRequirementMessage,
  TENANT_HEADER,
  UUID_PATTERN,
} from "../platform/index.ts";

/**
 * Who reads the audit trail: a tenant's OWNER or ADMIN, their tenant's
 * events (`x-tenant-id`); a platform administrator, any tenant's (with the
 * header) or all (without). Anyone else: 403. Runs after `authenticate()`.
 */
export function auditReader() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const header = c.req.header(TENANT_HEADER)?.trim();
    const admin = c.var.user.isPlatformAdmin;
    if (!header) {
      if (!admin)
        throw new ApiError(403, "x-tenant-id is required unless you are a platform admin");
      c.set("auditScope", { tenantId: null });
      return next();
    }
    if (!UUID_PATTERN.test(header)) throw new ApiError(400, "x-tenant-id must be a valid UUID");
    const tenantId = header.toLowerCase();
    const db = database(c.env.DB);
    if (admin) {
      if (!(await findTenantById(db, tenantId))) {
        throw new ApiError(404, `Tenant with ID "${tenantId}" not found`);
      }
    } else {
      const found = await findMembershipWithTenant(db, c.var.user.id, tenantId);
      if (!found) throw new ApiError(403, "You do not have access to this tenant");
      if (!MANAGERS.includes(found.role)) throw new ApiError(403, roleRequirementMessage(MANAGERS));
    }
    c.set("auditScope", { tenantId });
    await next();
  });
}
