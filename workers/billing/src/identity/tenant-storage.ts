import { type Database, nowIso } from "@edge-platform/shared/db/client";
import { apiKeys, memberships, tenants, users } from "@edge-platform/shared/db/schema/identity";
import { and, count, desc, eq, ne, sql } from "drizzle-orm";
import type { MembershipRole } from "../platform/index.ts";

export function insertTenant(
  db: Database,
  tenant: { id: string; name: string; slug: string; metadata?: Record<string, unknown> },
) {
  return db.insert(tenants).values(tenant);
}

export function insertMembership(
  db: Database,
  membership: { id: string; userId: string; tenantId: string; role: MembershipRole },
) {
  return db.insert(memberships).values(membership);
}

export function findTenantBySlug(db: Database, slug: string) {
  return db.select().from(tenants).where(eq(tenants.slug, slug)).get();
}

export async function listTenantsOfUser(
  db: Database,
  userId: string,
  offset: number,
  limit: number,
) {
  const [rows, totals] = await db.batch([
    db
      .select({ tenant: tenants, role: memberships.role })
      .from(memberships)
      .innerJoin(tenants, eq(tenants.id, memberships.tenantId))
      .where(eq(memberships.userId, userId))
      .orderBy(desc(memberships.createdAt), desc(memberships.id))
      .limit(limit)
      .offset(offset),
    db.select({ total: count() }).from(memberships).where(eq(memberships.userId, userId)),
  ]);
  return { rows, total: totals[0]?.total ?? 0 };
}

export function updateTenant(
  db: Database,
  id: string,
  changes: { name?: string; metadata?: Record<string, unknown> },
) {
  return db
    .update(tenants)
    .set({ ...changes, updatedAt: nowIso() })
    .where(eq(tenants.id, id))
    .returning();
}

/**
 * Statements that close a tenant: CANCELLED, and every API key revoked.
 * Other modules holding tenant-scoped state that must freeze with it (for
 * example subscriptions) add their statements to the same batch through
 * `tenantCancellationHooks` in identity/tenant-service.ts.
 */
export function cancelTenantStatements(db: Database, tenantId: string, now: string) {
  return [
    db
      .update(tenants)
      .set({ status: "CANCELLED", updatedAt: now })
      .where(and(eq(tenants.id, tenantId), ne(tenants.status, "CANCELLED"))),
    db
      .update(apiKeys)
      .set({ status: "REVOKED", revokedAt: now })
      .where(and(eq(apiKeys.tenantId, tenantId), ne(apiKeys.status, "REVOKED"))),
  ] as const;
}

export function listMembers(db: Database, tenantId: string) {
  return db
    .select({
      userId: users.id,
      email: users.email,
      firstName: users.firstName,
      lastName: users.lastName,
      role: memberships.role,
      joinedAt: memberships.createdAt,
    })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(eq(memberships.tenantId, tenantId))
    .orderBy(memberships.createdAt, memberships.id)
    .all();
}

export function findMembership(db: Database, tenantId: string, userId: string) {
  return db
    .select()
    .from(memberships)
    .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)))
    .get();
}

/**
 * "Some other OWNER remains", evaluated inside the write itself, so two
 * owners demoting each other at once cannot leave the tenant ownerless.
 */
const anotherOwnerRemains = (tenantId: string, userId: string) => sql`(
  ${memberships.role} <> 'OWNER' OR EXISTS (
    SELECT 1 FROM memberships AS others
    WHERE others.tenant_id = ${tenantId} AND others.user_id <> ${userId} AND others.role = 'OWNER'))`;

export function changeMemberRole(
  db: Database,
  tenantId: string,
  userId: string,
  role: MembershipRole,
) {
  const demotion = role === "OWNER" ? sql`1 = 1` : anotherOwnerRemains(tenantId, userId);
  return db
    .update(memberships)
    .set({ role, updatedAt: nowIso() })
    .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId), demotion))
    .returning();
}

export function removeMember(db: Database, tenantId: string, userId: string) {
  return db
    .delete(memberships)
    .where(
      and(
        eq(memberships.tenantId, tenantId),
        eq(memberships.userId, userId),
        anotherOwnerRemains(tenantId, userId),
      ),
    )
    .returning();
}

/** Every tenant, newest first, optionally those whose name or slug contains `search`. */
export async function listAllTenants(
  db: Database,
  search: string | undefined,
  offset: number,
  limit: number,
) {
  const pattern = search ? `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : undefined;
  const where = pattern
    ? sql`(${tenants.name} LIKE ${pattern} ESCAPE '\\' OR ${tenants.slug} LIKE ${pattern} ESCAPE '\\')`
    : undefined;
  const [rows, totals] = await db.batch([
    db
      .select()
      .from(tenants)
      .where(where)
      .orderBy(desc(tenants.createdAt), desc(tenants.id))
      .limit(limit)
      .offset(offset),
    db.select({ total: count() }).from(tenants).where(where),
  ]);
  return { rows, total: totals[0]?.total ?? 0 };
}
