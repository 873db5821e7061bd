import { inList } from "@edge-platform/shared/db/in-list";
import { eq, inArray } from "drizzle-orm";
import type { DrizzleD1Database } from "drizzle-orm/d1";
import { knowledgeChunks } from "./schema.ts";

export type ChunkRow = typeof knowledgeChunks.$inferSelect;

/** Id, hash and model of every stored chunk of the given sources (for diffing an ingest). */
export async function chunkDigestsBySources(db: DrizzleD1Database, sources: string[]) {
  if (sources.length === 0) return [];
  return db
    .select({
      id: knowledgeChunks.id,
      contentHash: knowledgeChunks.contentHash,
      embeddingModel: knowledgeChunks.embeddingModel,
    })
    .from(knowledgeChunks)
    .where(inArray(knowledgeChunks.source, sources));
}

export async function chunksByIds(db: DrizzleD1Database, ids: string[]): Promise<ChunkRow[]> {
  if (ids.length === 0) return [];
  return db.select().from(knowledgeChunks).where(inList(knowledgeChunks.id, ids));
}

/** Upserts changed chunks and deletes removed ones in one atomic batch. */
export async function applyChunkChanges(
  db: DrizzleD1Database,
  upserts: (typeof knowledgeChunks.$inferInsert)[],
  deletedIds: string[],
  extra: Parameters<DrizzleD1Database["batch"]>[0][number][] = [],
): Promise<void> {
  const statements = [
    ...deletedIds.map((id) => db.delete(knowledgeChunks).where(eq(knowledgeChunks.id, id))),
    ...upserts.map((row) =>
      db
        .insert(knowledgeChunks)
        .values(row)
        .onConflictDoUpdate({
          target: knowledgeChunks.id,
          set: {
            source: row.source,
            sourceId: row.sourceId,
            itemId: row.itemId,
            title: row.title,
            chunkIndex: row.chunkIndex,
            content: row.content,
            contentHash: row.contentHash,
            embeddingModel: row.embeddingModel,
            updatedAt: row.updatedAt,
          },
        }),
    ),
    ...extra,
  ];
  if (statements.length === 0) return;
  await db.batch(statements as [(typeof statements)[number], ...(typeof statements)[number][]]);
}

export async function countChunks(db: DrizzleD1Database): Promise<number> {
  const rows = await db.select({ id: knowledgeChunks.id }).from(knowledgeChunks);
  return rows.length;
}
