/**
 * Scoring of the answer evaluation: a fact question is right when the
 * answer is not a refusal and contains every required fact (any one of its
 * alternatives); a not-stated question is right only when the answer
 * declines. Anything else given to a not-stated question is a false answer.
 */

export type ExpectedAnswer = string[][] | "not_stated";

export interface AnswerQuestion {
  id: string;
  family: string;
  kind: string;
  question: string;
  answer: ExpectedAnswer;
}

export interface AnswerOutcome {
  question: AnswerQuestion;
  text: string;
  declined: boolean;
  correct: boolean;
  /** Required facts (first alternative of each) missing from a fact answer. */
  missing: string[];
}

export interface SplitReport {
  questions: number;
  factQuestions: number;
  factCorrect: number;
  factAccuracy: number;
  /** Fact questions wrongly declined. */
  factDeclined: number;
  notStated: number;
  declinedCorrectly: number;
  falseAnswers: number;
  falseAnswerRate: number;
  byKind: Record<string, { total: number; correct: number }>;
  misses: AnswerOutcome[];
}

/** Lower-case, `&` as "and", every other non-alphanumeric as a space, padded for whole-word matching. */
export function normalizeForMatch(text: string): string {
  const words = text
    .normalize("NFKC")
    .toLowerCase()
    .replace(/&/g, " and ")
    .replace(/[^a-z0-9]+/g, " ")
    .trim();
  return ` ${words} `;
}

export function containsFact(answer: string, alternatives: string[]): boolean {
  const haystack = normalizeForMatch(answer);
  return alternatives.some((alternative) => haystack.includes(normalizeForMatch(alternative)));
}

/**
 * How a reader recognises that the assistant declined: it says the portfolio
 * does not state the thing, lacks verified information, or refuses (safety
 * pre-router answers).
 */
const DECLINE_PATTERNS = [
  /\b(doesn't|does not|don't|do not) (mention|say|state|list|include|name|give|show)\b/i,
  /\bno verified\b/i,
  /\bdon't have enough verified\b/i,
  /\bno (salary|compensation)\b/i,
  /\bI can only answer\b/i,
  /\bI only share\b/i,
  /\bI can't (help|share)\b/i,
  /\bwon't guess\b/i,
];

export function isDecline(text: string): boolean {
  return DECLINE_PATTERNS.some((pattern) => pattern.test(text));
}

export function scoreOutcome(question: AnswerQuestion, text: string): AnswerOutcome {
  const declined = isDecline(text);
  if (question.answer === "not_stated")
    return { question, text, declined, correct: declined, missing: [] };
  const missing = question.answer
    .filter((alternatives) => !containsFact(text, alternatives))
    .map((alternatives) => alternatives[0]!);
  return { question, text, declined, correct: !declined && missing.length === 0, missing };
}

export function summarize(outcomes: AnswerOutcome[]): SplitReport {
  const facts = outcomes.filter((o) => o.question.answer !== "not_stated");
  const notStated = outcomes.filter((o) => o.question.answer === "not_stated");
  const byKind: SplitReport["byKind"] = {};
  for (const outcome of outcomes) {
    const row = byKind[outcome.question.kind] ?? { total: 0, correct: 0 };
    byKind[outcome.question.kind] = row;
    row.total += 1;
    if (outcome.correct) row.correct += 1;
  }
  const factCorrect = facts.filter((o) => o.correct).length;
  const declinedCorrectly = notStated.filter((o) => o.correct).length;
  return {
    questions: outcomes.length,
    factQuestions: facts.length,
    factCorrect,
    factAccuracy: facts.length === 0 ? 1 : factCorrect / facts.length,
    factDeclined: facts.filter((o) => o.declined).length,
    notStated: notStated.length,
    declinedCorrectly,
    falseAnswers: notStated.length - declinedCorrectly,
    falseAnswerRate:
      notStated.length === 0 ? 0 : (notStated.length - declinedCorrectly) / notStated.length,
    byKind,
    misses: outcomes.filter((o) => !o.correct),
  };
}
