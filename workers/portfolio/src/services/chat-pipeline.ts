import type { DrizzleD1Database } from "drizzle-orm/d1";
import { findExact, recordHit, semanticCandidates, storeEntry } from "../db/cache.ts";
import { chunksByIds } from "../db/chunks.ts";
import { appendTurn, recentMessages } from "../db/conversations.ts";
import { checkAnswerability } from "../domain/answerability.ts";
import {
  cannedAnswer,
  lowConfidenceAnswer,
  notInPortfolioAnswer,
  PARTIAL_ANSWER_TAIL,
  pipelineFallbackAnswer,
} from "../domain/answers.ts";
import { extractiveAnswer } from "../domain/extractive.ts";
import type { PortfolioVocabulary } from "../domain/portfolio-vocabulary.ts";
import { buildMessages, type HistoryMessage } from "../domain/prompt.ts";
import {
  assessConfidence,
  candidateLimits,
  limitCandidates,
  type RankedChunk,
  rerank,
} from "../domain/retrieval.ts";
import type { Settings } from "../domain/settings.ts";
import { contentTerms, questionKey, wordPieces } from "../domain/text.ts";
import { cosine } from "../domain/vectors.ts";
import type { MetricsEvent } from "../durable-objects/safety-metrics.ts";
import type { SafetyGuard } from "../providers/llama-guard.ts";
import type { Embedder, Generator, VectorIndex } from "../providers/types.ts";
import { readVocabulary } from "./portfolio-vocabulary-store.ts";
import { screenHistory, screenQuestion } from "./safety-screen.ts";

/**
 * The chat pipeline: pre-router → exact cache → embedding → semantic cache
 * → retrieval → confidence gate → history → streamed generation → cache and
 * history writes. It never throws: provider and store failures become
 * fallback answers with a counted reason.
 */

export interface Source {
  /** The portfolio item (CMS document id). */
  id: string;
  type: string;
  title: string;
}

export type ChatEvent =
  | { type: "token"; content: string }
  | { type: "done"; content: ""; cached: boolean; latency_ms: number; sources: Source[] };

export interface ChatRequest {
  question: string;
  sessionId: string;
  useCache: boolean;
}

export interface ChatDeps {
  settings: Settings;
  db: DrizzleD1Database;
  embedder: Embedder;
  index: VectorIndex;
  generator: Generator;
  /** Production's second opinion (Llama Guard on Workers AI); absent or null in local runs. */
  safetyGuard?: SafetyGuard | null;
  /** Makes sure content exists before retrieval (development mode's lazy ingest). */
  ensureContent: () => Promise<unknown>;
  recordMetrics: (event: MetricsEvent) => Promise<void>;
  now: () => number;
  log?: (entry: Record<string, unknown>) => void;
}

/** How many recent cache entries the semantic lookup compares against. */
const SEMANTIC_CACHE_SCAN = 500;
const EMBED_TIMEOUT_MS = 15_000;
const SOURCES_LIMIT = 5;
const DAY_MS = 86_400_000;

class StepTimeout extends Error {
  override readonly name = "StepTimeout";
}

function withTimeout<T>(promise: Promise<T>, ms: number, step: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StepTimeout(`${step} timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The portfolio items an answer rests on: distinct items among chunks that passed the floor. */
export function sourcesOf(chunks: RankedChunk[], floor: number): Source[] {
  const seen = new Set<string>();
  const sources: Source[] = [];
  for (const chunk of chunks) {
    if ((chunk.score ?? chunk.similarity) < floor || seen.has(chunk.itemId)) continue;
    seen.add(chunk.itemId);
    sources.push({ id: chunk.itemId, type: chunk.source, title: chunk.title });
    if (sources.length >= SOURCES_LIMIT) break;
  }
  return sources;
}

function parseSources(json: string): Source[] {
  try {
    const parsed = JSON.parse(json) as unknown;
    return Array.isArray(parsed) ? (parsed as Source[]) : [];
  } catch {
    return [];
  }
}

export async function* runChat(deps: ChatDeps, request: ChatRequest): AsyncGenerator<ChatEvent> {
  const { settings } = deps;
  const started = deps.now();
  const persona = settings.persona;
  const ignoredTerms = new Set(contentTerms(persona.personName));
  let streamed = "";

  const storeTurn = async (answer: string) => {
    try {
      await appendTurn(deps.db, request.sessionId, request.question, answer.trim(), deps.now());
    } catch (error) {
      deps.log?.({ level: "warn", msg: "conversation write failed", error: String(error) });
    }
  };
  const record = async (event: MetricsEvent) => {
    try {
      await deps.recordMetrics(event);
    } catch (error) {
      deps.log?.({ level: "warn", msg: "metrics write failed", error: String(error) });
    }
  };
  const done = (cached: boolean, sources: Source[]): ChatEvent => ({
    type: "done",
    content: "",
    cached,
    latency_ms: Math.round((deps.now() - started) * 10) / 10,
    sources,
  });
  function* tokens(text: string): Iterable<ChatEvent> {
    for (const piece of wordPieces(text)) {
      streamed += piece;
      yield { type: "token", content: piece };
    }
  }

  // The portfolio's vocabulary, read once per request and only when needed
  // (development content is ingested first, so it is there on a fresh store).
  let vocabulary: Promise<PortfolioVocabulary | null> | undefined;
  const portfolioVocabulary = () => {
    vocabulary ??= deps.ensureContent().then(() => readVocabulary(deps.db));
    return vocabulary;
  };

  // 1. Safety screen: canned answers, no embedding. A refused question is
  // not stored, so it never reaches a later turn's prompt.
  const { decision } = await screenQuestion(
    request.question,
    settings,
    deps.safetyGuard ?? null,
    deps.log,
    portfolioVocabulary,
  );
  if (decision.bypass) {
    const text = cannedAnswer(decision.reason, persona, settings.devMode);
    yield* tokens(text);
    await record({
      route: "pre_router",
      preRouter: { category: decision.category, reason: decision.reason },
    });
    yield done(false, []);
    return;
  }

  let chunks: RankedChunk[] = [];
  let answerSources: Source[] = [];
  try {
    await deps.ensureContent();
    const since = deps.now() - settings.cache.ttlDays * DAY_MS;
    const key = questionKey(request.question);

    // 2. Exact cache.
    if (request.useCache) {
      const hit = await findExact(deps.db, key, since);
      if (hit) {
        yield* cacheHit(hit.id, hit.response, parseSources(hit.sources));
        return;
      }
    }

    // 3. Embedding, then the semantic cache.
    const [queryVector] = await withTimeout(
      deps.embedder.embed([request.question], "query"),
      EMBED_TIMEOUT_MS,
      "embedding",
    );
    if (!queryVector) throw new Error("embedder returned no vector");
    if (request.useCache) {
      let best: { id: string; response: string; sources: string; similarity: number } | null = null;
      for (const row of await semanticCandidates(
        deps.db,
        deps.embedder.model,
        since,
        SEMANTIC_CACHE_SCAN,
      )) {
        const similarity = cosine(queryVector, row.questionEmbedding);
        if (!best || similarity > best.similarity)
          best = { id: row.id, response: row.response, sources: row.sources, similarity };
      }
      if (best && best.similarity > settings.cache.similarityThreshold) {
        yield* cacheHit(best.id, best.response, parseSources(best.sources));
        return;
      }
    }

    // 4. Retrieval and reranking.
    const limits = candidateLimits(settings.retrieval.topK);
    const matches = await withTimeout(
      deps.index.query(queryVector, limits.total, deps.embedder.model),
      EMBED_TIMEOUT_MS,
      "vector search",
    );
    const similarity = new Map(matches.map((match) => [match.id, match.similarity]));
    const rows = await chunksByIds(
      deps.db,
      matches.map((match) => match.id),
    );
    const candidates = limitCandidates(
      rows.map((row) => ({
        id: row.id,
        source: row.source,
        sourceId: row.sourceId,
        itemId: row.itemId,
        title: row.title,
        content: row.content,
        chunkIndex: row.chunkIndex,
        similarity: similarity.get(row.id) ?? 0,
      })),
      limits,
    );
    chunks = rerank(request.question, candidates, settings.retrieval.topK, ignoredTerms);

    // 5. Confidence gate, then answerability: the question's key terms must be in the evidence.
    const gate = assessConfidence(request.question, chunks, settings.retrieval, ignoredTerms);
    const answerable = gate.confident
      ? checkAnswerability(request.question, chunks, ignoredTerms)
      : null;
    if (!gate.confident || (answerable && !answerable.answerable)) {
      const text =
        answerable && !answerable.answerable
          ? notInPortfolioAnswer(request.question, answerable, chunks, persona)
          : lowConfidenceAnswer(gate.reason as Exclude<typeof gate.reason, "ok">, persona);
      yield* tokens(text);
      await storeTurn(text);
      await record({
        route: "confidence_fallback",
        gateReason: answerable && !answerable.answerable ? answerable.reason : gate.reason,
      } as MetricsEvent);
      yield done(false, []);
      return;
    }
    answerSources = sourcesOf(chunks, settings.retrieval.minSimilarity);

    // 6. History, then streamed generation.
    const recent = await recentMessages(deps.db, request.sessionId, settings.historyMessages);
    const history: HistoryMessage[] = screenHistory(
      recent,
      settings,
      recent.length > 0 ? await portfolioVocabulary().catch(() => null) : null,
    );
    const messages = buildMessages(persona, settings.devMode, chunks, history, request.question);
    let generationError: unknown = null;
    try {
      for await (const delta of deps.generator.stream(messages)) {
        if (!delta) continue;
        streamed += delta;
        yield { type: "token", content: delta };
      }
    } catch (error) {
      generationError = error;
    }

    if (generationError !== null || !streamed.trim()) {
      deps.log?.({
        level: "warn",
        msg: "generation failed",
        generator: deps.generator.name,
        error: generationError === null ? "blank answer" : String(generationError),
      });
      let fallback: string;
      if (streamed.trim()) fallback = `${/\s$/.test(streamed) ? "" : " "}${PARTIAL_ANSWER_TAIL}`;
      else
        fallback =
          extractiveAnswer(request.question, chunks, persona) || pipelineFallbackAnswer(persona);
      yield* tokens(fallback);
      await storeTurn(streamed);
      await record({ route: "error_fallback", fallbackReason: "generation_failure" });
      yield done(false, answerSources);
      return;
    }

    // 7. Cache (only answers that did not depend on this session's history) and history.
    if (request.useCache && history.length === 0) {
      try {
        await storeEntry(deps.db, {
          id: crypto.randomUUID(),
          question: request.question,
          questionKey: key,
          questionEmbedding: Float32Array.from(queryVector),
          embeddingModel: deps.embedder.model,
          response: streamed,
          sources: JSON.stringify(answerSources),
          sourceChunkIds: JSON.stringify(chunks.map((chunk) => chunk.id)),
          hitCount: 0,
          createdAt: deps.now(),
          invalidatedAt: null,
        });
      } catch (error) {
        deps.log?.({ level: "warn", msg: "cache write failed", error: String(error) });
      }
    }
    await storeTurn(streamed);
    await record({ route: "llm" });
    yield done(false, answerSources);
  } catch (error) {
    deps.log?.({ level: "error", msg: "chat pipeline failed", error: String(error) });
    const fallback = streamed.trim()
      ? `${/\s$/.test(streamed) ? "" : " "}${PARTIAL_ANSWER_TAIL}`
      : pipelineFallbackAnswer(persona);
    yield* tokens(fallback);
    await storeTurn(streamed);
    await record({ route: "error_fallback", fallbackReason: "pipeline_failure" });
    yield done(false, []);
  }

  async function* cacheHit(id: string, response: string, sources: Source[]) {
    try {
      await recordHit(deps.db, id);
    } catch (error) {
      deps.log?.({ level: "warn", msg: "cache hit count failed", error: String(error) });
    }
    yield* tokens(response);
    await storeTurn(response);
    await record({ route: "cache_hit" });
    yield done(true, sources);
  }
}

export interface StorelessChatDeps {
  settings: Settings;
  generator: Generator;
  /** Development mode's fixed context when no database is bound. */
  seededChunks: { source: string; title: string; content: string }[];
  /** The development portfolio's vocabulary for the safety screen (null outside development mode). */
  vocabulary: PortfolioVocabulary | null;
  recordMetrics: (event: MetricsEvent) => Promise<void>;
  now: () => number;
}

/**
 * Without a database binding: development mode answers from a few fixed
 * seeded chunks (route `dev_seeded`, nothing cached or stored); otherwise a
 * counted `database_unavailable` fallback.
 */
export async function* runChatWithoutStore(
  deps: StorelessChatDeps,
  request: ChatRequest,
): AsyncGenerator<ChatEvent> {
  const started = deps.now();
  const persona = deps.settings.persona;
  const record = async (event: MetricsEvent) => {
    try {
      await deps.recordMetrics(event);
    } catch {
      // Counting must never break an answer.
    }
  };
  const done = (sources: Source[]): ChatEvent => ({
    type: "done",
    content: "",
    cached: false,
    latency_ms: Math.round((deps.now() - started) * 10) / 10,
    sources,
  });
  const { decision } = await screenQuestion(
    request.question,
    deps.settings,
    null,
    undefined,
    async () => deps.vocabulary,
  );
  if (decision.bypass) {
    for (const piece of wordPieces(cannedAnswer(decision.reason, persona, deps.settings.devMode)))
      yield { type: "token", content: piece };
    await record({
      route: "pre_router",
      preRouter: { category: decision.category, reason: decision.reason },
    });
    yield done([]);
    return;
  }
  if (!deps.settings.devMode) {
    for (const piece of wordPieces(pipelineFallbackAnswer(persona)))
      yield { type: "token", content: piece };
    await record({ route: "error_fallback", fallbackReason: "database_unavailable" });
    yield done([]);
    return;
  }
  let text = "";
  try {
    const messages = buildMessages(persona, true, deps.seededChunks, [], request.question);
    for await (const delta of deps.generator.stream(messages)) {
      text += delta;
      yield { type: "token", content: delta };
    }
  } catch {
    text = "";
  }
  if (!text.trim()) {
    for (const piece of wordPieces(pipelineFallbackAnswer(persona)))
      yield { type: "token", content: piece };
    await record({ route: "error_fallback", fallbackReason: "empty_dev_seeded_response" });
    yield done([]);
    return;
  }
  await record({ route: "dev_seeded" });
  yield done([]);
}
