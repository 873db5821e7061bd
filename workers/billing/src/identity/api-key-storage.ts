import { type Database, nowIso } from "@edge-platform/shared/db/client";
import { apiKeys, tenants } from "@edge-platform/shared/db/schema/identity";
import { and, count, desc, eq, isNull, lt, ne, or } from "drizzle-orm";

export type ApiKeyRow = typeof apiKeys.$inferSelect;

export function insertApiKey(db: Database, row: typeof apiKeys.$inferInsert) {
  return db.insert(apiKeys).values(row).returning();
}

export async function listApiKeys(db: Database, tenantId: string, offset: number, limit: number) {
  const [rows, totals] = await db.batch([
    db
      .select()
      .from(apiKeys)
      .where(eq(apiKeys.tenantId, tenantId))
      .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id))
      .limit(limit)
      .offset(offset),
    db.select({ total: count() }).from(apiKeys).where(eq(apiKeys.tenantId, tenantId)),
  ]);
  return { rows, total: totals[0]?.total ?? 0 };
}

export function findApiKeyInTenant(db: Database, tenantId: string, id: string) {
  return db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.id, id), eq(apiKeys.tenantId, tenantId)))
    .get();
}

/** Revokes only a key of this tenant that is not revoked yet; undefined otherwise. */
export function revokeApiKey(db: Database, tenantId: string, id: string) {
  return db
    .update(apiKeys)
    .set({ status: "REVOKED", revokedAt: nowIso() })
    .where(and(eq(apiKeys.id, id), eq(apiKeys.tenantId, tenantId), ne(apiKeys.status, "REVOKED")))
    .returning();
}

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
