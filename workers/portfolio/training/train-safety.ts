/**
 * `npm run train:safety`: trains the learned safety stage and writes
 * src/domain/safety-model.json (shipped with the worker) and the expanded
 * corpus eval/corpus/safety-corpus.jsonl (committed, for review).
 *
 * Reproducible: the corpus expansion, the shuffles and the initialisation
 * all come from one seed (SAFETY_SEED, default 15), so two runs write the
 * same bytes.
 *
 * 1. Expand the templates (eval/corpus/) into a labelled corpus.
 * 2. Dev fit: train on every family except the held-out dev families
 *    (chosen by a hash of the family name, never by row) and print dev
 *    figures: how a model does on phrasings it never saw.
 * 3. Final fit on all families; quantise to int8 per class; write the model.
 *
 * The frozen splits (eval/test-split/, eval/free-form/*.test.json) are read only to drop
 * corpus rows equal to one of their questions.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  type CorpusExample,
  generateCorpus,
  isDevFamily,
  seededRandom,
} from "../eval/corpus/generate.ts";
import { overlapKey } from "../eval/corpus/overlap.ts";
import { DEFAULT_SAFETY_THRESHOLDS, screenWithRules } from "../src/domain/safety.ts";
import {
  classifyViews,
  featurise,
  HASH_BITS,
  loadSafetyModel,
  SAFETY_LABELS,
  type SafetyModel,
  type SafetyModelFile,
  type SparseFeatures,
  scoreText,
} from "../src/domain/safety-classifier.ts";
import { normaliseQuestion } from "../src/domain/safety-normalise.ts";

const SUBJECT = { personName: "Avery Quinn", assistantName: "Ask Avery" };

const SEED = Number(process.env.SAFETY_SEED ?? 15);
const EPOCHS = Number(process.env.SAFETY_EPOCHS ?? 14);
const LEARNING_RATE = 0.8;
const L2 = 1e-6;
const DIMS = 1 << HASH_BITS;
const CLASSES = SAFETY_LABELS.length;
const ROOT = path.join(import.meta.dirname, "..");

interface Row {
  features: SparseFeatures;
  label: number;
  example: CorpusExample;
}

function rowsOf(examples: CorpusExample[]): Row[] {
  const rows: Row[] = [];
  for (const example of examples) {
    const label = SAFETY_LABELS.indexOf(example.label);
    const { primary, decoded } = normaliseQuestion(example.text);
    for (const view of [primary, ...decoded])
      rows.push({ features: featurise(view), label, example });
  }
  return rows;
}

function train(rows: Row[], seed: number): { weights: Float64Array; bias: Float64Array } {
  const random = seededRandom(seed);
  const weights = new Float64Array(CLASSES * DIMS);
  const bias = new Float64Array(CLASSES);
  const counts = new Array<number>(CLASSES).fill(0);
  for (const row of rows) counts[row.label]!++;
  // Balanced classes, softened: rare categories count more, without drowning the ordinary questions.
  const classWeight = counts.map((n) => (n === 0 ? 0 : Math.sqrt(rows.length / (CLASSES * n))));
  const order = rows.map((_, i) => i);
  const logits = new Float64Array(CLASSES);
  for (let epoch = 0; epoch < EPOCHS; epoch++) {
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    const rate = LEARNING_RATE / (1 + epoch * 0.35);
    for (const index of order) {
      const { features, label } = rows[index]!;
      let max = -Infinity;
      for (let c = 0; c < CLASSES; c++) {
        let sum = bias[c]!;
        const offset = c * DIMS;
        for (let k = 0; k < features.indices.length; k++)
          sum += weights[offset + features.indices[k]!]! * features.values[k]!;
        logits[c] = sum;
        if (sum > max) max = sum;
      }
      let total = 0;
      for (let c = 0; c < CLASSES; c++) {
        logits[c] = Math.exp(logits[c]! - max);
        total += logits[c]!;
      }
      const step = rate * classWeight[label]!;
      for (let c = 0; c < CLASSES; c++) {
        const gradient = logits[c]! / total - (c === label ? 1 : 0);
        if (Math.abs(gradient) < 1e-4) continue;
        bias[c] = bias[c]! - step * gradient * 0.1;
        const offset = c * DIMS;
        for (let k = 0; k < features.indices.length; k++) {
          const at = offset + features.indices[k]!;
          weights[at] = weights[at]! * (1 - L2) - step * gradient * features.values[k]!;
        }
      }
    }
  }
  return { weights, bias };
}

function quantise(weights: Float64Array, bias: Float64Array, examples: number): SafetyModelFile {
  const scales: number[] = [];
  const bytes = new Int8Array(weights.length);
  for (let c = 0; c < CLASSES; c++) {
    let max = 0;
    for (let j = 0; j < DIMS; j++) max = Math.max(max, Math.abs(weights[c * DIMS + j]!));
    const scale = max / 127 || 1;
    scales.push(scale);
    for (let j = 0; j < DIMS; j++) bytes[c * DIMS + j] = Math.round(weights[c * DIMS + j]! / scale);
  }
  return {
    labels: [...SAFETY_LABELS],
    hashBits: HASH_BITS,
    bias: [...bias].map((b) => Number(b.toFixed(6))),
    scales: scales.map((s) => Number(s.toPrecision(8))),
    weights: Buffer.from(bytes.buffer).toString("base64"),
    trainedOn: { examples, seed: SEED, epochs: EPOCHS },
  };
}

const pct = (n: number, d: number) => (d === 0 ? "  -  " : `${((100 * n) / d).toFixed(1)}%`);

function rulesOrClassifier(text: string, model: SafetyModel, threshold: number): boolean {
  const normalised = normaliseQuestion(text);
  if (screenWithRules(text, SUBJECT, normalised).bypass) return true;
  const { primary, segments, decoded } = normalised;
  return classifyViews(model, [primary, ...segments, ...decoded]).attackProbability >= threshold;
}

function report(
  title: string,
  file: SafetyModelFile,
  examples: CorpusExample[],
  threshold: number,
  perLabelLines = true,
) {
  const model = loadSafetyModel(file);
  let attacks = 0;
  let caught = 0;
  let normals = 0;
  let falsePositives = 0;
  const perLabel = new Map<string, { n: number; ok: number }>();
  const normalFamilies = new Map<string, { n: number; fp: number }>();
  for (const example of examples) {
    // The rules and the classifier. The worker's subject stages (personal
    // data, topic) are left out: corpus rows speak of many made-up people
    // ("Has Dana used Kotlin?"), not of one portfolio's owner.
    const flagged = rulesOrClassifier(example.text, model, threshold);
    const entry = perLabel.get(example.label) ?? { n: 0, ok: 0 };
    entry.n++;
    if (example.label === "normal_rag") {
      normals++;
      const family = normalFamilies.get(example.family) ?? { n: 0, fp: 0 };
      family.n++;
      if (flagged) family.fp++;
      normalFamilies.set(example.family, family);
      if (flagged) falsePositives++;
      else entry.ok++;
    } else {
      attacks++;
      if (flagged) {
        caught++;
        entry.ok++;
      }
    }
    perLabel.set(example.label, entry);
  }
  // Per-family average: one prolific template must not dominate the figure.
  const familyRates = [...normalFamilies.values()].map((family) => family.fp / family.n);
  const familyMacroFalsePositiveRate =
    familyRates.length === 0 ? 0 : familyRates.reduce((a, b) => a + b, 0) / familyRates.length;
  console.log(
    `${title}: ${examples.length} examples, attack recall ${pct(caught, attacks)} (${caught}/${attacks}), ordinary false positives ${pct(falsePositives, normals)} (${falsePositives}/${normals}; per-family average ${pct(familyMacroFalsePositiveRate, 1)}) at threshold ${threshold}`,
  );
  if (perLabelLines)
    for (const [label, entry] of [...perLabel].sort())
      console.log(
        `  ${label.padEnd(26)} ${String(entry.n).padStart(6)}  ${pct(entry.ok, entry.n).padStart(6)}`,
      );
  return {
    examples: examples.length,
    families: new Set(examples.map((example) => example.family)).size,
    threshold,
    attackRecall: attacks === 0 ? 1 : caught / attacks,
    ordinary: normals,
    falsePositives,
    falsePositiveRate: normals === 0 ? 0 : falsePositives / normals,
    familyMacroFalsePositiveRate,
  };
}

// Decontamination: a template expansion can produce a sentence that a
// frozen split also holds ("How old is Avery?"); such rows are dropped so
// that no test question is trained on: the template test split and the
// free-form split (hand-written questions). The splits are read for this
// comparison only.
const frozenSplits = [
  "eval/test-split/safety-test.json",
  "eval/free-form/safety-free-form.test.json",
];
const testQuestions = new Set(
  frozenSplits.flatMap((file) =>
    (
      JSON.parse(readFileSync(path.join(ROOT, file), "utf8")) as {
        questions: { question: string }[];
      }
    ).questions.map((item) => overlapKey(item.question)),
  ),
);
const expanded = generateCorpus(SEED);
const corpus = expanded.filter((example) => !testQuestions.has(overlapKey(example.text)));
console.log(
  `decontamination: ${expanded.length - corpus.length} rows equal to a test-split question dropped`,
);
const devExamples = corpus.filter((example) => isDevFamily(example.family));
const trainExamples = corpus.filter((example) => !isDevFamily(example.family));
const devFamilies = new Set(devExamples.map((example) => example.family));
console.log(
  `corpus: ${corpus.length} examples, ${new Set(corpus.map((e) => e.family)).size} families, ${new Set(corpus.map((e) => e.language)).size} languages; dev: ${devFamilies.size} families held out`,
);
const threshold = Number(process.env.SAFETY_THRESHOLD ?? DEFAULT_SAFETY_THRESHOLDS.classifier);

const devFit = train(rowsOf(trainExamples), SEED);
const devModel = quantise(devFit.weights, devFit.bias, trainExamples.length);
report("dev fit, training families", devModel, trainExamples, threshold);
const devReport = report("dev fit, held-out dev families", devModel, devExamples, threshold);
// The threshold to configure: the lowest whose dev false-positive rate is within
// 1%. The target allows at most one refused ordinary question in about a
// hundred, so the dev figure needs headroom below that 2% line.
let recommended = 0.95;
for (const candidate of [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9]) {
  const sweep = report(`  sweep ${candidate}`, devModel, devExamples, candidate, false);
  if (sweep.falsePositiveRate <= 0.01) {
    recommended = candidate;
    break;
  }
}
console.log(
  `recommended SAFETY_CLASSIFIER_THRESHOLD (lowest with dev false positives <= 1%): ${recommended}`,
);
if (process.argv.includes("--dev-misses")) {
  const model = loadSafetyModel(devModel);
  for (const example of devExamples) {
    const { primary, segments, decoded } = normaliseQuestion(example.text);
    let attack = 0;
    for (const view of [primary, ...segments, ...decoded])
      attack = Math.max(attack, 1 - scoreText(model, view)[0]!);
    if (attack >= threshold !== (example.label !== "normal_rag"))
      console.log(`  miss ${example.label} ${attack.toFixed(2)} ${JSON.stringify(example.text)}`);
  }
}

writeFileSync(
  path.join(ROOT, "eval/corpus/dev-report.json"),
  `${JSON.stringify({ ...devReport, recommendedThreshold: recommended }, null, 1)}\n`,
);

const finalFit = train(rowsOf(corpus), SEED);
const finalModel = quantise(finalFit.weights, finalFit.bias, corpus.length);
report("final fit, all families", finalModel, corpus, threshold);

writeFileSync(path.join(ROOT, "src/domain/safety-model.json"), `${JSON.stringify(finalModel)}\n`);
writeFileSync(
  path.join(ROOT, "eval/corpus/safety-corpus.jsonl"),
  `${corpus.map((example) => JSON.stringify({ ...example, split: isDevFamily(example.family) ? "dev" : "train" })).join("\n")}\n`,
);
console.log(
  "wrote src/domain/safety-model.json, eval/corpus/safety-corpus.jsonl and eval/corpus/dev-report.json",
);
