import { z } from "zod";
import { DEFAULT_SAFETY_THRESHOLDS } from "./safety.ts";

/**
 * Everything the service reads from its environment, parsed once per
 * request. The person, contact e-mail and assistant persona are
 * configuration; development mode replaces them with the fictional
 * Avery Quinn, whatever is configured.
 */
export interface Persona {
  personName: string;
  contactEmail: string;
  assistantName: string;
}

export const DEV_PERSONA: Persona = {
  personName: "Avery Quinn",
  contactEmail: "avery.quinn@example.dev",
  assistantName: "Ask Avery",
};

export interface RetrievalSettings {
  topK: number;
  minSimilarity: number;
  strongSimilarity: number;
  minQueryCoverage: number;
}

export interface SafetySettings {
  /** The learned stage refuses at or above this attack probability. */
  classifierThreshold: number;
  classifierEnabled: boolean;
  /** Workers AI safety model asked about questions the local stages pass; empty: no second opinion. */
  guardModel: string;
  /** Time budget for the second opinion. */
  guardTimeoutMs: number;
  /** What a failed or late second opinion means: `open` answers, `closed` refuses. */
  guardOnFailure: "open" | "closed";
}

export interface Settings {
  devMode: boolean;
  /** Empty when not configured: protected routes then answer 500. */
  apiToken: string;
  persona: Persona;
  /** False when the persona is not configured (production without PERSON_NAME). */
  personaConfigured: boolean;
  chatRateLimitPerMinute: number;
  ingestRateLimitPerMinute: number;
  retrieval: RetrievalSettings;
  cache: { similarityThreshold: number; ttlDays: number };
  historyMessages: number;
  chunking: { size: number; overlap: number };
  generation: { model: string; maxTokens: number; temperature: number };
  embeddingModel: string;
  safety: SafetySettings;
  cms: {
    projectId: string;
    dataset: string;
    apiVersion: string;
    token: string;
    /** Base URL override (e.g. a self-hosted, Sanity-compatible query API). */
    apiUrl: string;
  };
}

const unit = (fallback: number) =>
  z.coerce.number().min(0).max(1).catch(fallback).default(fallback);
const positiveInt = (fallback: number) =>
  z.coerce.number().int().positive().catch(fallback).default(fallback);

const EnvSchema = z.object({
  DEV_MODE: z.string().optional(),
  API_TOKEN: z.string().optional(),
  PERSON_NAME: z.string().optional(),
  CONTACT_EMAIL: z.string().optional(),
  ASSISTANT_NAME: z.string().optional(),
  CHAT_RATE_LIMIT_PER_MINUTE: positiveInt(30),
  INGEST_RATE_LIMIT_PER_MINUTE: positiveInt(10),
  TOP_K_RESULTS: positiveInt(8),
  RETRIEVAL_MIN_SIMILARITY: unit(0.5),
  RETRIEVAL_STRONG_SIMILARITY: unit(0.72),
  RETRIEVAL_MIN_QUERY_COVERAGE: unit(0.18),
  CACHE_SIMILARITY_THRESHOLD: unit(0.95),
  CACHE_TTL_DAYS: positiveInt(7),
  CHUNK_SIZE: positiveInt(500),
  CHUNK_OVERLAP: z.coerce.number().int().min(0).catch(50).default(50),
  GENERATION_MODEL: z.string().optional(),
  LLM_MAX_TOKENS: positiveInt(1024),
  LLM_TEMPERATURE: unit(0.1),
  EMBEDDING_MODEL: z.string().optional(),
  SAFETY_CLASSIFIER: z.string().optional(),
  SAFETY_CLASSIFIER_THRESHOLD: unit(DEFAULT_SAFETY_THRESHOLDS.classifier),
  SAFETY_GUARD_MODEL: z.string().optional(),
  SAFETY_GUARD_TIMEOUT_MS: positiveInt(300),
  SAFETY_GUARD_ON_FAILURE: z.enum(["open", "closed"]).catch("open").default("open"),
  SANITY_PROJECT_ID: z.string().optional(),
  SANITY_DATASET: z.string().optional(),
  SANITY_API_VERSION: z.string().optional(),
  SANITY_API_TOKEN: z.string().optional(),
  SANITY_API_URL: z.string().optional(),
});

export const DEFAULT_GENERATION_MODEL = "@cf/meta/llama-3.1-8b-instruct";
export const DEFAULT_EMBEDDING_MODEL = "@cf/baai/bge-base-en-v1.5";

export function readSettings(env: Record<string, unknown>): Settings {
  const raw = EnvSchema.parse(env);
  const devMode = (raw.DEV_MODE ?? "").trim().toLowerCase() === "true";
  const configured: Persona = {
    personName: (raw.PERSON_NAME ?? "").trim(),
    contactEmail: (raw.CONTACT_EMAIL ?? "").trim(),
    assistantName: (raw.ASSISTANT_NAME ?? "").trim(),
  };
  const personaConfigured =
    devMode || (configured.personName !== "" && configured.contactEmail !== "");
  const persona = devMode
    ? DEV_PERSONA
    : {
        ...configured,
        assistantName:
          configured.assistantName ||
          `Ask ${configured.personName.split(/\s+/)[0] || "the portfolio"}`,
      };
  return {
    devMode,
    apiToken: raw.API_TOKEN ?? "",
    persona,
    personaConfigured,
    chatRateLimitPerMinute: raw.CHAT_RATE_LIMIT_PER_MINUTE,
    ingestRateLimitPerMinute: raw.INGEST_RATE_LIMIT_PER_MINUTE,
    retrieval: {
      topK: raw.TOP_K_RESULTS,
      minSimilarity: raw.RETRIEVAL_MIN_SIMILARITY,
      strongSimilarity: raw.RETRIEVAL_STRONG_SIMILARITY,
      minQueryCoverage: raw.RETRIEVAL_MIN_QUERY_COVERAGE,
    },
    cache: { similarityThreshold: raw.CACHE_SIMILARITY_THRESHOLD, ttlDays: raw.CACHE_TTL_DAYS },
    historyMessages: 6,
    chunking: {
      size: raw.CHUNK_SIZE,
      overlap: Math.min(raw.CHUNK_OVERLAP, raw.CHUNK_SIZE - 1),
    },
    generation: {
      model: raw.GENERATION_MODEL || DEFAULT_GENERATION_MODEL,
      maxTokens: raw.LLM_MAX_TOKENS,
      temperature: raw.LLM_TEMPERATURE,
    },
    embeddingModel: raw.EMBEDDING_MODEL || DEFAULT_EMBEDDING_MODEL,
    safety: {
      classifierThreshold: raw.SAFETY_CLASSIFIER_THRESHOLD,
      classifierEnabled: (raw.SAFETY_CLASSIFIER ?? "").trim().toLowerCase() !== "off",
      guardModel: (raw.SAFETY_GUARD_MODEL ?? "").trim(),
      guardTimeoutMs: raw.SAFETY_GUARD_TIMEOUT_MS,
      guardOnFailure: raw.SAFETY_GUARD_ON_FAILURE,
    },
    cms: {
      projectId: (raw.SANITY_PROJECT_ID ?? "").trim(),
      dataset: (raw.SANITY_DATASET ?? "").trim() || "production",
      apiVersion: (raw.SANITY_API_VERSION ?? "").trim() || "2024-01-01",
      token: raw.SANITY_API_TOKEN ?? "",
      apiUrl: (raw.SANITY_API_URL ?? "").trim(),
    },
  };
}
