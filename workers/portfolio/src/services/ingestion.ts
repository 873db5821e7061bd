import type { DrizzleD1Database } from "drizzle-orm/d1";
import { invalidateAll } from "../db/cache.ts";
import { applyChunkChanges, chunkDigestsBySources } from "../db/chunks.ts";
import { writeStateStatement } from "../db/content-state.ts";
import { type Chunk, chunkDocument } from "../domain/chunking.ts";
import type { PortfolioContent } from "../domain/content.ts";
import { buildDocuments, SOURCE_KINDS, type SourceKind } from "../domain/documents.ts";
import { sha256Hex } from "../domain/hashing.ts";
import { vocabularyFromContent } from "../domain/portfolio-vocabulary.ts";
import type { Embedder, VectorIndex } from "../providers/types.ts";
import { VOCABULARY_STATE_KEY } from "./portfolio-vocabulary-store.ts";

export interface IngestDeps {
  db: DrizzleD1Database;
  embedder: Embedder;
  index: VectorIndex;
  chunking: { size: number; overlap: number };
  now: () => number;
}

export interface IngestResult {
  /** Chunks the content now consists of. */
  chunks_ingested: number;
  /** Of those, new or changed (embedded and written this time). */
  chunks_embedded: number;
  chunks_unchanged: number;
  /** Chunks whose source document is gone. */
  chunks_removed: number;
  sources: Record<SourceKind, number>;
}

// Vectorize ids are limited to 64 bytes; long CMS ids are hashed.
async function chunkId(chunk: Chunk): Promise<string> {
  const readable = `${chunk.sourceId}:${chunk.chunkIndex}`;
  if (new TextEncoder().encode(readable).length <= 64) return readable;
  return `h:${(await sha256Hex(chunk.sourceId)).slice(0, 40)}:${chunk.chunkIndex}`;
}

/**
 * Brings the stored chunks in line with `content`: upserts by chunk id
 * (source id + position), re-embedding only chunks whose text or embedding
 * model changed, and removes chunks whose source document is gone. The D1
 * rows change in one batch; vectors are written before it and stale ones
 * deleted after, so a search never meets a row without its vector.
 */
export async function ingestContent(
  deps: IngestDeps,
  content: PortfolioContent,
  stateMarker?: { key: string; value: string },
): Promise<IngestResult> {
  const { db, embedder, index } = deps;
  const chunks = buildDocuments(content).flatMap((doc) =>
    chunkDocument(doc, deps.chunking.size, deps.chunking.overlap),
  );
  const prepared = await Promise.all(
    chunks.map(async (chunk) => ({
      chunk,
      id: await chunkId(chunk),
      hash: await sha256Hex(chunk.content),
    })),
  );
  const existing = new Map(
    (await chunkDigestsBySources(db, [...SOURCE_KINDS])).map((row) => [row.id, row]),
  );
  const changed = prepared.filter(({ id, hash }) => {
    const stored = existing.get(id);
    return !stored || stored.contentHash !== hash || stored.embeddingModel !== embedder.model;
  });
  const keep = new Set(prepared.map(({ id }) => id));
  const removed = [...existing.keys()].filter((id) => !keep.has(id));

  const vectors = changed.length
    ? await embedder.embed(
        changed.map(({ chunk }) => chunk.content),
        "document",
      )
    : [];
  await index.upsert(
    changed.map(({ id, chunk }, i) => ({ id, vector: vectors[i]!, source: chunk.source })),
    embedder.model,
  );
  const at = deps.now();
  await applyChunkChanges(
    db,
    changed.map(({ id, chunk, hash }) => ({
      id,
      source: chunk.source,
      sourceId: chunk.sourceId,
      itemId: chunk.itemId,
      title: chunk.title,
      chunkIndex: chunk.chunkIndex,
      content: chunk.content,
      contentHash: hash,
      embeddingModel: embedder.model,
      createdAt: at,
      updatedAt: at,
    })),
    removed,
    [
      // The safety screen's picture of what the portfolio is about changes with the chunks.
      writeStateStatement(
        db,
        VOCABULARY_STATE_KEY,
        JSON.stringify(vocabularyFromContent(content)),
        at,
      ),
      ...(stateMarker ? [writeStateStatement(db, stateMarker.key, stateMarker.value, at)] : []),
    ],
  );
  await index.deleteByIds(removed);

  const sources = Object.fromEntries(SOURCE_KINDS.map((kind) => [kind, 0])) as Record<
    SourceKind,
    number
  >;
  for (const { chunk } of prepared) sources[chunk.source] += 1;
  return {
    chunks_ingested: prepared.length,
    chunks_embedded: changed.length,
    chunks_unchanged: prepared.length - changed.length,
    chunks_removed: removed.length,
    sources,
  };
}

/** The webhook's order: invalidate the whole response cache first, then re-ingest. */
export async function invalidateThenIngest(
  deps: IngestDeps,
  load: () => Promise<PortfolioContent>,
  stateMarker?: { key: string; value: string },
): Promise<IngestResult & { cache_invalidated: number }> {
  const cacheInvalidated = await invalidateAll(deps.db, deps.now());
  const content = await load();
  const result = await ingestContent(deps, content, stateMarker);
  return { ...result, cache_invalidated: cacheInvalidated };
}
