import type { Database } from "@edge-platform/shared/db/client";
import { apiKeys, memberships, tenants, users } from "@edge-platform/shared/db/schema/identity";
import { and, eq, isNull, lt, or } from "drizzle-orm";

/**
 * The reads that authenticate a caller and resolve its tenant: every request
 * makes them, so they live with the middleware; identity/ owns the rest of
 * these tables' storage.
 */
export type UserRow = typeof users.$inferSelect;

export function findUserById(db: Database, id: string) {
  return db.select().from(users).where(eq(users.id, id)).get();
}

export type TenantRow = typeof tenants.$inferSelect;

export type MembershipRow = typeof memberships.$inferSelect;

export function findTenantById(db: Database, id: string) {
  return db.select().from(tenants).where(eq(tenants.id, id)).get();
}

/** The caller's membership in a tenant, with the tenant, in one read. */
export function findMembershipWithTenant(db: Database, userId: string, tenantId: string) {
  return db
    .select({ tenant: tenants, role: memberships.role })
    .from(memberships)
    .innerJoin(tenants, eq(tenants.id, memberships.tenantId))
    .where(and(eq(memberships.userId, userId), eq(memberships.tenantId, tenantId)))
    .get();
}

export type ApiKeyRow = typeof apiKeys.$inferSelect;

export function findApiKeyByHash(db: Database, keyHash: string) {
  return db
    .select({ key: apiKeys, tenantStatus: tenants.status })
    .from(apiKeys)
    .innerJoin(tenants, eq(tenants.id, apiKeys.tenantId))
    .where(eq(apiKeys.keyHash, keyHash))
    .get();
}

/** The stored hashes of every key of a tenant (to evict them from caches). */
export async function listApiKeyHashesOfTenant(db: Database, tenantId: string): Promise<string[]> {
  const rows = await db
    .select({ keyHash: apiKeys.keyHash })
    .from(apiKeys)
    .where(eq(apiKeys.tenantId, tenantId))
    .all();
  return rows.map((row) => row.keyHash);
}

/** At most one write per key per minute, however busy the key is. */
export function touchApiKey(db: Database, id: string, now: Date) {
  const staleBefore = new Date(now.getTime() - 60_000).toISOString();
  return db
    .update(apiKeys)
    .set({ lastUsedAt: now.toISOString() })
    .where(
      and(eq(apiKeys.id, id), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, staleBefore))),
    );
}
