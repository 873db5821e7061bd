import { env } from "cloudflare:workers";
import {
  initialSubscriptionPeriods,
  resetWindowAt,
} from "@edge-platform/shared/billing/billing-period";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import { type BillingInterval, planPrices, plans } from "@edge-platform/shared/db/schema/catalog";
import { tenants } from "@edge-platform/shared/db/schema/identity";
import {
  entitlementSnapshots,
  type SubscriptionStatus,
  subscriptions,
} from "@edge-platform/shared/db/schema/subscriptions";
import { usageAggregates } from "@edge-platform/shared/db/schema/usage-aggregates";
import { and, eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";

// Direct D1 fixtures for tests of the counter object, which sits below the
// HTTP layer: a tenant with a current subscription and chosen snapshots.

const db = () => drizzle(env.DB);

const noTerms = {
  value: null,
  limit: null,
  limitBehavior: null,
  overagePrice: null,
  includedAmount: null,
  resetPeriod: null,
  pricing: null,
} as const;

export const snapshot = {
  flag: (key: string, value: boolean): SnapshotTerms => ({
    ...noTerms,
    featureLookupKey: key,
    featureType: "BOOLEAN",
    value,
  }),
  hard: (
    key: string,
    limit: number,
    resetPeriod: SnapshotTerms["resetPeriod"] = "MONTHLY",
  ): SnapshotTerms => ({
    ...noTerms,
    featureLookupKey: key,
    featureType: "QUOTA",
    limit,
    limitBehavior: "HARD",
    resetPeriod,
  }),
  soft: (key: string, limit: number, overagePrice = 100): SnapshotTerms => ({
    ...noTerms,
    featureLookupKey: key,
    featureType: "QUOTA",
    limit,
    limitBehavior: "SOFT",
    overagePrice,
    resetPeriod: "MONTHLY",
  }),
  metered: (key: string, includedAmount: number, overagePrice = 10): SnapshotTerms => ({
    ...noTerms,
    featureLookupKey: key,
    featureType: "METERED",
    includedAmount,
    overagePrice,
    resetPeriod: "MONTHLY",
  }),
};

export async function insertTenant(): Promise<string> {
  const id = crypto.randomUUID();
  await db()
    .insert(tenants)
    .values({ id, name: "Counter test", slug: `counter-${id}` });
  return id;
}

/** A plan with one price, for subscriptions that do not go through the API. */
export async function insertPlan(interval: BillingInterval = "MONTHLY") {
  const planId = crypto.randomUUID();
  const priceId = crypto.randomUUID();
  await db().batch([
    db()
      .insert(plans)
      .values({ id: planId, name: "Fixture", slug: `fixture-${planId}` }),
    db()
      .insert(planPrices)
      .values({ id: priceId, planId, interval, amount: 1000, currency: "usd" }),
  ]);
  return { planId, priceId };
}

export interface SubscriptionFixture {
  tenantId: string;
  subscriptionId: string;
  startedAt: Date;
}

export async function insertSubscription(options: {
  tenantId: string;
  snapshots: SnapshotTerms[];
  startedAt?: Date;
  interval?: BillingInterval;
  trialDays?: number;
  status?: SubscriptionStatus;
}): Promise<SubscriptionFixture> {
  const startedAt = options.startedAt ?? new Date();
  const interval = options.interval ?? "MONTHLY";
  const { planId, priceId } = await insertPlan(interval);
  const periods = initialSubscriptionPeriods(startedAt, interval, options.trialDays);
  const subscriptionId = crypto.randomUUID();
  await db().batch([
    db()
      .insert(subscriptions)
      .values({
        id: subscriptionId,
        tenantId: options.tenantId,
        planId,
        priceId,
        status: options.status ?? periods.status,
        startedAt: startedAt.toISOString(),
        currentPeriodStart: periods.currentPeriodStart.toISOString(),
        currentPeriodEnd: periods.currentPeriodEnd.toISOString(),
        billingAnchor: periods.billingAnchor,
        trialEndsAt: periods.trialEndsAt?.toISOString() ?? null,
      }),
    ...options.snapshots.map((terms) =>
      db()
        .insert(entitlementSnapshots)
        .values({ id: crypto.randomUUID(), subscriptionId, ...terms }),
    ),
  ]);
  return { tenantId: options.tenantId, subscriptionId, startedAt };
}

/** The subscription's monthly usage window at `at`, in the columns the counter and the aggregates store. */
export function monthlyWindowAt(fixture: SubscriptionFixture, at: Date = new Date()) {
  const window = resetWindowAt(
    { startedAt: fixture.startedAt, trialEndsAt: null, interval: "MONTHLY" },
    "MONTHLY",
    at,
  );
  return {
    periodKey: window.key,
    periodStart: window.start.toISOString(),
    periodEnd: window.end?.toISOString() ?? null,
  };
}

/** Builds the counter's `record` entries (what validation sends) for one feature, at `at`. */
export function recordEntryFor(fixture: SubscriptionFixture, featureKey: string, at: Date) {
  const window = monthlyWindowAt(fixture, at);
  return (eventId: string, amount: number) => ({
    eventId,
    subscriptionId: fixture.subscriptionId,
    featureKey,
    ...window,
    amount,
    occurredAt: at.toISOString(),
  });
}

/** A new tenant subscribed with these snapshots. */
export async function subscribedTenant(snapshots: SnapshotTerms[]): Promise<SubscriptionFixture> {
  return insertSubscription({ tenantId: await insertTenant(), snapshots });
}

/** The units usage_aggregates holds for the subscription's feature, over every window. */
export async function storedAmount(
  fixture: Pick<SubscriptionFixture, "subscriptionId">,
  featureKey: string,
): Promise<number> {
  const rows = await db()
    .select({ amount: usageAggregates.amount })
    .from(usageAggregates)
    .where(
      and(
        eq(usageAggregates.subscriptionId, fixture.subscriptionId),
        eq(usageAggregates.featureLookupKey, featureKey),
      ),
    )
    .all();
  return rows.reduce((sum, row) => sum + row.amount, 0);
}
