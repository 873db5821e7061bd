import { sql } from "drizzle-orm";
import { check, index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { tenants } from "./identity.ts";
import { subscriptions } from "./subscriptions.ts";

const now = sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;

/**
 * PENDING (stored by ingestion) -> AGGREGATED (passed the checks and claimed
 * by the tenant's EntitlementCounter flush, in the same D1 batch as the
 * aggregate increment, with its window and validatedAt), or PENDING ->
 * REJECTED (with a stable reason code). VALIDATED sits between the two when
 * validation could not count the event through the counter at once and
 * forwarded it to usage-validated instead. Every move is a conditional
 * UPDATE on the previous status, so a redelivered message never moves an
 * event twice.
 */
export const usageEventStatuses = ["PENDING", "VALIDATED", "AGGREGATED", "REJECTED"] as const;
export type UsageEventStatus = (typeof usageEventStatuses)[number];

/**
 * One row per usage event a tenant reported and ingestion accepted. The
 * client's `eventId` is unique per tenant (the second layer of duplicate
 * protection: `INSERT ... ON CONFLICT DO NOTHING`); `id` is ours and is what
 * the queues, the outbox and the counter object refer to.
 */
export const usageEvents = sqliteTable(
  "usage_events",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    eventId: text("event_id").notNull(),
    /** Set by validation: the subscription the units count against. */
    subscriptionId: text("subscription_id").references(() => subscriptions.id, {
      onDelete: "set null",
    }),
    featureLookupKey: text("feature_lookup_key").notNull(),
    amount: integer("amount").notNull(),
    /** When the usage happened, as the client said (ISO-8601, normalised to UTC). */
    timestamp: text("timestamp").notNull(),
    /** When ingestion accepted it: the age and drift checks are measured from here. */
    receivedAt: text("received_at").notNull(),
    status: text("status", { enum: usageEventStatuses }).notNull().default("PENDING"),
    /** Stable code (domain/usage-validation.ts in the usage-consumer), set with REJECTED. */
    rejectionCode: text("rejection_code"),
    rejectionReason: text("rejection_reason"),
    /** The reset window the units were counted in (set by validation). */
    periodKey: text("period_key"),
    periodStart: text("period_start"),
    periodEnd: text("period_end"),
    validatedAt: text("validated_at"),
    aggregatedAt: text("aggregated_at"),
    /** The EntitlementCounter flush that claimed the event (and added its units). */
    aggregationFlushId: text("aggregation_flush_id"),
    metadata: text("metadata", { mode: "json" })
      .$type<Record<string, unknown>>()
      .notNull()
      .default(sql`'{}'`),
    createdAt: text("created_at").notNull().default(now),
    updatedAt: text("updated_at").notNull().default(now),
  },
  (table) => [
    // Every index here is maintained on an event's writes (insert, claim,
    // archive delete), so the table keeps only those a query needs: no
    // (tenant, status) index, which nothing reads by.
    uniqueIndex("usage_events_tenant_event_unique").on(table.tenantId, table.eventId),
    index("usage_events_flush_idx")
      .on(table.aggregationFlushId)
      .where(sql`aggregation_flush_id IS NOT NULL`),
    // Retention: the archive job finds the oldest events by when they were
    // received (jobs/usage-archive.ts in the billing worker).
    index("usage_events_received_idx").on(table.receivedAt),
    // The unfinished events only (PENDING, VALIDATED), by when they last
    // moved: what the re-drive sweep reads (services/usage-redrive.ts).
    index("usage_events_unfinished_idx")
      .on(table.updatedAt)
      .where(sql`status IN ('PENDING', 'VALIDATED')`),
    check("usage_events_amount_positive", sql`amount > 0`),
  ],
);

export const usageOutboxStatuses = ["PENDING", "PUBLISHED", "FAILED"] as const;
export type UsageOutboxStatus = (typeof usageOutboxStatuses)[number];

/**
 * The transactional outbox of ingestion: one row per accepted event, written
 * in the same D1 batch as the event. The message itself is built from the
 * event row (shared/src/queues/usage.ts), so no copy of the payload is kept.
 * PENDING rows whose `nextAttemptAt` has passed are swept by the
 * UsageOutboxPublisher; after 5 failed sends a row is FAILED and the event
 * is dead-lettered at the PUBLISHING stage.
 */
export const usageOutbox = sqliteTable(
  "usage_outbox",
  {
    id: text("id")
      .primaryKey()
      .references(() => usageEvents.id, { onDelete: "cascade" }),
    tenantId: text("tenant_id").notNull(),
    topic: text("topic").notNull(),
    status: text("status", { enum: usageOutboxStatuses }).notNull().default("PENDING"),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: text("next_attempt_at").notNull(),
    publishedAt: text("published_at"),
    lastError: text("last_error"),
    createdAt: text("created_at").notNull().default(now),
  },
  (table) => [
    index("usage_outbox_due_idx").on(table.nextAttemptAt).where(sql`status = 'PENDING'`),
    index("usage_outbox_published_idx").on(table.publishedAt).where(sql`status = 'PUBLISHED'`),
  ],
);
