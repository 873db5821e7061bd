import { type Database, nowIso } from "@edge-platform/shared/db/client";
import {
  passwordResetTokens,
  refreshTokens,
  users,
} from "@edge-platform/shared/db/schema/identity";
import { and, eq, gt, isNull, or, sql } from "drizzle-orm";

export type RefreshTokenRow = typeof refreshTokens.$inferSelect;

export function insertRefreshToken(
  db: Database,
  row: { id: string; userId: string; familyId: string; tokenHash: string; expiresAt: string },
) {
  return db.insert(refreshTokens).values(row);
}

export function findRefreshToken(db: Database, tokenHash: string) {
  return db.select().from(refreshTokens).where(eq(refreshTokens.tokenHash, tokenHash)).get();
}

/**
 * Rotation as one conditional pair, run in one batch: the successor is
 * inserted, in the presented token's family, only while the presented
 * token is still live, and then the presented token is revoked. Of two
 * concurrent refreshes with the same token exactly one changes a row; the
 * other sees a token rotated within the grace period.
 */
export function rotateRefreshToken(
  db: Database,
  presentedHash: string,
  successor: { id: string; tokenHash: string; expiresAt: string },
  now: string,
) {
  const live = and(
    eq(refreshTokens.tokenHash, presentedHash),
    isNull(refreshTokens.revokedAt),
    gt(refreshTokens.expiresAt, now),
  );
  const insert = db.insert(refreshTokens).select(
    db
      .select({
        id: sql<string>`${successor.id}`.as("id"),
        userId: refreshTokens.userId,
        tokenHash: sql<string>`${successor.tokenHash}`.as("token_hash"),
        expiresAt: sql<string>`${successor.expiresAt}`.as("expires_at"),
        revokedAt: sql<string | null>`NULL`.as("revoked_at"),
        createdAt: sql<string>`${now}`.as("created_at"),
        familyId: sql<string>`coalesce(${refreshTokens.familyId}, ${refreshTokens.id})`.as(
          "family_id",
        ),
      })
      .from(refreshTokens)
      .where(live),
  );
  const revoke = db.update(refreshTokens).set({ revokedAt: now }).where(live);
  return [insert, revoke] as const;
}

export function revokeRefreshTokenOfUser(db: Database, tokenHash: string, userId: string) {
  return db
    .update(refreshTokens)
    .set({ revokedAt: nowIso() })
    .where(
      and(
        eq(refreshTokens.tokenHash, tokenHash),
        eq(refreshTokens.userId, userId),
        isNull(refreshTokens.revokedAt),
      ),
    );
}

/** Ends one session: every live token of the family (the sign-in's first token and its successors). */
export function revokeRefreshTokenFamily(db: Database, familyId: string) {
  return db
    .update(refreshTokens)
    .set({ revokedAt: nowIso() })
    .where(
      and(
        or(eq(refreshTokens.familyId, familyId), eq(refreshTokens.id, familyId)),
        isNull(refreshTokens.revokedAt),
      ),
    );
}

export function revokeAllRefreshTokens(db: Database, userId: string) {
  return db
    .update(refreshTokens)
    .set({ revokedAt: nowIso() })
    .where(and(eq(refreshTokens.userId, userId), isNull(refreshTokens.revokedAt)));
}

export function retireUnusedResetTokens(db: Database, userId: string) {
  return db
    .update(passwordResetTokens)
    .set({ usedAt: nowIso() })
    .where(and(eq(passwordResetTokens.userId, userId), isNull(passwordResetTokens.usedAt)));
}

export function insertResetToken(
  db: Database,
  row: { id: string; userId: string; tokenHash: string; expiresAt: string },
) {
  return db.insert(passwordResetTokens).values(row);
}

export function findResetToken(db: Database, tokenHash: string) {
  return db
    .select()
    .from(passwordResetTokens)
    .where(eq(passwordResetTokens.tokenHash, tokenHash))
    .get();
}

/**
 * A password reset as one batch whose every write is conditional on the
 * token still being usable, the token being marked used last: a token
 * raced by two requests changes the password once.
 */
export function consumeResetToken(
  db: Database,
  token: { id: string; userId: string },
  newPasswordHash: string,
  now: string,
) {
  const usable = sql`EXISTS (SELECT 1 FROM password_reset_tokens
    WHERE id = ${token.id} AND used_at IS NULL AND expires_at > ${now})`;
  return [
    db
      .update(users)
      .set({
        passwordHash: newPasswordHash,
        tokenVersion: sql`${users.tokenVersion} + 1`,
        updatedAt: now,
      })
      .where(and(eq(users.id, token.userId), usable)),
    db
      .update(refreshTokens)
      .set({ revokedAt: now })
      .where(and(eq(refreshTokens.userId, token.userId), isNull(refreshTokens.revokedAt), usable)),
    db
      .update(passwordResetTokens)
      .set({ usedAt: now })
      .where(
        and(
          eq(passwordResetTokens.id, token.id),
          isNull(passwordResetTokens.usedAt),
          gt(passwordResetTokens.expiresAt, now),
        ),
      ),
  ] as const;
}
