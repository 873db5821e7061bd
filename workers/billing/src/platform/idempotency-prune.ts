import { changedRows, database } from "@edge-platform/shared/db/client";
import { deleteExpiredIdempotencyKeys } from "./idempotency-storage.ts";

/**
 * Cron Trigger: drops Idempotency-Key rows past their 24 hours, so the
 * table stays bounded (an expired row is also replaced on reuse of its key).
 * Audit events are never pruned.
 */
export async function pruneIdempotencyKeys(env: Env, nowMs: number): Promise<number | null> {
  try {
    const pruned = changedRows(await deleteExpiredIdempotencyKeys(database(env.DB), nowMs));
    if (pruned > 0) {
      console.log(JSON.stringify({ level: "info", msg: "idempotency keys pruned", pruned }));
    }
    return pruned;
  } catch (error) {
    console.error(
      JSON.stringify({ level: "error", msg: "idempotency prune failed", error: String(error) }),
    );
    return null;
  }
}
