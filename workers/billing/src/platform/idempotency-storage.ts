import type { Database } from "@edge-platform/shared/db/client";
import { idempotencyKeys } from "@edge-platform/shared/db/schema/audit";
import { and, eq, lt, or, sql } from "drizzle-orm";

export type IdempotencyKeyRow = typeof idempotencyKeys.$inferSelect;

export interface ClaimRequest {
  scope: string;
  key: string;
  requestHash: string;
  nowMs: number;
  ttlMs: number;
  lockMs: number;
}

/**
 * Inserts the IN_FLIGHT row, or takes over one that expired or whose
 * request died (stale lock, same request), in one statement: of racing
 * requests exactly one gets a row back and runs the handler. A takeover of
 * a stale lock keeps `createdAtMs` (the counter's request id stays the same,
 * so work that did happen is not redone); an expired row starts afresh.
 */
export function claimIdempotencyKey(db: Database, claim: ClaimRequest) {
  const expired = lt(idempotencyKeys.expiresAtMs, claim.nowMs + 1);
  return db
    .insert(idempotencyKeys)
    .values({
      scope: claim.scope,
      key: claim.key,
      requestHash: claim.requestHash,
      state: "IN_FLIGHT",
      createdAtMs: claim.nowMs,
      expiresAtMs: claim.nowMs + claim.ttlMs,
      lockedUntilMs: claim.nowMs + claim.lockMs,
    })
    .onConflictDoUpdate({
      target: [idempotencyKeys.scope, idempotencyKeys.key],
      set: {
        requestHash: sql`excluded.request_hash`,
        state: "IN_FLIGHT",
        createdAtMs: sql`CASE WHEN ${expired} THEN excluded.created_at_ms ELSE ${idempotencyKeys.createdAtMs} END`,
        expiresAtMs: sql`CASE WHEN ${expired} THEN excluded.expires_at_ms ELSE ${idempotencyKeys.expiresAtMs} END`,
        lockedUntilMs: sql`excluded.locked_until_ms`,
        responseStatus: null,
        responseBody: null,
        responseContentType: null,
      },
      setWhere: or(
        expired,
        and(
          eq(idempotencyKeys.state, "IN_FLIGHT"),
          lt(idempotencyKeys.lockedUntilMs, claim.nowMs),
          sql`${idempotencyKeys.requestHash} = excluded.request_hash`,
        ),
      ),
    })
    .returning()
    .get();
}

export function findIdempotencyKey(db: Database, scope: string, key: string) {
  return db
    .select()
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key)))
    .get();
}

/** Records the answer of the claim that ran (identified by its `createdAtMs`). */
export function completeIdempotencyKey(
  db: Database,
  claim: { scope: string; key: string; createdAtMs: number },
  answer: { status: number; body: string; contentType: string | null },
) {
  return db
    .update(idempotencyKeys)
    .set({
      state: "COMPLETED",
      responseStatus: answer.status,
      responseBody: answer.body,
      responseContentType: answer.contentType,
    })
    .where(
      and(
        eq(idempotencyKeys.scope, claim.scope),
        eq(idempotencyKeys.key, claim.key),
        eq(idempotencyKeys.createdAtMs, claim.createdAtMs),
        eq(idempotencyKeys.state, "IN_FLIGHT"),
      ),
    );
}

/** Frees the key after an answer that is not kept (5xx, 429), so a retry runs again. */
export function releaseIdempotencyKey(
  db: Database,
  claim: { scope: string; key: string; createdAtMs: number },
) {
  return db
    .delete(idempotencyKeys)
    .where(
      and(
        eq(idempotencyKeys.scope, claim.scope),
        eq(idempotencyKeys.key, claim.key),
        eq(idempotencyKeys.createdAtMs, claim.createdAtMs),
        eq(idempotencyKeys.state, "IN_FLIGHT"),
      ),
    );
}

/** The Cron Trigger's prune: rows past their 24 hours. */
export function deleteExpiredIdempotencyKeys(db: Database, nowMs: number) {
  return db.delete(idempotencyKeys).where(lt(idempotencyKeys.expiresAtMs, nowMs));
}
