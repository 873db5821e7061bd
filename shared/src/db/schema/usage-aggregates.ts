import { sql } from "drizzle-orm";
import {
  check,
  index,
  integer,
  primaryKey,
  real,
  sqliteTable,
  text,
  uniqueIndex,
} from "drizzle-orm/sqlite-core";
import { tenants } from "./identity.ts";
import { subscriptions } from "./subscriptions.ts";

const now = sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;

/**
 * Units used per (subscription, feature, reset window): what billing reads
 * and what a cold EntitlementCounter seeds from. Only the tenant's
 * EntitlementCounter writes these rows, through its flush (see
 * workers/billing/src/entitlements/counter/entitlement-counter.ts, "the single
 * path"), so consumes and pipeline events are counted once each.
 *
 * `periodKey` names the reset window: the window's start instant (ISO-8601
 * UTC) for MONTHLY and ANNUALLY resets, which follow the subscription's own
 * periods rather than calendar months, or `lifetime` for NEVER.
 */
export const usageAggregates = sqliteTable(
  "usage_aggregates",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    subscriptionId: text("subscription_id")
      .notNull()
      .references(() => subscriptions.id, { onDelete: "cascade" }),
    featureLookupKey: text("feature_lookup_key").notNull(),
    periodKey: text("period_key").notNull(),
    /** Inclusive. */
    periodStart: text("period_start").notNull(),
    /** Exclusive; null for a NEVER-resetting feature. */
    periodEnd: text("period_end"),
    amount: integer("amount").notNull().default(0),
    lastEventAt: text("last_event_at"),
    createdAt: text("created_at").notNull().default(now),
    updatedAt: text("updated_at").notNull().default(now),
  },
  (table) => [
    uniqueIndex("usage_aggregates_window_unique").on(
      table.subscriptionId,
      table.featureLookupKey,
      table.periodKey,
    ),
    index("usage_aggregates_tenant_feature_idx").on(table.tenantId, table.featureLookupKey),
    check("usage_aggregates_amount_non_negative", sql`amount >= 0`),
  ],
);

/**
 * One row per flush an EntitlementCounter applied to `usage_aggregates`.
 * The flush id is minted in the object's storage before the first attempt
 * and reused on every retry; the aggregate increments of a flush are
 * conditional on this row not existing yet and the row is inserted in the
 * same batch, so a retried flush (lost response, timeout, alarm rerun)
 * never adds its units twice. `deltas` keeps what the flush added, as a
 * ledger for reconciliation.
 */
export const usageFlushes = sqliteTable(
  "usage_flushes",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    units: integer("units").notNull(),
    deltas: text("deltas", { mode: "json" }).$type<UsageFlushDelta[]>().notNull(),
    appliedAt: text("applied_at").notNull().default(now),
  },
  (table) => [index("usage_flushes_tenant_applied_idx").on(table.tenantId, table.appliedAt)],
);

export interface UsageFlushDelta {
  subscriptionId: string;
  featureLookupKey: string;
  periodKey: string;
  amount: number;
}

/**
 * The same units as `usage_aggregates`, per clock hour (UTC) of use: what
 * usage charts read. Written by the same flush, in the same D1 batch and
 * under the same flush-id guard, so for any subscription and feature the
 * hours add up to the windows exactly. A unit's hour is the hour of its
 * event's timestamp (pipeline events) or of the consume that took it.
 */
export const usageHourly = sqliteTable(
  "usage_hourly",
  {
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    subscriptionId: text("subscription_id")
      .notNull()
      .references(() => subscriptions.id, { onDelete: "cascade" }),
    featureLookupKey: text("feature_lookup_key").notNull(),
    /** Start of the hour, ISO-8601 UTC (`2026-11-01T13:00:00.000Z`). */
    hourStart: text("hour_start").notNull(),
    amount: integer("amount").notNull().default(0),
  },
  (table) => [
    primaryKey({
      columns: [table.subscriptionId, table.featureLookupKey, table.hourStart],
    }),
    index("usage_hourly_tenant_feature_hour_idx").on(
      table.tenantId,
      table.featureLookupKey,
      table.hourStart,
    ),
    check("usage_hourly_amount_non_negative", sql`amount >= 0`),
  ],
);

/**
 * Usage of a feature with a meter, per group of property values (the
 * meter's groupBy; group_key '' without one, '*' for the overflow group),
 * subscription and reset window: the mergeable summary of the group's
 * events (shared/src/billing/meter.ts MeterState), from which billing reads
 * the quantity. Written only by the counter's flush, in the batch and under
 * the flush-id guard that write usage_aggregates (migration 0025).
 */
export const usageMeterGroups = sqliteTable(
  "usage_meter_groups",
  {
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    subscriptionId: text("subscription_id")
      .notNull()
      .references(() => subscriptions.id, { onDelete: "cascade" }),
    featureLookupKey: text("feature_lookup_key").notNull(),
    periodKey: text("period_key").notNull(),
    periodStart: text("period_start").notNull(),
    periodEnd: text("period_end"),
    groupKey: text("group_key").notNull(),
    dimensions: text("dimensions").notNull().default("{}"),
    events: integer("events").notNull().default(0),
    valueSum: real("value_sum").notNull().default(0),
    valueMin: real("value_min"),
    valueMax: real("value_max"),
    latestValue: real("latest_value"),
    latestAt: text("latest_at"),
    latestId: text("latest_id"),
    weightedMs: real("weighted_ms").notNull().default(0),
    distinctValues: integer("distinct_values").notNull().default(0),
    updatedAt: text("updated_at").notNull().default(now),
  },
  (table) => [
    primaryKey({
      columns: [table.subscriptionId, table.featureLookupKey, table.periodKey, table.groupKey],
    }),
    index("usage_meter_groups_tenant_feature_idx").on(
      table.tenantId,
      table.featureLookupKey,
      table.periodStart,
    ),
  ],
);
