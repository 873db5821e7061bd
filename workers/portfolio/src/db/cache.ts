import { and, desc, eq, gt, isNull, sql } from "drizzle-orm";
import type { DrizzleD1Database } from "drizzle-orm/d1";
import { responseCache } from "./schema.ts";

export type CacheRow = typeof responseCache.$inferSelect;

const valid = (since: number) =>
  and(isNull(responseCache.invalidatedAt), gt(responseCache.createdAt, since));

export async function findExact(
  db: DrizzleD1Database,
  questionKey: string,
  since: number,
): Promise<CacheRow | undefined> {
  const [row] = await db
    .select()
    .from(responseCache)
    .where(and(eq(responseCache.questionKey, questionKey), valid(since)))
    .orderBy(desc(responseCache.createdAt))
    .limit(1);
  return row;
}

/** Valid entries embedded with `model`, newest first (the semantic scan's candidates). */
export async function semanticCandidates(
  db: DrizzleD1Database,
  model: string,
  since: number,
  limit: number,
): Promise<CacheRow[]> {
  return db
    .select()
    .from(responseCache)
    .where(and(eq(responseCache.embeddingModel, model), valid(since)))
    .orderBy(desc(responseCache.createdAt))
    .limit(limit);
}

export async function recordHit(db: DrizzleD1Database, id: string): Promise<void> {
  await db
    .update(responseCache)
    .set({ hitCount: sql`${responseCache.hitCount} + 1` })
    .where(eq(responseCache.id, id));
}

export async function storeEntry(
  db: DrizzleD1Database,
  entry: typeof responseCache.$inferInsert,
): Promise<void> {
  await db.insert(responseCache).values(entry);
}

/** Invalidates every valid entry; returns how many there were. */
export async function invalidateAll(db: DrizzleD1Database, at: number): Promise<number> {
  const rows = await db
    .update(responseCache)
    .set({ invalidatedAt: at })
    .where(isNull(responseCache.invalidatedAt))
    .returning({ id: responseCache.id });
  return rows.length;
}
