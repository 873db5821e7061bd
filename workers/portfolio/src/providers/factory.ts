import { drizzle } from "drizzle-orm/d1";
import { AVERY_QUINN_PORTFOLIO } from "../content/avery-quinn.ts";
import { chunkDocument } from "../domain/chunking.ts";
import { buildDocuments } from "../domain/documents.ts";
import type { Settings } from "../domain/settings.ts";
import { DevContentSource, type HttpClient, SanityContentSource } from "./content-sources.ts";
import { ExtractiveResponder } from "./extractive-responder.ts";
import { LexicalEmbedder } from "./lexical-embedder.ts";
import type { Embedder, Generator, VectorIndex } from "./types.ts";
import { D1VectorIndex, VectorizeIndex, type VectorizeLike } from "./vector-indexes.ts";
import { type AiRunner, WorkersAiEmbedder, WorkersAiGenerator } from "./workers-ai.ts";

/**
 * The bindings providers are chosen from. AI and VECTORIZE exist only in
 * `[env.production]` (they have no local mode); CMS_HTTP optionally routes
 * CMS requests through a service binding instead of the public internet.
 */
export interface ProviderBindings {
  DB?: D1Database;
  AI?: AiRunner;
  VECTORIZE?: VectorizeLike;
  CMS_HTTP?: HttpClient;
}

export interface Providers {
  embedder: Embedder;
  index: VectorIndex;
  generator: Generator;
  /** "workers-ai" when the AI binding is present, otherwise "local". */
  mode: "workers-ai" | "local";
}

/**
 * Production: Workers AI embeddings and generation with Vectorize.
 * Development mode always uses the local providers (no tokens spent), as
 * does any configuration without the AI binding. An AI binding without
 * Vectorize keeps vectors in D1.
 */
export function selectProviders(
  bindings: ProviderBindings,
  settings: Settings,
  db: D1Database,
): Providers {
  if (bindings.AI && !settings.devMode) {
    return {
      mode: "workers-ai",
      embedder: new WorkersAiEmbedder(bindings.AI, settings.embeddingModel),
      index: bindings.VECTORIZE ? new VectorizeIndex(bindings.VECTORIZE) : new D1VectorIndex(db),
      generator: new WorkersAiGenerator(
        bindings.AI,
        settings.generation.model,
        settings.generation,
      ),
    };
  }
  return {
    mode: "local",
    embedder: new LexicalEmbedder(),
    index: new D1VectorIndex(db),
    generator: new ExtractiveResponder(settings.persona),
  };
}

export function contentSourceFor(bindings: ProviderBindings, settings: Settings) {
  if (settings.devMode) return new DevContentSource();
  if (!settings.cms.projectId && !settings.cms.apiUrl) return null;
  return new SanityContentSource(settings.cms, bindings.CMS_HTTP);
}

export const database = (db: D1Database) => drizzle(db);

/** The fixed context of development mode without a database: summary, one project, one testimonial. */
export function devSeededChunks() {
  const chunks = buildDocuments(AVERY_QUINN_PORTFOLIO).flatMap((doc) =>
    chunkDocument(doc, 500, 50),
  );
  const pick = (sourceId: string) => chunks.find((chunk) => chunk.sourceId === sourceId);
  return [
    pick("resume#summary"),
    pick("project-ask-avery#overview"),
    pick("testimonial-morgan-ellis"),
  ].filter((chunk) => chunk !== undefined);
}
