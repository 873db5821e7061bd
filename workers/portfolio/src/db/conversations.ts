import { desc, eq } from "drizzle-orm";
import type { DrizzleD1Database } from "drizzle-orm/d1";
import type { HistoryMessage } from "../domain/prompt.ts";
import { conversationMessages } from "./schema.ts";

/** The newest `limit` messages of a session, oldest first; the id breaks created_at ties. */
export async function recentMessages(
  db: DrizzleD1Database,
  sessionId: string,
  limit: number,
): Promise<HistoryMessage[]> {
  const rows = await db
    .select({ role: conversationMessages.role, content: conversationMessages.content })
    .from(conversationMessages)
    .where(eq(conversationMessages.sessionId, sessionId))
    .orderBy(desc(conversationMessages.createdAt), desc(conversationMessages.id))
    .limit(limit);
  return rows.reverse();
}

/** Stores a question and its answer together (one batch: both or neither). */
export async function appendTurn(
  db: DrizzleD1Database,
  sessionId: string,
  question: string,
  answer: string,
  at: number,
): Promise<void> {
  await db.batch([
    db
      .insert(conversationMessages)
      .values({ sessionId, role: "user", content: question, createdAt: at }),
    db
      .insert(conversationMessages)
      .values({ sessionId, role: "assistant", content: answer, createdAt: at }),
  ]);
}
