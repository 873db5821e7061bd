/**
 * The learned safety stage: multinomial logistic regression over hashed
 * word unigrams, word bigrams and character 2–4-grams of the normalised
 * question. Pure and synchronous; the weights ship with the worker as a
 * JSON module (int8 per class with a scale), so scoring needs no network
 * and no model download. Trained by `npm run train:safety`
 * (workers/portfolio/training/train-safety.ts).
 */

export const SAFETY_LABELS = [
  "normal_rag",
  "prompt_override_attempt",
  "explicit_content",
  "personhood_confusion",
  "assistant_identity",
  "compensation",
  "sensitive_personal_data",
  "unsupported_topic",
] as const;
export type SafetyLabel = (typeof SAFETY_LABELS)[number];

export const HASH_BITS = 16;
const MASK = (1 << HASH_BITS) - 1;
const CHAR_WEIGHT = 0.5;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a, 32 bit, over UTF-16 code units, continuing from `hash`. */
function fnv1a(text: string, hash = FNV_OFFSET, from = 0, to = text.length): number {
  let h = hash;
  for (let i = from; i < to; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return h;
}

const WORD_SEED = fnv1a("w:");
const BIGRAM_SEED = fnv1a("b:");
const CHAR_SEED = fnv1a("c:");
const SPACE = " ".charCodeAt(0);

export interface SparseFeatures {
  indices: Int32Array;
  values: Float32Array;
}

// One accumulator reused across calls (scoring is synchronous): no per-n-gram allocation.
const accumulator = new Float64Array(1 << HASH_BITS);
const touched: number[] = [];

function bump(hash: number, weight: number): void {
  const index = (hash >>> 0) & MASK;
  if (accumulator[index] === 0) touched.push(index);
  accumulator[index] = accumulator[index]! + weight;
}

/** Hashed, L2-normalised features of an already-folded text. */
export function featurise(folded: string): SparseFeatures {
  const words = folded.split(/[^\p{L}\p{N}\p{M}]+/u).filter(Boolean);
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    bump(fnv1a(word, WORD_SEED), 1);
    if (i + 1 < words.length) {
      let h = fnv1a(word, BIGRAM_SEED);
      h = Math.imul(h ^ SPACE, FNV_PRIME);
      bump(fnv1a(words[i + 1]!, h), 1);
    }
  }
  const padded = ` ${words.join(" ")} `;
  for (let n = 2; n <= 4; n++)
    for (let i = 0; i + n <= padded.length; i++)
      bump(fnv1a(padded, CHAR_SEED, i, i + n), CHAR_WEIGHT);
  let norm = 0;
  for (const index of touched) norm += accumulator[index]! * accumulator[index]!;
  norm = Math.sqrt(norm) || 1;
  const indices = new Int32Array(touched.length);
  const values = new Float32Array(touched.length);
  for (let k = 0; k < touched.length; k++) {
    const index = touched[k]!;
    indices[k] = index;
    values[k] = accumulator[index]! / norm;
    accumulator[index] = 0;
  }
  touched.length = 0;
  return { indices, values };
}

/** The shipped model's JSON shape. */
export interface SafetyModelFile {
  labels: string[];
  hashBits: number;
  bias: number[];
  /** Per-class multiplier turning the int8 weights back into floats. */
  scales: number[];
  /** base64 of int8 weights, class-major: class c, bucket j at c * 2^hashBits + j. */
  weights: string;
  trainedOn: { examples: number; seed: number; epochs: number };
}

export interface SafetyModel {
  labels: SafetyLabel[];
  bias: Float64Array;
  scales: Float64Array;
  weights: Int8Array;
  dims: number;
}

export function loadSafetyModel(file: SafetyModelFile): SafetyModel {
  if (file.hashBits !== HASH_BITS)
    throw new Error(`model hashed to ${file.hashBits} bits, code to ${HASH_BITS}`);
  const binary = atob(file.weights);
  const weights = new Int8Array(binary.length);
  for (let i = 0; i < binary.length; i++) weights[i] = (binary.charCodeAt(i) << 24) >> 24;
  return {
    labels: file.labels as SafetyLabel[],
    bias: Float64Array.from(file.bias),
    scales: Float64Array.from(file.scales),
    weights,
    dims: 1 << file.hashBits,
  };
}

/** Class probabilities (softmax) for one folded text, in `model.labels` order. */
export function scoreText(model: SafetyModel, folded: string): Float64Array {
  const { indices, values } = featurise(folded);
  const classes = model.labels.length;
  const logits = new Float64Array(classes);
  for (let c = 0; c < classes; c++) {
    const offset = c * model.dims;
    let sum = 0;
    for (let k = 0; k < indices.length; k++)
      sum += model.weights[offset + indices[k]!]! * values[k]!;
    logits[c] = model.bias[c]! + sum * model.scales[c]!;
  }
  let max = -Infinity;
  for (const value of logits) max = Math.max(max, value);
  let total = 0;
  for (let c = 0; c < classes; c++) {
    logits[c] = Math.exp(logits[c]! - max);
    total += logits[c]!;
  }
  for (let c = 0; c < classes; c++) logits[c] = logits[c]! / total;
  return logits;
}

export interface ClassifierVerdict {
  /** The most likely non-normal label and its probability. */
  label: Exclude<SafetyLabel, "normal_rag">;
  probability: number;
  /** 1 − P(normal): how likely the text is any kind of attack. */
  attackProbability: number;
}

/** The strongest non-normal verdict over several views of one question. */
export function classifyViews(model: SafetyModel, views: string[]): ClassifierVerdict {
  let best: ClassifierVerdict = {
    label: "unsupported_topic",
    probability: 0,
    attackProbability: 0,
  };
  const normalIndex = model.labels.indexOf("normal_rag");
  for (const view of views) {
    if (!view.trim()) continue;
    const probabilities = scoreText(model, view);
    let labelIndex = -1;
    for (let c = 0; c < probabilities.length; c++)
      if (c !== normalIndex && (labelIndex < 0 || probabilities[c]! > probabilities[labelIndex]!))
        labelIndex = c;
    const attackProbability = 1 - probabilities[normalIndex]!;
    if (attackProbability > best.attackProbability)
      best = {
        label: model.labels[labelIndex] as ClassifierVerdict["label"],
        probability: probabilities[labelIndex]!,
        attackProbability,
      };
  }
  return best;
}
