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

/** FNV-1a, 32 bit, over UTF-16 code units. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

export interface SparseFeatures {
  indices: Int32Array;
  values: Float32Array;
}

/** Hashed, L2-normalised features of an already-folded text. */
export function featurise(folded: string): SparseFeatures {
  const counts = new Map<number, number>();
  const bump = (key: string, weight: number) => {
    const index = fnv1a(key) & MASK;
    counts.set(index, (counts.get(index) ?? 0) + weight);
  };
  const words = folded.split(/[^\p{L}\p{N}\p{M}]+/u).filter(Boolean);
  for (let i = 0; i < words.length; i++) {
    bump(`w:${words[i]}`, 1);
    if (i + 1 < words.length) bump(`b:${words[i]} ${words[i + 1]}`, 1);
  }
  const padded = ` ${words.join(" ")} `;
  const chars = [...padded];
  for (let n = 2; n <= 4; n++)
    for (let i = 0; i + n <= chars.length; i++)
      bump(`c:${chars.slice(i, i + n).join("")}`, CHAR_WEIGHT);
  let norm = 0;
  for (const value of counts.values()) norm += value * value;
  norm = Math.sqrt(norm) || 1;
  const indices = new Int32Array(counts.size);
  const values = new Float32Array(counts.size);
  let k = 0;
  for (const [index, value] of counts) {
    indices[k] = index;
    values[k] = value / norm;
    k++;
  }
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
  for (const view of views) {
    if (!view.trim()) continue;
    const probabilities = scoreText(model, view);
    let label: ClassifierVerdict["label"] = "unsupported_topic";
    let probability = -1;
    let normal = 0;
    model.labels.forEach((name, c) => {
      if (name === "normal_rag") normal = probabilities[c]!;
      else if (probabilities[c]! > probability) {
        probability = probabilities[c]!;
        label = name;
      }
    });
    const attackProbability = 1 - normal;
    if (attackProbability > best.attackProbability)
      best = { label, probability, attackProbability };
  }
  return best;
}
