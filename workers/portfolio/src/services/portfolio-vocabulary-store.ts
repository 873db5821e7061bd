import type { DrizzleD1Database } from "drizzle-orm/d1";
import { readState } from "../db/content-state.ts";
import { type PortfolioVocabulary, parseVocabulary } from "../domain/portfolio-vocabulary.ts";

/**
 * The portfolio vocabulary the safety screen reads, stored by ingestion in
 * `content_state` (one row, written in the same batch as the chunks). A
 * chat reads it only when a question was refused for its subject, and the
 * parsed form is kept per isolate while the stored text is unchanged.
 */
export const VOCABULARY_STATE_KEY = "portfolio_vocabulary";

/** Bumped when the stored shape changes, so development content is re-ingested. */
export const VOCABULARY_FORMAT = 1;

let parsed: { json: string; vocabulary: PortfolioVocabulary } | null = null;

export async function readVocabulary(db: DrizzleD1Database): Promise<PortfolioVocabulary | null> {
  const json = await readState(db, VOCABULARY_STATE_KEY);
  if (!json) return null;
  if (parsed?.json === json) return parsed.vocabulary;
  const vocabulary = parseVocabulary(json);
  if (vocabulary) parsed = { json, vocabulary };
  return vocabulary;
}
