import { type Database, nowIso } from "@edge-platform/shared/db/client";
import { memberships, users } from "@edge-platform/shared/db/schema/identity";
import { and, eq, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";

import type { UserRow } from "../platform/index.ts";

export type NewUser = typeof users.$inferInsert;

export function findUserByEmail(db: Database, email: string) {
  return db.select().from(users).where(eq(users.email, email)).get();
}

export function insertUser(db: Database, user: NewUser) {
  return db.insert(users).values(user);
}

export function updateUser(
  db: Database,
  id: string,
  changes: Partial<Pick<UserRow, "firstName" | "lastName" | "isActive" | "passwordHash">>,
) {
  return db
    .update(users)
    .set({ ...changes, updatedAt: nowIso() })
    .where(eq(users.id, id))
    .returning()
    .get();
}

/** Ends every access token issued so far: they carry the old version. */
export function bumpTokenVersion(db: Database, userId: string) {
  return db
    .update(users)
    .set({ tokenVersion: sql`${users.tokenVersion} + 1`, updatedAt: nowIso() })
    .where(eq(users.id, userId));
}

/** Whether the two users hold a membership in at least one common tenant. */
export async function shareATenant(db: Database, userId: string, otherUserId: string) {
  const other = alias(memberships, "other");
  const row = await db
    .select({ tenantId: memberships.tenantId })
    .from(memberships)
    .innerJoin(other, and(eq(other.tenantId, memberships.tenantId), eq(other.userId, otherUserId)))
    .where(eq(memberships.userId, userId))
    .limit(1)
    .get();
  return row !== undefined;
}

/** New password hash and a bumped token version, returning the new version. */
export function setPasswordAndEndSessions(db: Database, userId: string, passwordHash: string) {
  return db
    .update(users)
    .set({ passwordHash, tokenVersion: sql`${users.tokenVersion} + 1`, updatedAt: nowIso() })
    .where(eq(users.id, userId))
    .returning({ tokenVersion: users.tokenVersion });
}
