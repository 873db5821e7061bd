import { eq } from "drizzle-orm";
import type { DrizzleD1Database } from "drizzle-orm/d1";
import { contentState } from "./schema.ts";

export async function readState(db: DrizzleD1Database, key: string): Promise<string | undefined> {
  const [row] = await db.select().from(contentState).where(eq(contentState.key, key)).limit(1);
  return row?.value;
}

export function writeStateStatement(db: DrizzleD1Database, key: string, value: string, at: number) {
  return db
    .insert(contentState)
    .values({ key, value, updatedAt: at })
    .onConflictDoUpdate({ target: contentState.key, set: { value, updatedAt: at } });
}
