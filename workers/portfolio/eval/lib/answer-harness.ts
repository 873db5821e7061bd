/**
 * The worker's own chat pipeline, run in Node for the answer evaluation:
 * `runChat` with the development-mode settings and the providers the worker
 * selects (`selectProviders`), drizzle and the D1 vector index over an
 * in-memory SQLite database with the real migrations, and the real
 * ingestion of the Avery Quinn portfolio. With an AI runner (the `--remote`
 * mode) the embeddings come from Workers AI instead; the answers still come
 * from the extractive responder, so the figures measure retrieval and the
 * relevance thresholds, not a model's wording.
 */
import path from "node:path";
import { drizzle } from "drizzle-orm/d1";
import { AVERY_QUINN_PORTFOLIO } from "../../src/content/avery-quinn.ts";
import { DEV_PERSONA, type RetrievalSettings, readSettings } from "../../src/domain/settings.ts";
import type { MetricsEvent } from "../../src/durable-objects/safety-metrics.ts";
import { ExtractiveResponder } from "../../src/providers/extractive-responder.ts";
import { selectProviders } from "../../src/providers/factory.ts";
import type { AiRunner } from "../../src/providers/workers-ai.ts";
import { type ChatDeps, runChat, type Source } from "../../src/services/chat-pipeline.ts";
import { ensureDevContent } from "../../src/services/dev-content.ts";
import { ingestContent } from "../../src/services/ingestion.ts";
import { SqliteD1 } from "./sqlite-d1.ts";

const MIGRATIONS = path.join(import.meta.dirname, "../../../../migrations/portfolio");

export interface PipelineAnswer {
  text: string;
  sources: Source[];
  route: MetricsEvent["route"] | undefined;
  gateReason: MetricsEvent["gateReason"];
}

export interface Answerer {
  ask(question: string): Promise<PipelineAnswer>;
  /** Same store and embeddings, other relevance thresholds (for the threshold sweep). */
  withThresholds(thresholds: Partial<RetrievalSettings>): Answerer;
}

/** The embedding model and relevance settings an evaluation run may take from its environment. */
const RETRIEVAL_VARIABLES = [
  "EMBEDDING_MODEL",
  "TOP_K_RESULTS",
  "RETRIEVAL_MIN_SIMILARITY",
  "RETRIEVAL_STRONG_SIMILARITY",
  "RETRIEVAL_MIN_QUERY_COVERAGE",
] as const;

export async function createAnswerer(
  options: {
    ai?: AiRunner;
    env?: Record<string, string | undefined>;
    /** Ask with the response cache on, as a client does by default (answers then depend on order). */
    useCache?: boolean;
  } = {},
): Promise<Answerer> {
  const d1 = new SqliteD1().applyMigrations(MIGRATIONS);
  const binding = d1 as unknown as D1Database;
  const retrievalEnv = Object.fromEntries(
    RETRIEVAL_VARIABLES.filter((name) => options.env?.[name] !== undefined).map((name) => [
      name,
      options.env![name],
    ]),
  );
  const base = readSettings({ ...retrievalEnv, DEV_MODE: "true", API_TOKEN: "answer-eval" });
  // Workers AI providers are chosen only outside development mode; the content stays Avery's.
  const settings = options.ai ? { ...base, devMode: false, persona: DEV_PERSONA } : base;
  const providers = selectProviders(options.ai ? { AI: options.ai } : {}, settings, binding);
  const db = drizzle(binding);
  const ingest = {
    db,
    embedder: providers.embedder,
    index: providers.index,
    chunking: settings.chunking,
    now: () => Date.now(),
  };
  if (options.ai) await ingestContent(ingest, AVERY_QUINN_PORTFOLIO);
  else await ensureDevContent(ingest);

  let sessions = 0;
  const make = (retrieval: RetrievalSettings): Answerer => ({
    async ask(question) {
      let event: MetricsEvent | undefined;
      const deps: ChatDeps = {
        settings: { ...settings, retrieval },
        db,
        embedder: providers.embedder,
        index: providers.index,
        generator: options.ai ? new ExtractiveResponder(settings.persona) : providers.generator,
        ensureContent: async () => {},
        recordMetrics: async (recorded) => {
          event = recorded;
        },
        now: () => performance.now(),
        // Pipeline warnings (a failed generation, a failed write) with EVAL_DEBUG=1.
        log: process.env.EVAL_DEBUG ? (entry) => console.error(JSON.stringify(entry)) : undefined,
      };
      let text = "";
      let sources: Source[] = [];
      sessions += 1;
      for await (const chatEvent of runChat(deps, {
        question,
        sessionId: `answer-eval-${sessions}`,
        useCache: options.useCache ?? false,
      })) {
        if (chatEvent.type === "token") text += chatEvent.content;
        else sources = chatEvent.sources;
      }
      return { text, sources, route: event?.route, gateReason: event?.gateReason };
    },
    withThresholds(thresholds) {
      return make({ ...retrieval, ...thresholds });
    },
  });
  return make(settings.retrieval);
}
