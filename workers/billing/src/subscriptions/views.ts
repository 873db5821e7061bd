import { DEFAULT_METER } from "@edge-platform/shared/billing/meter";
import type { EntitlementSnapshotRow, SubscriptionWithPlan } from "./storage.ts";

export function snapshotView(snapshot: EntitlementSnapshotRow) {
  return {
    featureLookupKey: snapshot.featureLookupKey,
    featureType: snapshot.featureType,
    value: snapshot.value,
    limit: snapshot.limit,
    limitBehavior: snapshot.limitBehavior,
    overagePrice: snapshot.overagePrice,
    includedAmount: snapshot.includedAmount,
    resetPeriod: snapshot.resetPeriod,
    pricing: snapshot.pricing,
    overagePriceDecimal: snapshot.overagePriceDecimal ?? null,
    dimensions: snapshot.dimensions ?? null,
    // The meter the subscription started with (null is the default meter).
    meter: snapshot.meter ?? DEFAULT_METER,
  };
}

export function subscriptionView(
  { subscription, plan, price }: SubscriptionWithPlan,
  snapshots: EntitlementSnapshotRow[],
) {
  return {
    id: subscription.id,
    tenantId: subscription.tenantId,
    status: subscription.status,
    startedAt: subscription.startedAt,
    currentPeriodStart: subscription.currentPeriodStart,
    currentPeriodEnd: subscription.currentPeriodEnd,
    billingAnchor: subscription.billingAnchor,
    trialEndsAt: subscription.trialEndsAt,
    cancelAtPeriodEnd: subscription.cancelAtPeriodEnd,
    cancelledAt: subscription.cancelledAt,
    endedAt: subscription.endedAt,
    pausedAt: subscription.pausedAt,
    createdAt: subscription.createdAt,
    updatedAt: subscription.updatedAt,
    plan,
    price,
    entitlementSnapshots: snapshots
      .filter((snapshot) => snapshot.subscriptionId === subscription.id)
      .map(snapshotView),
  };
}
