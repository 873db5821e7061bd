import { and, eq, inArray } from "drizzle-orm";
import type { SnapshotTerms } from "../billing/entitlement-snapshot.ts";
import type { Database } from "./client.ts";
import type { BillingInterval, UsageThreshold } from "./schema/catalog.ts";
import { planPrices } from "./schema/catalog.ts";
import {
  currentSubscriptionStatuses,
  entitlementSnapshots,
  type SubscriptionStatus,
  subscriptions,
} from "./schema/subscriptions.ts";

/** What the entitlement check needs of a tenant: its current subscription and the snapshots. */
export interface TenantEntitlementState {
  subscription: {
    id: string;
    status: SubscriptionStatus;
    interval: BillingInterval;
    startedAt: Date;
    trialEndsAt: Date | null;
    /** Where reset windows are counted from when it is not the first billable start (plan change). */
    cycleOrigin?: Date | null;
    currentPeriodEnd: Date;
    cancelAtPeriodEnd: boolean;
    /** The price's currency: credit grants in it pay for the usage. */
    currency?: string;
    /** A prepaid price: priced usage the credit balance cannot pay for is refused. */
    prepaid?: boolean;
    /** Progressive billing thresholds of the price (cents of priced usage in a period). */
    usageThresholds?: UsageThreshold[] | null;
  } | null;
  snapshots: Map<string, SnapshotTerms>;
}

/**
 * The tenant's current subscription (at most one: a partial unique index
 * guarantees it) with its snapshots, in one query.
 */
export async function loadTenantEntitlementState(
  db: Database,
  tenantId: string,
): Promise<TenantEntitlementState> {
  const rows = await db
    .select({
      subscription: {
        id: subscriptions.id,
        status: subscriptions.status,
        startedAt: subscriptions.startedAt,
        trialEndsAt: subscriptions.trialEndsAt,
        billingCycleOrigin: subscriptions.billingCycleOrigin,
        currentPeriodEnd: subscriptions.currentPeriodEnd,
        cancelAtPeriodEnd: subscriptions.cancelAtPeriodEnd,
      },
      interval: planPrices.interval,
      currency: planPrices.currency,
      prepaid: planPrices.prepaid,
      usageThresholds: planPrices.usageThresholds,
      snapshot: {
        featureLookupKey: entitlementSnapshots.featureLookupKey,
        featureType: entitlementSnapshots.featureType,
        value: entitlementSnapshots.value,
        limit: entitlementSnapshots.limit,
        limitBehavior: entitlementSnapshots.limitBehavior,
        overagePrice: entitlementSnapshots.overagePrice,
        includedAmount: entitlementSnapshots.includedAmount,
        resetPeriod: entitlementSnapshots.resetPeriod,
        pricing: entitlementSnapshots.pricing,
        overagePriceDecimal: entitlementSnapshots.overagePriceDecimal,
        dimensions: entitlementSnapshots.dimensions,
        meter: entitlementSnapshots.meter,
      },
    })
    .from(subscriptions)
    .innerJoin(planPrices, eq(planPrices.id, subscriptions.priceId))
    .leftJoin(entitlementSnapshots, eq(entitlementSnapshots.subscriptionId, subscriptions.id))
    .where(
      and(
        eq(subscriptions.tenantId, tenantId),
        inArray(subscriptions.status, [...currentSubscriptionStatuses]),
      ),
    )
    .all();
  const first = rows[0];
  if (!first) return { subscription: null, snapshots: new Map() };
  const snapshots = new Map<string, SnapshotTerms>();
  for (const row of rows) {
    if (row.snapshot) snapshots.set(row.snapshot.featureLookupKey, row.snapshot);
  }
  return {
    subscription: {
      id: first.subscription.id,
      status: first.subscription.status,
      interval: first.interval,
      startedAt: new Date(first.subscription.startedAt),
      trialEndsAt: first.subscription.trialEndsAt ? new Date(first.subscription.trialEndsAt) : null,
      cycleOrigin: first.subscription.billingCycleOrigin
        ? new Date(first.subscription.billingCycleOrigin)
        : null,
      currentPeriodEnd: new Date(first.subscription.currentPeriodEnd),
      cancelAtPeriodEnd: first.subscription.cancelAtPeriodEnd,
      currency: first.currency,
      prepaid: first.prepaid,
      usageThresholds: first.usageThresholds,
    },
    snapshots,
  };
}
