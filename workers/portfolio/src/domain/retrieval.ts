import { contentTerms, expandTerms } from "./text.ts";
import { round4 } from "./vectors.ts";

/**
 * Reranking, per-source caps and the confidence gate (contract §5.2–5.3),
 * with the original's sanity/linkedin sources named project/profile.
 */

export interface CandidateChunk {
  id: string;
  source: string;
  sourceId: string;
  itemId: string;
  title: string;
  content: string;
  chunkIndex: number;
  similarity: number;
}

export interface RankedChunk extends CandidateChunk {
  queryTermMatches: number;
  queryTermCoverage: number;
  score: number;
}

/** How many nearest neighbours to ask the index for, and how many to keep per source. */
export function candidateLimits(topK: number, topKPerSource = 2) {
  return { total: Math.max(topK * 4, 16), perSource: Math.max(topKPerSource + 6, 8) };
}

const MAX_CHUNKS_PER_ITEM = 3;
const SAME_ITEM_PENALTY = 0.08;

/** Keeps the `perSource` nearest chunks of each source, then the `total` nearest overall. */
export function limitCandidates(
  candidates: CandidateChunk[],
  limits: { total: number; perSource: number },
): CandidateChunk[] {
  const bySimilarity = [...candidates].sort((a, b) => b.similarity - a.similarity);
  const perSource = new Map<string, number>();
  const perItem = new Map<string, number>();
  const kept: CandidateChunk[] = [];
  for (const candidate of bySimilarity) {
    const seen = perSource.get(candidate.source) ?? 0;
    const seenItem = perItem.get(candidate.itemId) ?? 0;
    // Diversity: a project's overview, contributions and links must not fill the source's slots.
    if (seen >= limits.perSource || seenItem >= MAX_CHUNKS_PER_ITEM) continue;
    perSource.set(candidate.source, seen + 1);
    perItem.set(candidate.itemId, seenItem + 1);
    kept.push({ ...candidate, similarity: round4(candidate.similarity) });
    if (kept.length >= limits.total) break;
  }
  return kept;
}

const INTENTS = {
  project: ["project", "build", "portfolio", "product", "app"],
  skill: ["skill", "stack", "tech", "technology"],
  experience: ["experience", "year", "career", "work", "role"],
  feedback: ["testimonial", "feedback", "recommendation", "colleague", "manager", "say"],
} as const;

type Intent = keyof typeof INTENTS;

function activeIntents(terms: Set<string>): Set<Intent> {
  const active = new Set<Intent>();
  for (const [intent, words] of Object.entries(INTENTS) as [Intent, readonly string[]][])
    if (words.some((word) => terms.has(word))) active.add(intent);
  return active;
}

function intentAdjustment(chunk: CandidateChunk, intents: Set<Intent>): number {
  const content = chunk.content.toLowerCase();
  let delta = 0;
  if (intents.has("project")) {
    if (chunk.source === "project") delta += 0.08;
    if (chunk.source === "testimonial") delta -= 0.05;
    if (content.includes("project:")) delta += 0.05;
  }
  if (intents.has("skill")) {
    if (["resume", "project", "profile"].includes(chunk.source)) delta += 0.05;
    if (chunk.sourceId.includes("recommendation")) delta -= 0.04;
    if (content.includes("technologies:") || content.includes("languages:")) delta += 0.05;
  }
  if (intents.has("experience")) {
    if (chunk.source === "resume" || chunk.source === "profile") delta += 0.06;
    if (chunk.source === "testimonial") delta -= 0.03;
  }
  if (intents.has("feedback")) {
    if (chunk.source === "testimonial" || chunk.source === "profile") delta += 0.08;
    if (content.includes("testimonial:") || content.includes("recommendation from:")) delta += 0.05;
  }
  return delta;
}

const SOURCE_CAPS: Record<Intent | "none", Record<string, number>> = {
  project: { resume: 3, project: 4, profile: 1, testimonial: 1 },
  skill: { resume: 4, project: 3, profile: 2, testimonial: 1 },
  // Jobs are one chunk each, so a career question needs room for every one of them.
  experience: { resume: 5, project: 2, profile: 2, testimonial: 1 },
  feedback: { resume: 1, project: 1, profile: 3, testimonial: 3 },
  none: { resume: 4, project: 3, profile: 2, testimonial: 2 },
};

function capsFor(intents: Set<Intent>): Record<string, number> {
  for (const intent of ["project", "skill", "experience", "feedback"] as const)
    if (intents.has(intent)) return SOURCE_CAPS[intent];
  return SOURCE_CAPS.none;
}

/**
 * BM25 (k1 1.2, b 0.75) of each candidate for the question's terms, with
 * document frequencies from the candidate pool (locally every chunk; with
 * Vectorize the nearest few dozen). Rare terms (a company, a technology, a
 * project name) weigh most, which bag-of-words cosine does not do. Synonyms
 * count at a third of a term's weight.
 */
export function bm25Scores(
  terms: ReadonlySet<string>,
  expanded: ReadonlySet<string>,
  candidates: { content: string }[],
): number[] {
  const docs = candidates.map((candidate) => {
    const frequencies = new Map<string, number>();
    const tokens = contentTerms(candidate.content).map(baseForm);
    for (const term of tokens) frequencies.set(term, (frequencies.get(term) ?? 0) + 1);
    return { frequencies, length: tokens.length };
  });
  if (docs.length === 0) return [];
  const averageLength = docs.reduce((sum, doc) => sum + doc.length, 0) / docs.length || 1;
  const weights = new Map<string, number>();
  for (const term of expanded) {
    const base = baseForm(term);
    weights.set(base, Math.max(weights.get(base) ?? 0, terms.has(term) ? 1 : SYNONYM_WEIGHT));
  }
  const idf = new Map<string, number>();
  for (const term of weights.keys()) {
    const df = docs.filter((doc) => doc.frequencies.has(term)).length;
    idf.set(term, Math.log(1 + (docs.length - df + 0.5) / (df + 0.5)));
  }
  return docs.map((doc) => {
    let score = 0;
    for (const [term, weight] of weights) {
      const tf = doc.frequencies.get(term) ?? 0;
      if (tf === 0) continue;
      const norm = 1 - BM25_B + (BM25_B * doc.length) / averageLength;
      score += weight * idf.get(term)! * ((tf * (BM25_K1 + 1)) / (tf + BM25_K1 * norm));
    }
    return score;
  });
}

/** "mentored", "mentoring" and "mentor" count as one term for BM25. */
function baseForm(term: string): string {
  for (const suffix of ["ing", "ed", "es", "s"])
    if (term.endsWith(suffix) && term.length - suffix.length >= 4 && /^[a-z]+$/.test(term))
      return term.slice(0, -suffix.length);
  return term;
}

const BM25_K1 = 1.2;
const BM25_B = 0.75;
const SYNONYM_WEIGHT = 1 / 3;
/** BM25 adds up to this much to a chunk's score, half of it at BM25_HALF. */
const BM25_WEIGHT = 0.3;
const BM25_HALF = 3;
/** A question naming a year favours the chunk whose date range covers it ("Where did Avery work in 2019?"). */
const YEAR_BONUS = 0.15;

function coversYear(content: string, year: number): boolean {
  if (new RegExp(`\\b${year}\\b`).test(content)) return true;
  for (const match of content.matchAll(
    /\b((?:19|20)\d\d)\s*(?:to|-|–)\s*((?:19|20)\d\d|present)\b/gi,
  )) {
    const to = /^\d/.test(match[2]!) ? Number(match[2]) : Number.POSITIVE_INFINITY;
    if (Number(match[1]) <= year && year <= to) return true;
  }
  return false;
}

/**
 * Scores candidates against the question and takes a diverse top-k under
 * per-source caps. `ignoredTerms` (the person's name, which every chunk
 * mentions) count neither as evidence nor in the coverage denominator.
 */
export function rerank(
  question: string,
  candidates: CandidateChunk[],
  topK: number,
  ignoredTerms: ReadonlySet<string> = new Set(),
): RankedChunk[] {
  const terms = new Set(contentTerms(question).filter((term) => !ignoredTerms.has(term)));
  const expanded = expandTerms(terms);
  const intents = activeIntents(expanded);
  const lexical = bm25Scores(terms, expanded, candidates);
  const years = [...question.matchAll(/\b(?:19|20)\d\d\b/g)].map((match) => Number(match[0]));
  const ranked: RankedChunk[] = candidates.map((candidate, index) => {
    const chunkTerms = new Set(contentTerms(candidate.content));
    let matches = 0;
    for (const term of expanded) if (chunkTerms.has(term)) matches++;
    // Coverage counts the question's own terms, each met by itself or a synonym: expanding
    // "country" to seven location words must not make a chunk that says "based in" look weak.
    let covered = 0;
    for (const term of terms)
      if ([...expandTerms([term])].some((t) => chunkTerms.has(t))) covered++;
    const coverage = terms.size === 0 ? 0 : round4(covered / terms.size);
    const bm25 = lexical[index]!;
    const score = round4(
      candidate.similarity +
        0.18 * coverage +
        intentAdjustment(candidate, intents) +
        BM25_WEIGHT * (bm25 / (bm25 + BM25_HALF)) +
        (years.some((year) => coversYear(candidate.content, year)) ? YEAR_BONUS : 0),
    );
    return { ...candidate, queryTermMatches: matches, queryTermCoverage: coverage, score };
  });
  ranked.sort((a, b) => b.score - a.score || b.similarity - a.similarity);
  // Caps follow the question's own words, not the synonym expansion.
  const caps = capsFor(activeIntents(terms));
  const taken = new Map<string, number>();
  const perItem = new Map<string, number>();
  const selected: RankedChunk[] = [];
  const remaining = [...ranked];
  // Greedy, with a small penalty for a second chunk of an item already
  // chosen, so a list question sees several projects, not one project's
  // overview, contributions and links.
  while (selected.length < topK && remaining.length > 0) {
    let bestIndex = -1;
    let bestValue = Number.NEGATIVE_INFINITY;
    remaining.forEach((chunk, index) => {
      if ((taken.get(chunk.source) ?? 0) >= (caps[chunk.source] ?? 2)) return;
      const value = chunk.score - SAME_ITEM_PENALTY * (perItem.get(chunk.itemId) ?? 0);
      if (value > bestValue) {
        bestValue = value;
        bestIndex = index;
      }
    });
    if (bestIndex < 0) break;
    const [chunk] = remaining.splice(bestIndex, 1);
    taken.set(chunk!.source, (taken.get(chunk!.source) ?? 0) + 1);
    perItem.set(chunk!.itemId, (perItem.get(chunk!.itemId) ?? 0) + 1);
    selected.push(chunk!);
  }
  return selected;
}

export type GateReason = "empty_results" | "low_similarity" | "low_term_coverage";

export type GateDecision =
  | { confident: true; reason: "ok"; topScore: number; bestCoverage: number }
  | { confident: false; reason: GateReason; topScore: number; bestCoverage: number };

export interface GateThresholds {
  minSimilarity: number;
  strongSimilarity: number;
  minQueryCoverage: number;
}

/** Answers only when retrieval found strong enough evidence (contract §5.3). */
export function assessConfidence(
  question: string,
  chunks: Pick<RankedChunk, "score" | "similarity" | "queryTermCoverage">[],
  thresholds: GateThresholds,
  ignoredTerms: ReadonlySet<string> = new Set(),
): GateDecision {
  if (chunks.length === 0)
    return { confident: false, reason: "empty_results", topScore: 0, bestCoverage: 0 };
  const topScore = Math.max(...chunks.map((chunk) => chunk.score ?? chunk.similarity));
  const bestCoverage = Math.max(0, ...chunks.map((chunk) => chunk.queryTermCoverage ?? 0));
  const facts = { topScore, bestCoverage };
  if (contentTerms(question).filter((term) => !ignoredTerms.has(term)).length === 0)
    return topScore >= thresholds.minSimilarity
      ? { confident: true, reason: "ok", ...facts }
      : { confident: false, reason: "low_similarity", ...facts };
  if (topScore >= thresholds.strongSimilarity) return { confident: true, reason: "ok", ...facts };
  if (topScore < thresholds.minSimilarity)
    return { confident: false, reason: "low_similarity", ...facts };
  if (bestCoverage < thresholds.minQueryCoverage)
    return { confident: false, reason: "low_term_coverage", ...facts };
  return { confident: true, reason: "ok", ...facts };
}
