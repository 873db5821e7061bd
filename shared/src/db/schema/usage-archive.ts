import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

const now = sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;

export const usageArchivePartStatuses = ["UPLOADED", "DELETED"] as const;
export type UsageArchivePartStatus = (typeof usageArchivePartStatuses)[number];

/**
 * The manifest of the raw usage-event log archived to R2: one row per
 * object, a part of one tenant's events received on one UTC day (events
 * ordered by id, at most the job's part size each). UPLOADED: the object is
 * in R2 and its events are still (partly) in D1; DELETED: they have been
 * removed from `usage_events`. The object key is derived from (tenant, day,
 * part), so a run that crashed after the upload writes the same object
 * again; first and last id bound the part's rows for the delete.
 */
export const usageArchiveParts = sqliteTable(
  "usage_archive_parts",
  {
    /** The R2 object key. */
    key: text("key").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    /** UTC day the events were received (YYYY-MM-DD). */
    day: text("day").notNull(),
    part: integer("part").notNull(),
    eventCount: integer("event_count").notNull(),
    firstId: text("first_id").notNull(),
    lastId: text("last_id").notNull(),
    bytes: integer("bytes").notNull(),
    status: text("status", { enum: usageArchivePartStatuses }).notNull().default("UPLOADED"),
    createdAt: text("created_at").notNull().default(now),
    deletedAt: text("deleted_at"),
  },
  (table) => [
    uniqueIndex("usage_archive_parts_tenant_day_part_unique").on(
      table.tenantId,
      table.day,
      table.part,
    ),
    index("usage_archive_parts_status_idx").on(table.status),
  ],
);
