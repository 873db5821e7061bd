import { sql } from "drizzle-orm";
import { check, index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import type { Meter } from "../../billing/meter.ts";
import {
  type ChargePricing,
  type EntitlementDimension,
  featureTypes,
  limitBehaviors,
  planPrices,
  plans,
  resetPeriods,
} from "./catalog.ts";
import { tenants } from "./identity.ts";

const now = sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;

export const subscriptionStatuses = [
  "ACTIVE",
  "TRIALING",
  "PAST_DUE",
  "PAUSED",
  "CANCELLED",
] as const;
export type SubscriptionStatus = (typeof subscriptionStatuses)[number];

/**
 * "Current" statuses: a tenant has at most one subscription in one of them.
 * The partial unique index below enforces it, so two concurrent subscribes
 * cannot both win; keep the index predicate and this list in step.
 */
export const currentSubscriptionStatuses = ["ACTIVE", "TRIALING", "PAST_DUE", "PAUSED"] as const;

/**
 * A tenant's subscription to a plan at a price. Periods are UTC: the first
 * billable period starts at `trialEndsAt` when there is a trial, otherwise
 * at `startedAt`; later periods are anchored on `billingCycleOrigin` (that
 * start, or the replaced subscription's origin after a plan change), clamped
 * to short months (domain/billing-period.ts).
 */
export const subscriptions = sqliteTable(
  "subscriptions",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    planId: text("plan_id")
      .notNull()
      .references(() => plans.id, { onDelete: "restrict" }),
    priceId: text("price_id")
      .notNull()
      .references(() => planPrices.id, { onDelete: "restrict" }),
    status: text("status", { enum: subscriptionStatuses }).notNull().default("ACTIVE"),
    startedAt: text("started_at").notNull(),
    /** While TRIALING, the trial itself; afterwards the billing period. */
    currentPeriodStart: text("current_period_start").notNull(),
    currentPeriodEnd: text("current_period_end").notNull(),
    /** Day of month (1-28) of the first billable period's start. */
    billingAnchor: integer("billing_anchor").notNull(),
    /**
     * The instant the billing cycle's boundaries are counted from (whole
     * months, clamped). The first billable start for a fresh subscription;
     * on a plan change that keeps the cycle, the replaced subscription's
     * origin, so the first period runs from the change to the old period's
     * end. Null on rows written before the column: the first billable start.
     */
    billingCycleOrigin: text("billing_cycle_origin"),
    trialEndsAt: text("trial_ends_at"),
    /** Set by `cancel {atPeriodEnd: true}`: the subscription ends at `currentPeriodEnd`. */
    cancelAtPeriodEnd: integer("cancel_at_period_end", { mode: "boolean" })
      .notNull()
      .default(false),
    /** When cancellation was asked for (immediately, at period end, or by a plan change). */
    cancelledAt: text("cancelled_at"),
    /** When the subscription stopped being current (status became CANCELLED). */
    endedAt: text("ended_at"),
    pausedAt: text("paused_at"),
    createdAt: text("created_at").notNull().default(now),
    updatedAt: text("updated_at").notNull().default(now),
  },
  (table) => [
    uniqueIndex("subscriptions_one_current_per_tenant")
      .on(table.tenantId)
      .where(sql`status IN ('ACTIVE', 'TRIALING', 'PAST_DUE', 'PAUSED')`),
    index("subscriptions_tenant_created_idx").on(table.tenantId, table.createdAt),
    index("subscriptions_plan_idx").on(table.planId),
    index("subscriptions_status_trial_idx").on(table.status, table.trialEndsAt),
    index("subscriptions_status_period_end_idx").on(table.status, table.currentPeriodEnd),
    check("subscriptions_billing_anchor_range", sql`billing_anchor BETWEEN 1 AND 28`),
  ],
);

/**
 * The plan's entitlements as they were when the subscription started.
 * Written once, in the same batch as the subscription, and never updated:
 * later catalog edits do not reach existing subscribers.
 */
export const entitlementSnapshots = sqliteTable(
  "entitlement_snapshots",
  {
    id: text("id").primaryKey(),
    subscriptionId: text("subscription_id")
      .notNull()
      .references(() => subscriptions.id, { onDelete: "cascade" }),
    featureLookupKey: text("feature_lookup_key").notNull(),
    featureType: text("feature_type", { enum: featureTypes }).notNull(),
    value: integer("value", { mode: "boolean" }),
    limit: integer("limit"),
    limitBehavior: text("limit_behavior", { enum: limitBehaviors }),
    /** Micro-cents per unit beyond the limit or included amount. */
    overagePrice: integer("overage_price"),
    includedAmount: integer("included_amount"),
    resetPeriod: text("reset_period", { enum: resetPeriods }),
    /** Tiered or package pricing, instead of `overagePrice`. */
    pricing: text("pricing", { mode: "json" }).$type<ChargePricing>(),
    /** Decimal micro-cents per unit, instead of `overagePrice`. */
    overagePriceDecimal: text("overage_price_decimal"),
    /** Prices per group of the meter's groupBy values. */
    dimensions: text("dimensions", { mode: "json" }).$type<EntitlementDimension[]>(),
    /** The feature's meter when the subscription started; null: DEFAULT_METER. */
    meter: text("meter", { mode: "json" }).$type<Meter>(),
    createdAt: text("created_at").notNull().default(now),
  },
  (table) => [
    uniqueIndex("entitlement_snapshots_subscription_feature_unique").on(
      table.subscriptionId,
      table.featureLookupKey,
    ),
    index("entitlement_snapshots_feature_idx").on(table.featureLookupKey),
  ],
);

/**
 * The one trial a tenant ever gets: inserted in the batch that starts a
 * trialing subscription, so a second trial (even by two concurrent
 * subscribes) fails on the primary key.
 */
export const tenantTrials = sqliteTable("tenant_trials", {
  tenantId: text("tenant_id")
    .primaryKey()
    .references(() => tenants.id, { onDelete: "cascade" }),
  subscriptionId: text("subscription_id")
    .notNull()
    .references(() => subscriptions.id, { onDelete: "cascade" }),
  startedAt: text("started_at").notNull(),
});
