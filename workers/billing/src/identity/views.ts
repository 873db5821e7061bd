import type { ApiKeyRow, MembershipRole, TenantRow, UserRow } from "../platform/index.ts";
import { effectiveApiKeyStatus } from "../platform/index.ts";

/** What the API shows of a user to themselves and to people sharing a tenant with them. */
export function safeUser(user: UserRow) {
  return {
    id: user.id,
    email: user.email,
    firstName: user.firstName,
    lastName: user.lastName,
    isActive: user.isActive,
    isPlatformAdmin: user.isPlatformAdmin,
    createdAt: user.createdAt,
    updatedAt: user.updatedAt,
  };
}

/** What anyone signed in may see of a user they share no tenant with. */
export function publicProfile(user: UserRow) {
  return { id: user.id, firstName: user.firstName, lastName: user.lastName };
}

export function sessionUser(user: UserRow) {
  return { id: user.id, email: user.email, firstName: user.firstName, lastName: user.lastName };
}

export function tenantView(tenant: TenantRow) {
  return {
    id: tenant.id,
    name: tenant.name,
    slug: tenant.slug,
    status: tenant.status,
    metadata: tenant.metadata,
    createdAt: tenant.createdAt,
    updatedAt: tenant.updatedAt,
  };
}

export function tenantWithRole(tenant: TenantRow, role: MembershipRole) {
  return { ...tenantView(tenant), role };
}

export function apiKeyView(key: ApiKeyRow, now: Date = new Date()) {
  return {
    id: key.id,
    name: key.name,
    prefix: key.keyPrefix,
    status: effectiveApiKeyStatus(key.status, key.expiresAt, now),
    expiresAt: key.expiresAt,
    lastUsedAt: key.lastUsedAt,
    revokedAt: key.revokedAt,
    createdByUserId: key.createdByUserId,
    createdAt: key.createdAt,
  };
}
