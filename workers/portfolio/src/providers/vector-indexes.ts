import { cosine, decodeVector, encodeVector } from "../domain/vectors.ts";
import type { VectorIndex, VectorMatch, VectorRecord } from "./types.ts";

/**
 * Vectors kept in D1 with an exact cosine scan: the local stand-in for
 * Vectorize, which has no local mode. A portfolio has tens to a few hundred
 * chunks, so a scan is a few milliseconds.
 */
export class D1VectorIndex implements VectorIndex {
  constructor(private readonly db: D1Database) {}

  async upsert(records: VectorRecord[], model: string): Promise<void> {
    if (records.length === 0) return;
    const now = Date.now();
    await this.db.batch(
      records.map((record) =>
        this.db
          .prepare(
            `INSERT INTO chunk_vectors (id, source, model, vector, updated_at) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT(id) DO UPDATE SET source = excluded.source, model = excluded.model,
               vector = excluded.vector, updated_at = excluded.updated_at`,
          )
          .bind(record.id, record.source, model, encodeVector(record.vector), now),
      ),
    );
  }

  async deleteByIds(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.batch(
      ids.map((id) => this.db.prepare("DELETE FROM chunk_vectors WHERE id = ?").bind(id)),
    );
  }

  async query(vector: number[], topK: number, model: string): Promise<VectorMatch[]> {
    const { results } = await this.db
      .prepare("SELECT id, vector FROM chunk_vectors WHERE model = ?")
      .bind(model)
      .all<{ id: string; vector: unknown }>();
    return results
      .map((row) => ({ id: row.id, similarity: cosine(vector, decodeVector(row.vector)) }))
      .sort((a, b) => b.similarity - a.similarity)
      .slice(0, topK);
  }
}

/** The slice of the Vectorize binding this service uses. */
export interface VectorizeLike {
  upsert(
    vectors: { id: string; values: number[]; metadata?: Record<string, string> }[],
  ): Promise<unknown>;
  deleteByIds(ids: string[]): Promise<unknown>;
  query(
    vector: number[],
    options: { topK: number; returnMetadata?: "none" | "indexed" | "all"; returnValues?: boolean },
  ): Promise<{ matches: { id: string; score: number }[] }>;
}

// Vectorize accepts at most 1,000 vectors per upsert and 100 results per query without values.
const VECTORIZE_BATCH = 1000;
const VECTORIZE_MAX_TOP_K = 100;

/** Production: Vectorize (cosine metric, dimensions of the embedding model). */
export class VectorizeIndex implements VectorIndex {
  constructor(private readonly index: VectorizeLike) {}

  async upsert(records: VectorRecord[], model: string): Promise<void> {
    for (let i = 0; i < records.length; i += VECTORIZE_BATCH) {
      await this.index.upsert(
        records.slice(i, i + VECTORIZE_BATCH).map((record) => ({
          id: record.id,
          values: record.vector,
          metadata: { source: record.source, model },
        })),
      );
    }
  }

  async deleteByIds(ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += VECTORIZE_BATCH)
      await this.index.deleteByIds(ids.slice(i, i + VECTORIZE_BATCH));
  }

  async query(vector: number[], topK: number): Promise<VectorMatch[]> {
    const { matches } = await this.index.query(vector, {
      topK: Math.min(topK, VECTORIZE_MAX_TOP_K),
      returnMetadata: "none",
      returnValues: false,
    });
    return matches.map((match) => ({ id: match.id, similarity: match.score }));
  }
}
