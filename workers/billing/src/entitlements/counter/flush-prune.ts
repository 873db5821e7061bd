import { pruneUsageFlushes } from "../../usage/index.ts";
import { flushIdsRetentionMs } from "../domain/usage-counter-settings.ts";

/** Rows deleted per statement, and statements per run: one run stays short on D1's single writer. */
const PRUNE_BATCH = 10_000;
const PRUNE_MAX_ROUNDS = 20;

/**
 * Cron Trigger: forgets counter flush ids (usage_flushes) older than
 * USAGE_FLUSH_IDS_RETENTION_SECONDS that no retry can need (each tenant's
 * latest stays: usage/aggregates-storage.ts), so the table holds about that
 * long's flushes rather than every flush ever applied.
 */
export async function pruneUsageFlushIds(env: Env, nowMs: number): Promise<number | null> {
  const appliedBefore = new Date(
    nowMs - flushIdsRetentionMs(env.USAGE_FLUSH_IDS_RETENTION_SECONDS),
  ).toISOString();
  try {
    let pruned = 0;
    for (let round = 0; round < PRUNE_MAX_ROUNDS; round++) {
      const deleted = await pruneUsageFlushes(env.DB, appliedBefore, PRUNE_BATCH);
      pruned += deleted;
      if (deleted < PRUNE_BATCH) break;
    }
    if (pruned > 0) {
      console.log(JSON.stringify({ level: "info", msg: "usage flush ids pruned", pruned }));
    }
    return pruned;
  } catch (error) {
    console.error(
      JSON.stringify({ level: "error", msg: "usage flush id prune failed", error: String(error) }),
    );
    return null;
  }
}
