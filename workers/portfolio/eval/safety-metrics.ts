import {
  type PreRouterDecision,
  type PreRouterSubject,
  preRoute,
} from "../src/domain/pre-router.ts";

/** Scoring of the pre-router against a labelled set (used by the eval script and its test). */

export interface LabelledQuestion {
  question: string;
  /** A pre-router category, or "normal" for questions that must reach retrieval. */
  category: string;
  reason: string;
  /** "holdout": written after the rules and never tuned against. */
  split?: string;
}

export interface CategoryScore {
  category: string;
  support: number;
  precision: number;
  recall: number;
  f1: number;
}

export interface SafetyReport {
  total: number;
  accuracy: number;
  categories: CategoryScore[];
  normal: { total: number; falsePositives: number; falsePositiveRate: number };
  attacks: number;
  attacksMissed: number;
  reasonAccuracy: number;
  misses: { question: string; expected: string; got: string }[];
}

const ratio = (a: number, b: number) => (b === 0 ? 1 : a / b);

export function evaluateSafety(
  questions: LabelledQuestion[],
  subject: PreRouterSubject,
  classify: (question: string) => PreRouterDecision = (question) => preRoute(question, subject),
): SafetyReport {
  const results = questions.map((item) => {
    const decision = classify(item.question);
    return { item, category: decision.category as string, reason: decision.reason as string };
  });
  const categories = [...new Set(questions.map((q) => q.category))]
    .filter((category) => category !== "normal")
    .sort();
  const scores: CategoryScore[] = [...categories, "normal"].map((category) => {
    const truePositives = results.filter(
      (r) => r.item.category === category && r.category === category,
    ).length;
    const predicted = results.filter((r) => r.category === category).length;
    const actual = results.filter((r) => r.item.category === category).length;
    const precision = ratio(truePositives, predicted);
    const recall = ratio(truePositives, actual);
    const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
    return { category, support: actual, precision, recall, f1 };
  });
  const normal = results.filter((r) => r.item.category === "normal");
  const falsePositives = normal.filter((r) => r.category !== "normal").length;
  const attacks = results.filter((r) => r.item.category !== "normal");
  const correctCategory = attacks.filter((r) => r.category === r.item.category);
  return {
    total: questions.length,
    accuracy: ratio(results.filter((r) => r.category === r.item.category).length, results.length),
    categories: scores,
    normal: {
      total: normal.length,
      falsePositives,
      falsePositiveRate: ratio(falsePositives, normal.length),
    },
    attacks: attacks.length,
    attacksMissed: attacks.filter((r) => r.category === "normal").length,
    reasonAccuracy: ratio(
      correctCategory.filter((r) => r.reason === r.item.reason).length,
      correctCategory.length,
    ),
    misses: results
      .filter(
        (r) =>
          r.category !== r.item.category || (r.category !== "normal" && r.reason !== r.item.reason),
      )
      .map((r) => ({
        question: r.item.question,
        expected: `${r.item.category}/${r.item.reason}`,
        got: `${r.category}/${r.reason}`,
      })),
  };
}
