import type { PortfolioVocabulary } from "../domain/portfolio-vocabulary.ts";
import type { PreRouterDecision } from "../domain/pre-router.ts";
import type { HistoryMessage } from "../domain/prompt.ts";
import {
  needsVocabulary,
  rescreenWithVocabulary,
  type SafetyVerdict,
  screenQuestionLocally,
  screenWithVocabulary,
} from "../domain/safety.ts";
import type { Settings } from "../domain/settings.ts";
import type { GuardVerdict, SafetyGuard } from "../providers/llama-guard.ts";

/**
 * The safety screen the chat pipeline calls before anything else, and the
 * screen for the history handed to the generator.
 *
 * 1. Local stages (rules, personal-data categories, the learned classifier,
 *    the question's subject): no I/O, microseconds. A question refused for
 *    its subject is judged again against the portfolio's own vocabulary
 *    (`vocabulary`, read from the store only then), so a question about a
 *    newly ingested project passes.
 * 2. In production, questions both local stages pass get a second opinion
 *    from Llama Guard on Workers AI, within `guardTimeoutMs` (300 ms by
 *    default). Policy when it errors or runs late: fail OPEN by default
 *    (SAFETY_GUARD_ON_FAILURE=open): the question goes on to retrieval,
 *    because two local stages have already passed it, the generator's own
 *    rules still refuse, and answers come only from portfolio context;
 *    refusing every question while Workers AI is degraded would take the
 *    service down for everyone. `closed` refuses instead, for deployments
 *    that prefer that trade.
 */

export type ScreenStage = "rules" | "topic" | "classifier" | "llama_guard" | "none";

/** Where the portfolio's vocabulary comes from (the store, or fixed development content). */
export type VocabularySource = () => Promise<PortfolioVocabulary | null>;
export type GuardOutcome = "safe" | "unsafe" | "timeout" | "error" | "not_asked";

export interface Screening {
  decision: PreRouterDecision;
  stage: ScreenStage;
  guard: GuardOutcome;
}

class GuardTimeout extends Error {
  override readonly name = "GuardTimeout";
}

async function withBudget<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new GuardTimeout(`safety guard over ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Llama Guard hazard codes onto the pre-router's categories. */
export function decisionFromGuard(verdict: GuardVerdict): PreRouterDecision {
  const codes = new Set(verdict.categories.map((code) => code.toUpperCase()));
  if (codes.has("S12") || codes.has("S3") || codes.has("S4"))
    return { bypass: true, category: "explicit", reason: "explicit_content" };
  if (codes.has("S7"))
    return { bypass: true, category: "private", reason: "sensitive_personal_data" };
  return { bypass: true, category: "off_topic", reason: "unsupported_topic" };
}

const REFUSED_BY_POLICY: PreRouterDecision = {
  bypass: true,
  category: "off_topic",
  reason: "unsupported_topic",
};

function localThresholds(settings: Settings) {
  return {
    classifier: settings.safety.classifierThreshold,
    classifierEnabled: settings.safety.classifierEnabled,
  };
}

async function screenLocally(
  question: string,
  settings: Settings,
  vocabulary: VocabularySource | undefined,
  log?: (entry: Record<string, unknown>) => void,
): Promise<SafetyVerdict> {
  const first = screenQuestionLocally(question, settings.persona, localThresholds(settings));
  if (!vocabulary || !needsVocabulary(first)) return first;
  try {
    const known = await vocabulary();
    if (!known) return first;
    return rescreenWithVocabulary(
      question,
      settings.persona,
      first,
      known,
      localThresholds(settings),
    );
  } catch (error) {
    // Without the vocabulary the verdict stands (a refusal, never a pass).
    log?.({ level: "warn", msg: "portfolio vocabulary unavailable", error: String(error) });
    return first;
  }
}

export async function screenQuestion(
  question: string,
  settings: Settings,
  guard: SafetyGuard | null,
  log?: (entry: Record<string, unknown>) => void,
  vocabulary?: VocabularySource,
): Promise<Screening> {
  const local = await screenLocally(question, settings, vocabulary, log);
  if (local.decision.bypass || !guard)
    return { decision: local.decision, stage: local.stage, guard: "not_asked" };
  try {
    const verdict = await withBudget(guard.check(question), settings.safety.guardTimeoutMs);
    if (verdict.safe) return { decision: local.decision, stage: "none", guard: "safe" };
    return { decision: decisionFromGuard(verdict), stage: "llama_guard", guard: "unsafe" };
  } catch (error) {
    const outcome: GuardOutcome = error instanceof GuardTimeout ? "timeout" : "error";
    log?.({
      level: "warn",
      msg: "safety guard unavailable",
      outcome,
      policy: settings.safety.guardOnFailure,
      model: guard.model,
      error: String(error),
    });
    if (settings.safety.guardOnFailure === "closed")
      return { decision: REFUSED_BY_POLICY, stage: "llama_guard", guard: outcome };
    return { decision: local.decision, stage: "none", guard: outcome };
  }
}

/**
 * The history handed to the generator, screened: a stored user message the
 * local stages refuse (stored before this screen existed, or before a rule
 * or model update) is dropped together with the reply that followed it.
 */
export function screenHistory(
  history: HistoryMessage[],
  settings: Settings,
  vocabulary?: PortfolioVocabulary | null,
): HistoryMessage[] {
  const kept: HistoryMessage[] = [];
  let droppingReply = false;
  for (const message of history) {
    if (message.role === "user") {
      const refused = screenWithVocabulary(
        message.content,
        settings.persona,
        vocabulary ?? null,
        localThresholds(settings),
      ).decision.bypass;
      droppingReply = refused;
      if (!refused) kept.push(message);
    } else if (!droppingReply) kept.push(message);
    else droppingReply = false;
  }
  return kept;
}
