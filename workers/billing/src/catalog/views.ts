import { DEFAULT_METER, type Meter } from "@edge-platform/shared/billing/meter";
import type { FeatureRow, PlanEntitlementRow, PlanPriceRow, PlanRow } from "./storage.ts";

/** A meter as the API shows it: every field, the default for a feature given none. */
export function meterView(meter: Meter | null | undefined): Meter {
  return structuredClone(meter ?? DEFAULT_METER);
}

/** How a plan lists its prices: the active ones, MONTHLY before ANNUALLY. */
export function priceSummary(price: PlanPriceRow) {
  return {
    id: price.id,
    interval: price.interval,
    amount: price.amount,
    currency: price.currency,
    isActive: price.isActive,
  };
}

export function priceView(price: PlanPriceRow) {
  return {
    id: price.id,
    planId: price.planId,
    interval: price.interval,
    amount: price.amount,
    currency: price.currency,
    isActive: price.isActive,
    trialDays: price.trialDays,
    prepaid: price.prepaid,
    usageThresholds: price.usageThresholds ?? null,
    createdAt: price.createdAt,
    updatedAt: price.updatedAt,
  };
}

export function planView(plan: PlanRow, prices: PlanPriceRow[]) {
  return {
    id: plan.id,
    name: plan.name,
    slug: plan.slug,
    description: plan.description,
    status: plan.status,
    isPublic: plan.isPublic,
    displayOrder: plan.displayOrder,
    metadata: plan.metadata,
    createdAt: plan.createdAt,
    updatedAt: plan.updatedAt,
    prices: prices.filter((price) => price.planId === plan.id && price.isActive).map(priceSummary),
  };
}

export function featureView(feature: FeatureRow) {
  return {
    id: feature.id,
    name: feature.name,
    lookupKey: feature.lookupKey,
    type: feature.type,
    unit: feature.unit,
    description: feature.description,
    status: feature.status,
    metadata: feature.metadata,
    meter: meterView(feature.meter),
    createdAt: feature.createdAt,
    updatedAt: feature.updatedAt,
  };
}

export function planEntitlementView(
  entitlement: PlanEntitlementRow,
  feature: Pick<FeatureRow, "id" | "name" | "lookupKey" | "type" | "unit">,
) {
  return {
    id: entitlement.id,
    planId: entitlement.planId,
    featureId: entitlement.featureId,
    value: entitlement.value,
    limit: entitlement.limit,
    limitBehavior: entitlement.limitBehavior,
    overagePrice: entitlement.overagePrice,
    includedAmount: entitlement.includedAmount,
    resetPeriod: entitlement.resetPeriod,
    pricing: entitlement.pricing,
    overagePriceDecimal: entitlement.overagePriceDecimal ?? null,
    dimensions: entitlement.dimensions ?? null,
    createdAt: entitlement.createdAt,
    updatedAt: entitlement.updatedAt,
    feature: {
      id: feature.id,
      name: feature.name,
      lookupKey: feature.lookupKey,
      type: feature.type,
      unit: feature.unit,
    },
  };
}
