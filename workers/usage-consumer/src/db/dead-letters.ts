import type { DeadLetterRecord } from "../domain/dead-letter.ts";
import { failDeadLettersStatement, upsertDeadLettersStatement } from "./usage-events.ts";

/**
 * Stores dead letters in one batch. A message that was itself an
 * administrator's retry puts its original row back to FAILED instead of
 * adding a second row for the same event.
 */
export async function insertDeadLetters(
  db: D1Database,
  records: (DeadLetterRecord & { retryOf?: string | null })[],
): Promise<void> {
  if (records.length === 0) return;
  const now = new Date().toISOString();
  const fresh = records.filter((record) => !record.retryOf);
  const retried = records
    .filter((record) => record.retryOf)
    .map((record) => ({ id: record.retryOf as string, reason: record.failureReason }));
  const statements: D1PreparedStatement[] = [];
  if (fresh.length > 0) statements.push(upsertDeadLettersStatement(db, fresh, now));
  if (retried.length > 0) statements.push(failDeadLettersStatement(db, retried, now));
  await db.batch(statements);
}
