import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

export const deadLetterStages = [
  "INGESTION",
  "PUBLISHING",
  "VALIDATION",
  "AGGREGATION",
  /** The duplicates queue (monitoring only). */
  "MONITORING",
  "UNKNOWN",
] as const;
export type DeadLetterStage = (typeof deadLetterStages)[number];
export const deadLetterStatuses = ["FAILED", "RETRYING", "RESOLVED", "DISCARDED"] as const;
export type DeadLetterStatus = (typeof deadLetterStatuses)[number];

const now = sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;

/** Messages the pipeline gave up on, kept with the stage and reason so they can be retried or discarded. */
export const deadLetterEvents = sqliteTable(
  "dead_letter_events",
  {
    id: text("id").primaryKey(),
    sourceEventId: text("source_event_id"),
    tenantId: text("tenant_id"),
    topic: text("topic").notNull(),
    failureStage: text("failure_stage", { enum: deadLetterStages }).notNull(),
    failureReason: text("failure_reason").notNull(),
    originalPayload: text("original_payload", { mode: "json" }).notNull(),
    errorDetails: text("error_details"),
    retryCount: integer("retry_count").notNull().default(0),
    status: text("status", { enum: deadLetterStatuses }).notNull().default("FAILED"),
    firstFailedAt: text("first_failed_at").notNull().default(now),
    lastAttemptedAt: text("last_attempted_at"),
    resolvedAt: text("resolved_at"),
    resolvedBy: text("resolved_by"),
    createdAt: text("created_at").notNull().default(now),
    updatedAt: text("updated_at").notNull().default(now),
  },
  (table) => [
    index("dead_letter_events_status_idx").on(table.status),
    index("dead_letter_events_tenant_idx").on(table.tenantId),
    index("dead_letter_events_stage_idx").on(table.failureStage),
    index("dead_letter_events_first_failed_idx").on(table.firstFailedAt),
  ],
);
