import { customType, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { decodeVector, encodeVector } from "../domain/vectors.ts";

/** A float32 vector stored as a BLOB. */
const vector = customType<{ data: Float32Array; driverData: Uint8Array }>({
  dataType: () => "blob",
  toDriver: (value) => encodeVector(value),
  fromDriver: (value) => decodeVector(value),
});

/** Drizzle view of migrations/portfolio (the SQL files are the source of truth). */

export const knowledgeChunks = sqliteTable("knowledge_chunks", {
  id: text("id").primaryKey(),
  source: text("source").notNull(),
  sourceId: text("source_id").notNull(),
  itemId: text("item_id").notNull(),
  title: text("title").notNull(),
  chunkIndex: integer("chunk_index").notNull(),
  content: text("content").notNull(),
  contentHash: text("content_hash").notNull(),
  embeddingModel: text("embedding_model").notNull(),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

export const responseCache = sqliteTable("response_cache", {
  id: text("id").primaryKey(),
  question: text("question").notNull(),
  questionKey: text("question_key").notNull(),
  questionEmbedding: vector("question_embedding").notNull(),
  embeddingModel: text("embedding_model").notNull(),
  response: text("response").notNull(),
  sources: text("sources").notNull(),
  sourceChunkIds: text("source_chunk_ids").notNull(),
  hitCount: integer("hit_count").notNull().default(0),
  createdAt: integer("created_at").notNull(),
  invalidatedAt: integer("invalidated_at"),
});

export const conversationMessages = sqliteTable("conversation_messages", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  sessionId: text("session_id").notNull(),
  role: text("role", { enum: ["user", "assistant"] }).notNull(),
  content: text("content").notNull(),
  createdAt: integer("created_at").notNull(),
});

export const contentState = sqliteTable("content_state", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
  updatedAt: integer("updated_at").notNull(),
});
