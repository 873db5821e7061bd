import type { Database } from "@edge-platform/shared/db/client";
import { deadLetterEvents } from "@edge-platform/shared/db/schema/usage";
import { and, count, desc, eq, type SQL } from "drizzle-orm";

export type DeadLetterRow = typeof deadLetterEvents.$inferSelect;

export interface DeadLetterFilter {
  status?: DeadLetterRow["status"];
  failureStage?: DeadLetterRow["failureStage"];
  tenantId?: string;
}

function where(filter: DeadLetterFilter): SQL | undefined {
  const conditions: SQL[] = [];
  if (filter.status) conditions.push(eq(deadLetterEvents.status, filter.status));
  if (filter.failureStage) conditions.push(eq(deadLetterEvents.failureStage, filter.failureStage));
  if (filter.tenantId) conditions.push(eq(deadLetterEvents.tenantId, filter.tenantId));
  return conditions.length > 0 ? and(...conditions) : undefined;
}

export async function listDeadLetters(
  db: Database,
  filter: DeadLetterFilter,
  offset: number,
  limit: number,
) {
  const condition = where(filter);
  const [rows, total] = await Promise.all([
    db
      .select()
      .from(deadLetterEvents)
      .where(condition)
      .orderBy(desc(deadLetterEvents.firstFailedAt), desc(deadLetterEvents.id))
      .limit(limit)
      .offset(offset)
      .all(),
    db.select({ total: count() }).from(deadLetterEvents).where(condition).get(),
  ]);
  return { rows, total: total?.total ?? 0 };
}

export function findDeadLetter(db: Database, id: string) {
  return db.select().from(deadLetterEvents).where(eq(deadLetterEvents.id, id)).get();
}

/** Moves a row out of `from` only if it is still there (two admins cannot both act on it). */
export function markDeadLetterRetrying(
  db: Database,
  row: DeadLetterRow,
  adminId: string,
  now: string,
) {
  return db
    .update(deadLetterEvents)
    .set({
      status: "RETRYING",
      retryCount: row.retryCount + 1,
      lastAttemptedAt: now,
      resolvedBy: adminId,
      updatedAt: now,
    })
    .where(and(eq(deadLetterEvents.id, row.id), eq(deadLetterEvents.status, row.status)))
    .returning();
}

export function markDeadLetterDiscarded(
  db: Database,
  row: DeadLetterRow,
  adminId: string,
  now: string,
) {
  return db
    .update(deadLetterEvents)
    .set({ status: "DISCARDED", resolvedAt: now, resolvedBy: adminId, updatedAt: now })
    .where(and(eq(deadLetterEvents.id, row.id), eq(deadLetterEvents.status, row.status)))
    .returning();
}
