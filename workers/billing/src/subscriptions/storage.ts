import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import type { Database } from "@edge-platform/shared/db/client";
import { inList } from "@edge-platform/shared/db/in-list";
import { planPrices, plans } from "@edge-platform/shared/db/schema/catalog";
import {
  currentSubscriptionStatuses,
  entitlementSnapshots,
  subscriptions,
  tenantTrials,
} from "@edge-platform/shared/db/schema/subscriptions";
import { and, asc, count, desc, eq, inArray, lte, sql } from "drizzle-orm";

export type SubscriptionRow = typeof subscriptions.$inferSelect;
export type EntitlementSnapshotRow = typeof entitlementSnapshots.$inferSelect;

const CURRENT = [...currentSubscriptionStatuses];

const withPlanAndPrice = {
  subscription: subscriptions,
  plan: { id: plans.id, name: plans.name, slug: plans.slug },
  price: {
    id: planPrices.id,
    interval: planPrices.interval,
    amount: planPrices.amount,
    currency: planPrices.currency,
  },
};

/** Subscriptions joined with their plan and price, shaped as SubscriptionWithPlan. */
export function subscriptionsWithPlan(db: Database) {
  return db
    .select(withPlanAndPrice)
    .from(subscriptions)
    .innerJoin(plans, eq(plans.id, subscriptions.planId))
    .innerJoin(planPrices, eq(planPrices.id, subscriptions.priceId));
}

export type SubscriptionWithPlan = {
  subscription: SubscriptionRow;
  plan: { id: string; name: string; slug: string };
  price: { id: string; interval: "MONTHLY" | "ANNUALLY"; amount: number; currency: string };
};

/**
 * A subscribe as one batch: the current subscription the new one was
 * planned against (`replacingId`, a plan change) ends, the new one is
 * inserted with its snapshots. Only that subscription is ended: if another
 * change got in between the read and this batch, it is still current, the
 * insert hits the partial unique index on current subscriptions and the
 * whole batch fails, so the new periods are never computed from a stale
 * predecessor and the invariant holds whatever runs concurrently.
 */
export function subscribeStatements(
  db: Database,
  row: typeof subscriptions.$inferInsert & { id: string; tenantId: string },
  snapshots: SnapshotTerms[],
  now: string,
  replacingId: string | null,
) {
  // With nothing to replace the first statement matches no row; it keeps
  // the batch's shape fixed.
  const end = db
    .update(subscriptions)
    .set({ status: "CANCELLED", cancelledAt: now, endedAt: now, updatedAt: now })
    .where(
      replacingId === null
        ? sql`0`
        : and(
            eq(subscriptions.id, replacingId),
            eq(subscriptions.tenantId, row.tenantId),
            inArray(subscriptions.status, CURRENT),
          ),
    );
  // The tenant's one trial is recorded with it; a second one fails the batch.
  const trial = row.trialEndsAt
    ? [
        db
          .insert(tenantTrials)
          .values({ tenantId: row.tenantId, subscriptionId: row.id, startedAt: now }),
      ]
    : [];
  return [
    end,
    db.insert(subscriptions).values(row),
    ...trial,
    ...snapshots.map((terms) =>
      db.insert(entitlementSnapshots).values({
        id: crypto.randomUUID(),
        subscriptionId: row.id,
        createdAt: now,
        ...terms,
      }),
    ),
  ] as const;
}

/** Ends every current subscription of a tenant (used when the tenant itself is cancelled). */
export function endCurrentSubscriptionsStatement(db: Database, tenantId: string, now: string) {
  return db
    .update(subscriptions)
    .set({ status: "CANCELLED", cancelledAt: now, endedAt: now, updatedAt: now })
    .where(and(eq(subscriptions.tenantId, tenantId), inArray(subscriptions.status, CURRENT)));
}

export function findSubscription(db: Database, tenantId: string, id: string) {
  return subscriptionsWithPlan(db)
    .where(and(eq(subscriptions.id, id), eq(subscriptions.tenantId, tenantId)))
    .get();
}

export function findSubscriptionById(db: Database, id: string) {
  return subscriptionsWithPlan(db).where(eq(subscriptions.id, id)).get();
}

export function findCurrentSubscription(db: Database, tenantId: string) {
  return subscriptionsWithPlan(db)
    .where(and(eq(subscriptions.tenantId, tenantId), inArray(subscriptions.status, CURRENT)))
    .get();
}

export async function listSubscriptions(
  db: Database,
  tenantId: string,
  offset: number,
  limit: number,
) {
  // Two statements rather than one db.batch: drizzle maps batched join
  // results by column name, and subscriptions, plans and prices all have `id`.
  const [rows, totals] = await Promise.all([
    subscriptionsWithPlan(db)
      .where(eq(subscriptions.tenantId, tenantId))
      .orderBy(desc(subscriptions.createdAt), desc(subscriptions.id))
      .limit(limit)
      .offset(offset)
      .all(),
    db
      .select({ total: count() })
      .from(subscriptions)
      .where(eq(subscriptions.tenantId, tenantId))
      .all(),
  ]);
  return { rows, total: totals[0]?.total ?? 0 };
}

export function listSnapshots(db: Database, subscriptionIds: string[]) {
  if (subscriptionIds.length === 0) return Promise.resolve([] as EntitlementSnapshotRow[]);
  return db
    .select()
    .from(entitlementSnapshots)
    .where(inList(entitlementSnapshots.subscriptionId, subscriptionIds))
    .orderBy(asc(entitlementSnapshots.featureLookupKey))
    .all();
}

/** Conditional transitions: each changes the row only from the states it is allowed from. */

/** A current subscription of the tenant that is not already set to end: what cancel may change. */
function cancellable(tenantId: string, id: string) {
  return and(
    eq(subscriptions.id, id),
    eq(subscriptions.tenantId, tenantId),
    inArray(subscriptions.status, CURRENT),
    eq(subscriptions.cancelAtPeriodEnd, false),
  );
}

export function cancelNow(db: Database, tenantId: string, id: string, now: string) {
  return db
    .update(subscriptions)
    .set({ status: "CANCELLED", cancelledAt: now, endedAt: now, updatedAt: now })
    .where(cancellable(tenantId, id))
    .returning({ id: subscriptions.id, status: subscriptions.status });
}

export function cancelAtPeriodEnd(db: Database, tenantId: string, id: string, now: string) {
  return db
    .update(subscriptions)
    .set({ cancelAtPeriodEnd: true, cancelledAt: now, updatedAt: now })
    .where(cancellable(tenantId, id))
    .returning({ id: subscriptions.id, status: subscriptions.status });
}

/**
 * -> PAUSED. A billing period running at the pause is cut there: it is
 * billed (prorated) up to the pause, and the paused time never is. A trial
 * keeps its period (trials are not billed).
 */
export function pause(db: Database, tenantId: string, id: string, now: string) {
  return db
    .update(subscriptions)
    .set({
      status: "PAUSED",
      pausedAt: now,
      updatedAt: now,
      currentPeriodEnd: sql`CASE WHEN ${subscriptions.status} IN ('ACTIVE', 'PAST_DUE')
        AND ${subscriptions.currentPeriodStart} < ${now} AND ${subscriptions.currentPeriodEnd} > ${now}
        THEN ${now} ELSE ${subscriptions.currentPeriodEnd} END`,
    })
    .where(
      and(
        eq(subscriptions.id, id),
        eq(subscriptions.tenantId, tenantId),
        inArray(subscriptions.status, ["ACTIVE", "TRIALING", "PAST_DUE"]),
      ),
    )
    .returning({ id: subscriptions.id, status: subscriptions.status });
}

/**
 * PAUSED -> TRIALING while the trial still runs (its period unchanged);
 * otherwise ACTIVE in a new billing cycle that starts at the resume (the
 * paused time is never billed). Conditional on the period it was read
 * with, so the pre-pause period the caller closed is the one left.
 */
export function resume(
  db: Database,
  tenantId: string,
  id: string,
  expectedPeriodStart: string,
  cycle: { origin: string; anchor: number; start: string; end: string },
  now: string,
) {
  const inTrial = sql`${subscriptions.trialEndsAt} > ${now}`;
  return db
    .update(subscriptions)
    .set({
      status: sql`CASE WHEN ${inTrial} THEN 'TRIALING' ELSE 'ACTIVE' END`,
      billingCycleOrigin: sql`CASE WHEN ${inTrial} THEN ${subscriptions.billingCycleOrigin} ELSE ${cycle.origin} END`,
      billingAnchor: sql`CASE WHEN ${inTrial} THEN ${subscriptions.billingAnchor} ELSE ${cycle.anchor} END`,
      currentPeriodStart: sql`CASE WHEN ${inTrial} THEN ${subscriptions.currentPeriodStart} ELSE ${cycle.start} END`,
      currentPeriodEnd: sql`CASE WHEN ${inTrial} THEN ${subscriptions.currentPeriodEnd} ELSE ${cycle.end} END`,
      pausedAt: null,
      updatedAt: now,
    })
    .where(
      and(
        eq(subscriptions.id, id),
        eq(subscriptions.tenantId, tenantId),
        eq(subscriptions.status, "PAUSED"),
        eq(subscriptions.currentPeriodStart, expectedPeriodStart),
      ),
    )
    .returning({ id: subscriptions.id, status: subscriptions.status });
}

// --- scheduled transitions -----------------------------------------------

/** TRIALING -> ACTIVE at the trial's end, moving to the first billable period. */
export function activateAfterTrial(
  db: Database,
  id: string,
  period: { start: string; end: string },
  now: string,
) {
  return db
    .update(subscriptions)
    .set({
      status: "ACTIVE",
      currentPeriodStart: period.start,
      currentPeriodEnd: period.end,
      updatedAt: now,
    })
    .where(and(eq(subscriptions.id, id), eq(subscriptions.status, "TRIALING")))
    .returning({ id: subscriptions.id, tenantId: subscriptions.tenantId })
    .get();
}

export function endAtPeriodEnd(db: Database, id: string, endedAt: string, now: string) {
  return db
    .update(subscriptions)
    .set({ status: "CANCELLED", endedAt, updatedAt: now })
    .where(
      and(
        eq(subscriptions.id, id),
        eq(subscriptions.cancelAtPeriodEnd, true),
        inArray(subscriptions.status, CURRENT),
        lte(subscriptions.currentPeriodEnd, now),
      ),
    )
    .returning({ id: subscriptions.id, tenantId: subscriptions.tenantId })
    .get();
}

/**
 * A subscription that ended after the end of its (now closed) period moves
 * to the next period, in which its final (PRORATION) invoice bills it up to
 * its end.
 */
export function rollEndedPeriod(
  db: Database,
  id: string,
  from: string,
  period: { start: string; end: string },
  now: string,
) {
  return db
    .update(subscriptions)
    .set({ currentPeriodStart: period.start, currentPeriodEnd: period.end, updatedAt: now })
    .where(
      and(
        eq(subscriptions.id, id),
        eq(subscriptions.currentPeriodEnd, from),
        eq(subscriptions.status, "CANCELLED"),
        sql`${subscriptions.endedAt} > ${from}`,
      ),
    )
    .returning({ id: subscriptions.id })
    .get();
}

/** Moves an ACTIVE or PAST_DUE subscription to the period that contains now. */
export function rollPeriod(
  db: Database,
  id: string,
  from: string,
  period: { start: string; end: string },
  now: string,
) {
  return db
    .update(subscriptions)
    .set({ currentPeriodStart: period.start, currentPeriodEnd: period.end, updatedAt: now })
    .where(
      and(
        eq(subscriptions.id, id),
        eq(subscriptions.currentPeriodEnd, from),
        inArray(subscriptions.status, ["ACTIVE", "PAST_DUE"]),
      ),
    )
    .returning({ id: subscriptions.id })
    .get();
}

/** Whether the tenant ever had a trial (one per tenant, for its lifetime). */
export async function tenantHadTrial(db: Database, tenantId: string): Promise<boolean> {
  const row = await db
    .select({ tenantId: tenantTrials.tenantId })
    .from(tenantTrials)
    .where(eq(tenantTrials.tenantId, tenantId))
    .get();
  return row !== undefined;
}
