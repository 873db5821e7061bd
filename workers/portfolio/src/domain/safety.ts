import {
  mentionsPortfolio,
  type PreRouterCategory,
  type PreRouterDecision,
  type PreRouterReason,
  type PreRouterSubject,
  preRoute,
} from "./pre-router.ts";
import {
  type ClassifierVerdict,
  classifyViews,
  loadSafetyModel,
  type SafetyLabel,
  type SafetyModel,
  type SafetyModelFile,
} from "./safety-classifier.ts";
import modelFile from "./safety-model.json" with { type: "json" };
import { type NormalisedQuestion, normaliseQuestion } from "./safety-normalise.ts";

/**
 * The local safety decision: two stages over the normalised question.
 * 1. Rules (pre-router.ts): precise patterns, checked against the question
 *    and against anything decoded from it; a decoded message that trips a
 *    rule is a smuggled instruction.
 * 2. The learned classifier (safety-classifier.ts), for what the rules let
 *    through: a question is refused when its attack probability
 *    (1 − P(normal)) on any view reaches the configured threshold.
 */

export interface SafetyThresholds {
  /** Attack probability at or above which the classifier refuses (SAFETY_CLASSIFIER_THRESHOLD). */
  classifier: number;
  /** False: rules only (SAFETY_CLASSIFIER=off). */
  classifierEnabled: boolean;
}

/** 0.85: chosen by `npm run train:safety` on the training corpus's held-out dev families (never on the test split). */
export const DEFAULT_SAFETY_THRESHOLDS: SafetyThresholds = {
  classifier: 0.85,
  classifierEnabled: true,
};

export interface SafetyVerdict {
  decision: PreRouterDecision;
  /** Which stage decided: `rules`, `classifier`, or `none` when the question passed both. */
  stage: "rules" | "classifier" | "none";
  /** The classifier's attack probability (0 when it did not run). */
  attackProbability: number;
}

const CATEGORY_OF: Record<Exclude<SafetyLabel, "normal_rag">, PreRouterCategory> = {
  prompt_override_attempt: "prompt_injection",
  explicit_content: "explicit",
  personhood_confusion: "identity",
  assistant_identity: "identity",
  compensation: "private",
  sensitive_personal_data: "private",
  unsupported_topic: "off_topic",
};

let bundledModel: SafetyModel | null = null;

/** The model shipped with the worker, decoded once per isolate. */
export function bundledSafetyModel(): SafetyModel {
  bundledModel ??= loadSafetyModel(modelFile as SafetyModelFile);
  return bundledModel;
}

const SMUGGLED: PreRouterDecision = {
  bypass: true,
  category: "prompt_injection",
  reason: "prompt_override_attempt",
};

/** Stage 1 only: the rules on the question and on every decoded view. */
export function screenWithRules(
  question: string,
  subject: PreRouterSubject,
  normalised: NormalisedQuestion = normaliseQuestion(question),
): PreRouterDecision {
  const direct = preRoute(question, subject);
  if (direct.bypass) return direct;
  for (const hidden of normalised.decoded) {
    const decision = preRoute(hidden, subject);
    if (decision.bypass) return SMUGGLED;
  }
  return direct;
}

function fromClassifier(verdict: ClassifierVerdict): PreRouterDecision {
  return {
    bypass: true,
    category: CATEGORY_OF[verdict.label],
    reason: verdict.label as PreRouterReason,
  };
}

export function screenQuestionLocally(
  question: string,
  subject: PreRouterSubject,
  thresholds: SafetyThresholds = DEFAULT_SAFETY_THRESHOLDS,
  model: SafetyModel = bundledSafetyModel(),
): SafetyVerdict {
  const normalised = normaliseQuestion(question);
  const ruled = screenWithRules(question, subject, normalised);
  if (ruled.bypass) return { decision: ruled, stage: "rules", attackProbability: 0 };
  if (!thresholds.classifierEnabled)
    return { decision: ruled, stage: "none", attackProbability: 0 };
  const { primary, segments, decoded } = normalised;
  const verdict = classifyViews(model, [primary, ...segments, ...decoded]);
  // Off-topic is the one verdict a portfolio reference overrules: "Has Avery
  // built a weather dashboard?" is about the portfolio, whatever its words.
  const overruled = verdict.label === "unsupported_topic" && mentionsPortfolio(question, subject);
  if (verdict.attackProbability >= thresholds.classifier && !overruled)
    return {
      decision: fromClassifier(verdict),
      stage: "classifier",
      attackProbability: verdict.attackProbability,
    };
  return { decision: ruled, stage: "none", attackProbability: verdict.attackProbability };
}
