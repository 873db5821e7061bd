import { AVERY_QUINN_PORTFOLIO } from "../content/avery-quinn.ts";
import { readState } from "../db/content-state.ts";
import { sha256Hex } from "../domain/hashing.ts";
import { DevContentSource } from "../providers/content-sources.ts";
import { type IngestDeps, type IngestResult, invalidateThenIngest } from "./ingestion.ts";
import { VOCABULARY_FORMAT } from "./portfolio-vocabulary-store.ts";

/**
 * Development mode ingests the fictional portfolio lazily, on the first
 * request that needs it (chat or the webhook), instead of in a start-up
 * script: it then works with any state directory (`npm run dev`, a fresh
 * `wrangler dev`, the test pool) and needs nothing outside this worker.
 * The stored marker is a hash of the content, the embedding model and the
 * chunking settings, so editing the content (or switching models) re-ingests
 * on the next request and invalidates answers cached from the old content;
 * otherwise the check is one indexed D1 read. Two concurrent first requests
 * may both ingest; upserts by chunk id make that harmless.
 */
export const DEV_CONTENT_STATE_KEY = "dev_content_version";

export async function devContentVersion(deps: IngestDeps): Promise<string> {
  return sha256Hex(
    JSON.stringify({
      content: AVERY_QUINN_PORTFOLIO,
      model: deps.embedder.model,
      chunking: deps.chunking,
      vocabulary: VOCABULARY_FORMAT,
    }),
  );
}

export async function ensureDevContent(deps: IngestDeps): Promise<IngestResult | null> {
  const version = await devContentVersion(deps);
  if ((await readState(deps.db, DEV_CONTENT_STATE_KEY)) === version) return null;
  return invalidateThenIngest(deps, () => new DevContentSource().load(), {
    key: DEV_CONTENT_STATE_KEY,
    value: version,
  });
}

export async function reingestDevContent(deps: IngestDeps) {
  const version = await devContentVersion(deps);
  return invalidateThenIngest(deps, () => new DevContentSource().load(), {
    key: DEV_CONTENT_STATE_KEY,
    value: version,
  });
}
