import { database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { createMiddleware } from "hono/factory";
import { findMembershipWithTenant, findTenantById } from "./access-storage.ts";
import type { AppEnv } from "./app-env.ts";
import { authenticate } from "./auth.ts";
import {
  type MembershipRole,
  mayManageWebhooks,
  mayReadMoney,
  maySettle,
  roleRequirementMessage,
  SETTLEMENT_REQUIRES_PLATFORM_ADMIN,
  WEBHOOK_MANAGERS,
} from "./domain/roles.ts";
import { TENANT_HEADER, UUID_PATTERN } from "./tenant-header.ts";

/**
 * Resolves `x-tenant-id` for an authenticated user: 400 when the header is
 * missing or not a UUID, 403 unless the caller is a member. Runs after
 * `authenticate()`.
 */
function tenantHeader(c: { req: { header(name: string): string | undefined } }): string {
  const header = c.req.header(TENANT_HEADER)?.trim();
  if (!header) throw new ApiError(400, "x-tenant-id header is required");
  if (!UUID_PATTERN.test(header)) throw new ApiError(400, "x-tenant-id must be a valid UUID");
  return header.toLowerCase();
}

export function tenantContext() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const found = await findMembershipWithTenant(
      database(c.env.DB),
      c.var.user.id,
      tenantHeader(c),
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
function refuseUnlessActive(status: string) {
  if (status !== "ACTIVE") {
    throw new ApiError(403, `Tenant is ${status.toLowerCase()}: it can be read but not changed`);
  }
}

/** For routes that change something of the `x-tenant-id` tenant (after `tenantContext()`). */
export function requireWritableTenant() {
  return createMiddleware<AppEnv>(async (c, next) => {
    refuseUnlessActive(c.var.tenantContext.tenant.status);
    await next();
  });
}

/** The same after `billingContext()`: platform administrators are refused too. */
export function requireWritableBillingTenant() {
  return createMiddleware<AppEnv>(async (c, next) => {
    refuseUnlessActive(c.var.billingContext.tenant.status);
    await next();
  });
}

/** A route's middleware for signed-in members of the `x-tenant-id` tenant holding one of `roles`. */
export function tenantMembers(...roles: MembershipRole[]) {
  return [authenticate(), tenantContext(), requireRole(...roles)];
}

/** The same for routes that change something: the tenant must also be ACTIVE. */
export function tenantWriters(...roles: MembershipRole[]) {
  return [...tenantMembers(...roles), requireWritableTenant()];
}

/**
 * The money routes' tenant: members as `tenantContext()` resolves them, and
 * platform administrators for any tenant (member or not; 404 when the
 * tenant does not exist). Runs after `authenticate()`.
 */
export function billingContext() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const tenantId = tenantHeader(c);
    const db = database(c.env.DB);
    const platformAdmin = c.var.user.isPlatformAdmin === true;
    const found = await findMembershipWithTenant(db, c.var.user.id, tenantId);
    if (found) {
      c.set("billingContext", { tenant: found.tenant, role: found.role, platformAdmin });
    } else if (platformAdmin) {
      const tenant = await findTenantById(db, tenantId);
      if (!tenant) throw new ApiError(404, `Tenant with ID "${tenantId}" not found`);
      c.set("billingContext", { tenant, role: null, platformAdmin });
    } else {
      throw new ApiError(403, "You do not have access to this tenant");
    }
    await next();
  });
}

/** Reading invoices, ledger, balance and payments: OWNER, ADMIN, BILLING, or a platform administrator. */
export function requireMoneyReader() {
  return createMiddleware<AppEnv>(async (c, next) => {
    if (!mayReadMoney(c.var.billingContext)) {
      throw new ApiError(403, roleRequirementMessage(["OWNER", "ADMIN", "BILLING"]));
    }
    await next();
  });
}

/** Generating, finalizing, voiding and marking invoices paid: platform administrators only. */
export function requireSettlementActor() {
  return createMiddleware<AppEnv>(async (c, next) => {
    if (!maySettle(c.var.billingContext))
      throw new ApiError(403, SETTLEMENT_REQUIRES_PLATFORM_ADMIN);
    await next();
  });
}

/**
 * Changing webhook endpoints: OWNER, ADMIN or a platform administrator, on
 * an ACTIVE tenant (a suspended or cancelled one stays readable).
 */
export function requireWebhookManager() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const context = c.var.billingContext;
    if (!mayManageWebhooks(context)) {
      throw new ApiError(403, roleRequirementMessage([...WEBHOOK_MANAGERS]));
    }
    if (context.tenant.status !== "ACTIVE") {
      throw new ApiError(
        403,
        `Tenant is ${context.tenant.status.toLowerCase()}: it can be read but not changed`,
      );
    }
    await next();
  });
}

/** A money route's readers: members with OWNER, ADMIN or BILLING, and platform administrators. */
export function moneyReaders() {
  return [authenticate(), billingContext(), requireMoneyReader()];
}
