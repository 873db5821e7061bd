import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import { AVERY_QUINN_PORTFOLIO } from "../content/avery-quinn.ts";
import { vocabularyFromContent } from "../domain/portfolio-vocabulary.ts";
import type { Settings } from "../domain/settings.ts";
import { safetyMetrics } from "../durable-objects/safety-metrics.ts";
import {
  contentSourceFor,
  database,
  devSeededChunks,
  type ProviderBindings,
  selectProviders,
} from "../providers/factory.ts";
import { type SafetyGuard, WorkersAiLlamaGuard } from "../providers/llama-guard.ts";
import type { ChatDeps, StorelessChatDeps } from "./chat-pipeline.ts";
import { ensureDevContent } from "./dev-content.ts";
import type { IngestDeps } from "./ingestion.ts";

/** Builds the pipeline's dependencies from the request's bindings and settings. */

const bindingsOf = (c: Context<AppEnv>) => c.env as unknown as ProviderBindings & Env;

function logger(c: Context<AppEnv>) {
  return (entry: Record<string, unknown>) =>
    console.log(JSON.stringify({ ...entry, request_id: c.get("requestId") }));
}

export function hasStore(c: Context<AppEnv>): boolean {
  return Boolean(bindingsOf(c).DB);
}

export function ingestDeps(c: Context<AppEnv>): IngestDeps {
  const settings = c.get("settings");
  const env = bindingsOf(c);
  const providers = selectProviders(env, settings, env.DB);
  return {
    db: database(env.DB),
    embedder: providers.embedder,
    index: providers.index,
    chunking: settings.chunking,
    now: () => Date.now(),
  };
}

function metricsRecorder(c: Context<AppEnv>) {
  const stub = safetyMetrics(c.env.SAFETY_METRICS);
  return async (event: Parameters<ChatDeps["recordMetrics"]>[0]) => {
    await stub.record(event);
  };
}

/** Llama Guard only where Workers AI is bound, outside development mode, and when a model is configured. */
function safetyGuardFor(env: ProviderBindings, settings: Settings): SafetyGuard | null {
  if (!env.AI || settings.devMode || !settings.safety.guardModel) return null;
  return new WorkersAiLlamaGuard(env.AI, settings.safety.guardModel);
}

export function chatDeps(c: Context<AppEnv>): ChatDeps {
  const settings = c.get("settings");
  const env = bindingsOf(c);
  const providers = selectProviders(env, settings, env.DB);
  const ingest = ingestDeps(c);
  return {
    settings,
    db: ingest.db,
    embedder: providers.embedder,
    index: providers.index,
    generator: providers.generator,
    safetyGuard: safetyGuardFor(env, settings),
    ensureContent: settings.devMode ? () => ensureDevContent(ingest) : async () => {},
    recordMetrics: metricsRecorder(c),
    now: () => performance.now(),
    log: logger(c),
  };
}

export function storelessChatDeps(c: Context<AppEnv>): StorelessChatDeps {
  const settings = c.get("settings");
  const providers = selectProviders({}, settings, undefined as unknown as D1Database);
  return {
    settings,
    generator: providers.generator,
    seededChunks: devSeededChunks(),
    vocabulary: settings.devMode ? vocabularyFromContent(AVERY_QUINN_PORTFOLIO) : null,
    recordMetrics: metricsRecorder(c),
    now: () => performance.now(),
  };
}

export function contentSource(c: Context<AppEnv>) {
  return contentSourceFor(bindingsOf(c), c.get("settings"));
}
