import { sql } from "drizzle-orm";
import { check, index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { tenants } from "./identity.ts";

// A tenant's usage alerts: "tell us when a feature's usage in its reset
// window reaches N units / P percent of the limit or included amount". The
// tenant's EntitlementCounter decides when one is reached (once per window).

export const usageAlertThresholdTypes = ["units", "percent"] as const;
export type UsageAlertThresholdType = (typeof usageAlertThresholdTypes)[number];

export const usageAlerts = sqliteTable(
  "usage_alerts",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    /** The feature's lookup key (features are the platform's catalog; keys are immutable). */
    featureLookupKey: text("feature_lookup_key").notNull(),
    thresholdType: text("threshold_type", { enum: usageAlertThresholdTypes }).notNull(),
    thresholdValue: integer("threshold_value").notNull(),
    createdAt: text("created_at").notNull().default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`),
  },
  (table) => [
    uniqueIndex("usage_alerts_tenant_threshold_unique").on(
      table.tenantId,
      table.featureLookupKey,
      table.thresholdType,
      table.thresholdValue,
    ),
    index("usage_alerts_tenant_created_idx").on(table.tenantId, table.createdAt),
    check("usage_alerts_threshold_positive", sql`threshold_value > 0`),
  ],
);
