import type { EntitlementTerms } from "@edge-platform/shared/billing/entitlement-rules";
import { type Database, nowIso } from "@edge-platform/shared/db/client";
import { inList } from "@edge-platform/shared/db/in-list";
import {
  type CatalogStatus,
  features,
  planEntitlements,
  planPrices,
  plans,
} from "@edge-platform/shared/db/schema/catalog";
import { usageAggregates } from "@edge-platform/shared/db/schema/usage-aggregates";
import { and, asc, eq, gt, inArray, isNotNull, isNull, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";

export type PlanRow = typeof plans.$inferSelect;
export type PlanPriceRow = typeof planPrices.$inferSelect;
export type FeatureRow = typeof features.$inferSelect;
export type PlanEntitlementRow = typeof planEntitlements.$inferSelect;

// MONTHLY before ANNUALLY, as the API lists prices.
const intervalOrder = sql`CASE ${planPrices.interval} WHEN 'MONTHLY' THEN 0 ELSE 1 END`;

// --- plans ---------------------------------------------------------------

export function insertPlan(db: Database, row: typeof plans.$inferInsert) {
  return db.insert(plans).values(row).returning();
}

export function findPlanById(db: Database, id: string) {
  return db.select().from(plans).where(eq(plans.id, id)).get();
}

export function findPlanBySlug(db: Database, slug: string) {
  return db.select().from(plans).where(eq(plans.slug, slug)).get();
}

export function listPlans(
  db: Database,
  options: { statuses: CatalogStatus[]; includeNonPublic: boolean },
) {
  const conditions = [inArray(plans.status, options.statuses)];
  if (!options.includeNonPublic) conditions.push(eq(plans.isPublic, true));
  return db
    .select()
    .from(plans)
    .where(and(...conditions))
    .orderBy(asc(plans.displayOrder), asc(plans.name), asc(plans.id))
    .all();
}

export function updatePlan(
  db: Database,
  id: string,
  changes: Partial<
    Pick<PlanRow, "name" | "description" | "status" | "isPublic" | "displayOrder" | "metadata">
  >,
) {
  return db
    .update(plans)
    .set({ ...changes, updatedAt: nowIso() })
    .where(eq(plans.id, id))
    .returning();
}

// --- prices --------------------------------------------------------------

export function insertPlanPrice(db: Database, row: typeof planPrices.$inferInsert) {
  return db.insert(planPrices).values(row).returning();
}

export function listPlanPrices(db: Database, planIds: string[], includeInactive: boolean) {
  if (planIds.length === 0) return Promise.resolve([] as PlanPriceRow[]);
  const conditions = [inList(planPrices.planId, planIds)];
  if (!includeInactive) conditions.push(eq(planPrices.isActive, true));
  return db
    .select()
    .from(planPrices)
    .where(and(...conditions))
    .orderBy(intervalOrder, asc(planPrices.currency), asc(planPrices.createdAt))
    .all();
}

export function findPlanPrice(db: Database, planId: string, id: string) {
  return db
    .select()
    .from(planPrices)
    .where(and(eq(planPrices.id, id), eq(planPrices.planId, planId)))
    .get();
}

/**
 * Deactivation is permanent (the row stays for subscriptions that
 * reference it, `isActive` never goes back to true); the trial can change.
 */
export function updatePlanPrice(
  db: Database,
  planId: string,
  id: string,
  changes: { isActive?: false | undefined; trialDays?: number | null | undefined },
) {
  return db
    .update(planPrices)
    .set({
      ...(changes.isActive === false ? { isActive: false } : {}),
      ...(changes.trialDays !== undefined ? { trialDays: changes.trialDays } : {}),
      updatedAt: nowIso(),
    })
    .where(and(eq(planPrices.id, id), eq(planPrices.planId, planId)))
    .returning();
}

// --- features ------------------------------------------------------------

export function insertFeature(db: Database, row: typeof features.$inferInsert) {
  return db.insert(features).values(row).returning().get();
}

export function findFeatureById(db: Database, id: string) {
  return db.select().from(features).where(eq(features.id, id)).get();
}

export function findFeatureByLookupKey(db: Database, lookupKey: string) {
  return db.select().from(features).where(eq(features.lookupKey, lookupKey)).get();
}

export function listFeatures(db: Database, statuses: CatalogStatus[]) {
  return db
    .select()
    .from(features)
    .where(inArray(features.status, statuses))
    .orderBy(asc(features.name), asc(features.lookupKey))
    .all();
}

export function updateFeature(
  db: Database,
  id: string,
  changes: Partial<
    Pick<FeatureRow, "name" | "unit" | "description" | "status" | "metadata" | "meter">
  >,
) {
  return db
    .update(features)
    .set({ ...changes, updatedAt: nowIso() })
    .where(eq(features.id, id))
    .returning()
    .get();
}

/** Whether `error` (or one it wraps) says that `table` does not exist. */
/**
 * Whether any subscription has usage of the feature: a usage window with
 * units, or a group of a meter's usage.
 */
export async function featureHasUsage(db: Database, lookupKey: string): Promise<boolean> {
  const counted = await db
    .select({ id: usageAggregates.id })
    .from(usageAggregates)
    .where(and(eq(usageAggregates.featureLookupKey, lookupKey), gt(usageAggregates.amount, 0)))
    .limit(1)
    .get();
  if (counted) return true;
  const grouped = await db.get<{ found: number }>(
    sql`SELECT 1 AS found FROM usage_meter_groups WHERE feature_lookup_key = ${lookupKey} LIMIT 1`,
  );
  return grouped !== undefined;
}

/** The plans' entitlements of a feature that price groups of its usage (dimensions set). */
export function listFeatureDimensions(db: Database, featureId: string) {
  return db
    .select({ planSlug: plans.slug, dimensions: planEntitlements.dimensions })
    .from(planEntitlements)
    .innerJoin(plans, eq(plans.id, planEntitlements.planId))
    .where(and(eq(planEntitlements.featureId, featureId), isNotNull(planEntitlements.dimensions)))
    .orderBy(asc(plans.slug))
    .all();
}

// --- plan entitlements ---------------------------------------------------

export function insertPlanEntitlement(db: Database, row: typeof planEntitlements.$inferInsert) {
  return db.insert(planEntitlements).values(row).returning();
}

const entitlementWithFeature = {
  entitlement: planEntitlements,
  feature: {
    id: features.id,
    name: features.name,
    lookupKey: features.lookupKey,
    type: features.type,
    unit: features.unit,
    status: features.status,
    meter: features.meter,
  },
};

export function listPlanEntitlements(db: Database, planId: string) {
  return db
    .select(entitlementWithFeature)
    .from(planEntitlements)
    .innerJoin(features, eq(features.id, planEntitlements.featureId))
    .where(eq(planEntitlements.planId, planId))
    .orderBy(asc(features.name), asc(features.lookupKey))
    .all();
}

export function findPlanEntitlement(db: Database, planId: string, id: string) {
  return db
    .select(entitlementWithFeature)
    .from(planEntitlements)
    .innerJoin(features, eq(features.id, planEntitlements.featureId))
    .where(and(eq(planEntitlements.id, id), eq(planEntitlements.planId, planId)))
    .get();
}

/** Writes new terms only if the row still holds `expected` (the terms they were checked against). */
export function updatePlanEntitlement(
  db: Database,
  planId: string,
  id: string,
  expected: EntitlementTerms,
  terms: EntitlementTerms,
) {
  const unchanged = <C extends SQLiteColumn>(column: C, value: C["_"]["data"] | null) =>
    value === null ? isNull(column) : eq(column, value);
  return db
    .update(planEntitlements)
    .set({ ...terms, updatedAt: nowIso() })
    .where(
      and(
        eq(planEntitlements.id, id),
        eq(planEntitlements.planId, planId),
        unchanged(planEntitlements.value, expected.value),
        unchanged(planEntitlements.limit, expected.limit),
        unchanged(planEntitlements.limitBehavior, expected.limitBehavior),
        unchanged(planEntitlements.overagePrice, expected.overagePrice),
        unchanged(planEntitlements.includedAmount, expected.includedAmount),
        unchanged(planEntitlements.resetPeriod, expected.resetPeriod),
        expected.pricing === null
          ? isNull(planEntitlements.pricing)
          : eq(planEntitlements.pricing, expected.pricing),
        unchanged(planEntitlements.overagePriceDecimal, expected.overagePriceDecimal ?? null),
        expected.dimensions === null || expected.dimensions === undefined
          ? isNull(planEntitlements.dimensions)
          : eq(planEntitlements.dimensions, expected.dimensions),
      ),
    )
    .returning();
}

export function deletePlanEntitlement(db: Database, planId: string, id: string) {
  return db
    .delete(planEntitlements)
    .where(and(eq(planEntitlements.id, id), eq(planEntitlements.planId, planId)))
    .returning();
}
