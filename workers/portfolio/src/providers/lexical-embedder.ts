import { contentTerms, SYNONYM_GROUPS } from "../domain/text.ts";
import type { Embedder, EmbeddingKind } from "./types.ts";

/**
 * A deterministic lexical embedder for local development and tests (Workers
 * AI has no local mode). Each content term (stemmed, stop words dropped) and
 * each synonym group it belongs to is hashed (FNV-1a) into one signed
 * dimension with a sub-linear term-frequency weight.
 *
 * Why the constant component: bag-of-words cosine between a six-word
 * question and a hundred-word chunk is small even when every question word
 * is in the chunk, while the retrieval gate's thresholds (0.50 / 0.72) were
 * set for sentence embedders such as bge, whose similarities sit on a higher
 * baseline (unrelated English texts score around 0.4). Dimension 0 carries a
 * constant of weight ALPHA relative to the unit term vector, which maps term
 * cosine c to (ALPHA^2 + c) / (1 + ALPHA^2): unrelated text lands near 0.33,
 * below the 0.50 floor, and a chunk holding the question's terms clears it.
 * Identical texts still score exactly 1 (the semantic cache's 0.95 bar).
 */
export const LEXICAL_MODEL = "lexical-fnv-1024-v2";
const DIMENSIONS = 1024;
const ALPHA_SQUARED = 0.5;
const GROUP_WEIGHT = 1;

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

const GROUP_OF = new Map<string, number>();
SYNONYM_GROUPS.forEach((group, index) => {
  for (const term of group) GROUP_OF.set(term, index);
});

export function lexicalVector(text: string): number[] {
  const frequencies = new Map<string, number>();
  const groups = new Set<number>();
  for (const term of contentTerms(text)) {
    frequencies.set(term, (frequencies.get(term) ?? 0) + 1);
    const group = GROUP_OF.get(term);
    if (group !== undefined) groups.add(group);
  }
  const vector = new Array<number>(DIMENSIONS).fill(0);
  if (frequencies.size === 0) return vector;
  const add = (feature: string, weight: number) => {
    const hash = fnv1a(feature);
    const index = 1 + (hash % (DIMENSIONS - 1));
    vector[index]! += hash & 0x80000000 ? -weight : weight;
  };
  for (const [term, count] of frequencies) add(term, 1 + Math.log(count));
  for (const group of groups) add(`@group:${group}`, GROUP_WEIGHT);
  let termNorm = 0;
  for (const value of vector) termNorm += value * value;
  termNorm = Math.sqrt(termNorm);
  vector[0] = Math.sqrt(ALPHA_SQUARED) * termNorm;
  const length = termNorm * Math.sqrt(1 + ALPHA_SQUARED);
  return vector.map((value) => value / length);
}

export class LexicalEmbedder implements Embedder {
  readonly model = LEXICAL_MODEL;

  async embed(texts: string[], _kind: EmbeddingKind): Promise<number[][]> {
    return texts.map(lexicalVector);
  }
}
