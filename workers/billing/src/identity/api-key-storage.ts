import { type Database, nowIso } from "@edge-platform/shared/db/client";
import { apiKeys } from "@edge-platform/shared/db/schema/identity";
import { and, count, desc, eq, ne } from "drizzle-orm";

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
