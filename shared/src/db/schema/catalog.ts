import { sql } from "drizzle-orm";
import { check, index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import type { Meter, PropertyValue } from "../../billing/meter.ts";

// The global catalog: plans with their prices, features, and what each plan
// grants of each feature. Same conventions as identity.ts: UUID text ids,
// ISO-8601 UTC text times. Money is integers only: prices in cents (minor
// units), overage prices in micro-cents (1 cent = 100 micro-cents), as
// integers or, below one micro-cent, as decimal strings ("0.15").

const now = sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;
const timestamps = {
  createdAt: text("created_at").notNull().default(now),
  updatedAt: text("updated_at").notNull().default(now),
};

export const catalogStatuses = ["ACTIVE", "ARCHIVED"] as const;
export const billingIntervals = ["MONTHLY", "ANNUALLY"] as const;
export const featureTypes = ["BOOLEAN", "QUOTA", "METERED"] as const;
export const limitBehaviors = ["HARD", "SOFT"] as const;
export const resetPeriods = ["MONTHLY", "ANNUALLY", "NEVER"] as const;

export type CatalogStatus = (typeof catalogStatuses)[number];
export type BillingInterval = (typeof billingIntervals)[number];
export type FeatureType = (typeof featureTypes)[number];
export type LimitBehavior = (typeof limitBehaviors)[number];
export type ResetPeriod = (typeof resetPeriods)[number];

export const chargeModels = ["graduated", "volume", "package"] as const;
export type ChargeModel = (typeof chargeModels)[number];

/**
 * One price tier: `upTo` counts billed units cumulatively (null: the open
 * last tier); `unitPrice` in micro-cents like overagePrice, or
 * `unitPriceDecimal` (exactly one of the two) for a price in decimal
 * micro-cents; `flatFee` in cents, charged once when any unit falls in the
 * tier (graduated) or when the total reaches it (volume).
 */
export interface PricingTier {
  upTo: number | null;
  unitPrice?: number;
  unitPriceDecimal?: string;
  flatFee?: number;
}

/**
 * How units beyond the included amount (METERED) or the limit (SOFT QUOTA)
 * are priced, when not by one price per unit (`overagePrice`). The rules
 * are in workers/billing/src/pricing/domain/charge-models.ts.
 */
export type ChargePricing =
  | { model: "graduated" | "volume"; tiers: PricingTier[] }
  | { model: "package"; packageSize: number; packagePrice: number };

/**
 * The price of one group of a feature's usage (its meter's groupBy values):
 * the first entry whose every `match` pair equals the group's value applies
 * (values compared as strings); a group no entry matches is priced by the
 * entitlement's own terms. Exactly one of the three prices is set.
 */
export interface EntitlementDimension {
  match: Record<string, PropertyValue>;
  /** Units of the group included before its price applies. */
  includedAmount: number;
  overagePrice: number | null;
  overagePriceDecimal: string | null;
  pricing: ChargePricing | null;
}

export const plans = sqliteTable(
  "plans",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    /** Immutable once created: clients and demo data address plans by it. */
    slug: text("slug").notNull().unique("plans_slug_unique"),
    description: text("description"),
    status: text("status", { enum: catalogStatuses }).notNull().default("ACTIVE"),
    isPublic: integer("is_public", { mode: "boolean" }).notNull().default(true),
    displayOrder: integer("display_order").notNull().default(0),
    metadata: text("metadata", { mode: "json" })
      .$type<Record<string, unknown>>()
      .notNull()
      .default(sql`'{}'`),
    ...timestamps,
  },
  (table) => [index("plans_status_order_idx").on(table.status, table.displayOrder)],
);

/** A progressive-billing threshold: cents of priced usage in the period. */
export interface UsageThreshold {
  amount: number;
  /** Repeats every `amount` after the last fixed threshold. */
  recurring?: boolean;
}

export const planPrices = sqliteTable(
  "plan_prices",
  {
    id: text("id").primaryKey(),
    planId: text("plan_id")
      .notNull()
      .references(() => plans.id, { onDelete: "cascade" }),
    interval: text("interval", { enum: billingIntervals }).notNull(),
    /** Minor units (cents); 0 is a free plan. */
    amount: integer("amount").notNull(),
    /** ISO 4217, stored lower-case. */
    currency: text("currency").notNull().default("usd"),
    isActive: integer("is_active", { mode: "boolean" }).notNull().default(true),
    /**
     * Days of free trial a tenant gets on its first subscription to this
     * price, if it never had a trial (one per tenant, ever); null or 0: none.
     */
    trialDays: integer("trial_days"),
    /**
     * Prepaid: a consume of a priced feature is refused (402) when the
     * tenant's credit balance does not cover its cost.
     */
    prepaid: integer("prepaid", { mode: "boolean" }).notNull().default(false),
    /**
     * Progressive billing: cents of priced usage in a period at which a
     * PROGRESSIVE invoice bills the usage so far (at most one recurring, last).
     */
    usageThresholds: text("usage_thresholds", { mode: "json" }).$type<UsageThreshold[]>(),
    ...timestamps,
  },
  (table) => [
    // One live price per (plan, interval, currency); a deactivated price
    // stays for the subscriptions that reference it and frees the slot for
    // its replacement, which is how a price changes.
    uniqueIndex("plan_prices_active_unique")
      .on(table.planId, table.interval, table.currency)
      .where(sql`is_active = 1`),
    index("plan_prices_plan_idx").on(table.planId),
    check("plan_prices_amount_non_negative", sql`amount >= 0`),
    check("plan_prices_trial_days_range", sql`trial_days IS NULL OR trial_days BETWEEN 0 AND 365`),
  ],
);

export const features = sqliteTable("features", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  /** Immutable: the key snapshots, usage events and checks refer to. */
  lookupKey: text("lookup_key").notNull().unique("features_lookup_key_unique"),
  type: text("type", { enum: featureTypes }).notNull(),
  /** What a QUOTA or METERED feature counts ("api_call", "GB"); null for BOOLEAN. */
  unit: text("unit"),
  /**
   * How usage is measured from events (shared/src/billing/meter.ts); null:
   * DEFAULT_METER. Its aggregation is fixed once the feature has usage.
   */
  meter: text("meter", { mode: "json" }).$type<Meter>(),
  description: text("description"),
  status: text("status", { enum: catalogStatuses }).notNull().default("ACTIVE"),
  metadata: text("metadata", { mode: "json" })
    .$type<Record<string, unknown>>()
    .notNull()
    .default(sql`'{}'`),
  ...timestamps,
});

/**
 * What a plan grants of a feature. Which columns are set depends on the
 * feature's type (domain/entitlement-rules.ts): BOOLEAN `value`; QUOTA
 * `limit`, `limitBehavior`, `resetPeriod` (+ `overagePrice` when SOFT);
 * METERED `includedAmount`, `overagePrice`, `resetPeriod`. A SOFT quota or a
 * METERED feature is priced by one of `overagePrice`, `overagePriceDecimal`
 * or `pricing`, and may price groups of its usage apart (`dimensions`).
 * Editing these rows
 * never reaches existing subscribers: they hold snapshots.
 */
export const planEntitlements = sqliteTable(
  "plan_entitlements",
  {
    id: text("id").primaryKey(),
    planId: text("plan_id")
      .notNull()
      .references(() => plans.id, { onDelete: "cascade" }),
    featureId: text("feature_id")
      .notNull()
      .references(() => features.id, { onDelete: "restrict" }),
    value: integer("value", { mode: "boolean" }),
    limit: integer("limit"),
    limitBehavior: text("limit_behavior", { enum: limitBehaviors }),
    /** Micro-cents per unit beyond the limit or included amount. */
    overagePrice: integer("overage_price"),
    includedAmount: integer("included_amount"),
    resetPeriod: text("reset_period", { enum: resetPeriods }),
    /** Tiered or package pricing of the billed units, instead of `overagePrice`. */
    pricing: text("pricing", { mode: "json" }).$type<ChargePricing>(),
    /** Micro-cents per unit as a decimal string ("0.15"), instead of `overagePrice`. */
    overagePriceDecimal: text("overage_price_decimal"),
    /** Prices per group of the feature's meter (groupBy values). */
    dimensions: text("dimensions", { mode: "json" }).$type<EntitlementDimension[]>(),
    ...timestamps,
  },
  (table) => [
    uniqueIndex("plan_entitlements_plan_feature_unique").on(table.planId, table.featureId),
    index("plan_entitlements_feature_idx").on(table.featureId),
  ],
);
