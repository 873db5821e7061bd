import { DurableObject } from "cloudflare:workers";
import { z } from "zod";

/**
 * Safety and routing counters of the chat pipeline, global across isolates:
 * one object (named "global") holds them, so every isolate counts into the
 * same totals, and they survive restarts (the original kept them in process
 * memory). `record` reads and writes synchronous storage with no `await` in
 * between, so concurrent events cannot lose increments.
 */

export const RESPONSE_ROUTES = [
  "pre_router",
  "cache_hit",
  "llm",
  "dev_seeded",
  "confidence_fallback",
  "error_fallback",
] as const;
export const PRE_ROUTER_CATEGORIES = [
  "identity",
  "private",
  "explicit",
  "prompt_injection",
  "off_topic",
] as const;
export const PRE_ROUTER_REASONS = [
  "prompt_override_attempt",
  "explicit_content",
  "personhood_confusion",
  "assistant_identity",
  "compensation",
  "sensitive_personal_data",
  "unsupported_topic",
] as const;
export const GATE_REASONS = [
  "empty_results",
  "low_similarity",
  "low_term_coverage",
  // The answerability check (the evidence lacks a key term, or the kind of fact asked for).
  "entity_not_found",
  "answer_type_not_found",
] as const;
export const FALLBACK_REASONS = [
  "database_unavailable",
  "empty_dev_seeded_response",
  "generation_failure",
  "pipeline_failure",
] as const;

/** One finished chat request: what it counts towards. */
export const MetricsEvent = z.strictObject({
  route: z.enum(RESPONSE_ROUTES),
  preRouter: z
    .strictObject({ category: z.enum(PRE_ROUTER_CATEGORIES), reason: z.enum(PRE_ROUTER_REASONS) })
    .optional(),
  gateReason: z.enum(GATE_REASONS).optional(),
  fallbackReason: z.enum(FALLBACK_REASONS).optional(),
});
export type MetricsEvent = z.infer<typeof MetricsEvent>;

type Counters = Record<string, number>;

interface StoredCounters {
  totals: Counters;
  response_routes: Counters;
  pre_router_categories: Counters;
  pre_router_reasons: Counters;
  retrieval_gate_reasons: Counters;
  fallback_reasons: Counters;
}

export interface MetricsSnapshot extends StoredCounters {
  started_at: string;
  uptime_seconds: number;
}

const EMPTY: StoredCounters = {
  totals: {},
  response_routes: {},
  pre_router_categories: {},
  pre_router_reasons: {},
  retrieval_gate_reasons: {},
  fallback_reasons: {},
};

function bump(counters: Counters, key: string | undefined): void {
  if (key) counters[key] = (counters[key] ?? 0) + 1;
}

/** Non-zero counters, keys in alphabetical order (as the original answered). */
function sorted(counters: Counters): Counters {
  return Object.fromEntries(
    Object.entries(counters)
      .filter(([, value]) => value > 0)
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}

export class SafetyMetrics extends DurableObject {
  private startedAt(): number {
    let started = this.ctx.storage.kv.get<number>("started_at");
    if (started === undefined) {
      started = Date.now();
      this.ctx.storage.kv.put("started_at", started);
    }
    return started;
  }

  record(input: MetricsEvent): void {
    const event = MetricsEvent.parse(input);
    this.startedAt();
    const counters = this.ctx.storage.kv.get<StoredCounters>("counters") ?? structuredClone(EMPTY);
    bump(counters.totals, "requests_total");
    bump(counters.totals, "answers_returned_total");
    bump(counters.response_routes, event.route);
    bump(counters.pre_router_categories, event.preRouter?.category);
    bump(counters.pre_router_reasons, event.preRouter?.reason);
    bump(counters.retrieval_gate_reasons, event.gateReason);
    bump(counters.fallback_reasons, event.fallbackReason);
    this.ctx.storage.kv.put("counters", counters);
  }

  snapshot(nowMs: number = Date.now()): MetricsSnapshot {
    const started = this.startedAt();
    const counters = this.ctx.storage.kv.get<StoredCounters>("counters") ?? EMPTY;
    return {
      started_at: new Date(started).toISOString(),
      uptime_seconds: Math.max(0, Math.floor((nowMs - started) / 1000)),
      totals: sorted(counters.totals),
      response_routes: sorted(counters.response_routes),
      pre_router_categories: sorted(counters.pre_router_categories),
      pre_router_reasons: sorted(counters.pre_router_reasons),
      retrieval_gate_reasons: sorted(counters.retrieval_gate_reasons),
      fallback_reasons: sorted(counters.fallback_reasons),
    };
  }
}

/** The one global counter object. */
export function safetyMetrics(namespace: DurableObjectNamespace<SafetyMetrics>) {
  return namespace.get(namespace.idFromName("global"));
}
