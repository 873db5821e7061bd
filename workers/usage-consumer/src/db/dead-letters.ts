import { deadLetterEvents } from "@edge-platform/shared/db/schema/usage";
import { drizzle } from "drizzle-orm/d1";
import type { DeadLetterRecord } from "../domain/dead-letter.ts";

export async function insertDeadLetters(
  db: D1Database,
  records: DeadLetterRecord[],
): Promise<void> {
  if (records.length === 0) return;
  await drizzle(db).insert(deadLetterEvents).values(records).onConflictDoNothing();
}
