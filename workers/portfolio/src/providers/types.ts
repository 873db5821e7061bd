/**
 * The provider interfaces the pipeline depends on. Production binds them to
 * Workers AI and Vectorize; local development and tests use the lexical
 * embedder, the D1 vector index and the extractive responder.
 */

export type EmbeddingKind = "query" | "document";

export interface Embedder {
  /** Stored with every vector, so vectors from different models are never compared. */
  readonly model: string;
  embed(texts: string[], kind: EmbeddingKind): Promise<number[][]>;
}

export interface VectorRecord {
  id: string;
  vector: number[];
  source: string;
}

export interface VectorMatch {
  id: string;
  similarity: number;
}

export interface VectorIndex {
  upsert(records: VectorRecord[], model: string): Promise<void>;
  deleteByIds(ids: string[]): Promise<void>;
  query(vector: number[], topK: number, model: string): Promise<VectorMatch[]>;
}

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface Generator {
  readonly name: string;
  /** Streams the answer as text deltas; throws when the provider fails. */
  stream(messages: ChatMessage[]): AsyncIterable<string>;
}
