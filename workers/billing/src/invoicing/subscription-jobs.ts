import { subscriptionPeriodAt, timelineOf } from "@edge-platform/shared/billing/billing-period";
import { type Database, database } from "@edge-platform/shared/db/client";
import type { TenantScope } from "../platform/index.ts";
import {
  activateAfterTrial,
  endAtPeriodEnd,
  refreshEntitlementCounter,
  rollEndedPeriod,
  rollPeriod,
  type SubscriptionWithPlan,
} from "../subscriptions/index.ts";
import type { BillingCycle, BillingSettleReport } from "./billing-cycle.ts";
import { dueTrialsIn, periodsToClose, unbilledCancellations } from "./billing-cycle-storage.ts";

const BATCH = 100;
const MAX_ROUNDS = 50;

export interface SubscriptionJobReport {
  activated: number;
  ended: number;
  rolled: number;
  /** Periods closed by the billing cycle (invoiced and finalized). */
  closed: number;
  /** Subscriptions left where they were because closing their period failed (retried next run). */
  closeFailures: number;
  /** What the billing cycle's settling did (final invoices, payment attempts, ...), when it ran. */
  settled?: Omit<BillingSettleReport, "touchedTenants">;
}

export interface SubscriptionJobOptions {
  /** Closes each ended period before the subscription leaves it; without it periods move on unbilled. */
  billing?: BillingCycle;
  /** Only these tenants (tests that drive their own clock); the Cron Trigger passes none. */
  tenantIds?: TenantScope;
}

/**
 * The scheduled subscription transitions (Cron Trigger, every minute), each
 * a conditional update so overlapping runs and retries are harmless:
 * - TRIALING whose trial has ended -> ACTIVE, current period = the first
 *   billable period (or the one containing `now` if the job ran late); the
 *   trial itself is never invoiced;
 * - ACTIVE and PAST_DUE subscriptions whose period has ended: the billing
 *   cycle closes the period (invoice from that period's usage, finalized),
 *   then the subscription moves to the NEXT period (one period per step, so
 *   a job that ran late still bills every period it missed), or ends there
 *   when it was set to cancel at period end. A subscription whose close
 *   failed stays in its period and is tried again by the next run;
 * - PAUSED subscriptions whose period was cut at the pause: that period is
 *   closed once and they stay where they are (resume starts a new cycle);
 * - CANCELLED subscriptions that ended after their period's end before it
 *   was closed: the period is closed, and the next one (which holds their
 *   end) becomes current so the final invoice bills the rest;
 * - trialing or paused cancel-at-period-end subscriptions end unbilled;
 * - then the billing cycle settles: final invoices of subscriptions that
 *   ended mid-period, payment attempts, retries and write-offs.
 * The counter objects of touched tenants are told to re-read.
 */
export async function runSubscriptionJobs(
  env: Env,
  now: Date,
  options: SubscriptionJobOptions = {},
): Promise<SubscriptionJobReport> {
  const run: JobRun = {
    db: database(env.DB),
    now,
    at: now.toISOString(),
    scope: options.tenantIds ?? options.billing?.tenantScope,
    touched: new Set<string>(),
    report: {
      activated: 0,
      ended: 0,
      rolled: 0,
      closed: 0,
      closeFailures: 0,
    },
  };
  await activateEndedTrials(run);
  await closeEndedPeriods(run, options.billing);
  await endUnbilledCancellations(run);

  if (options.billing) {
    const { touchedTenants, ...settled } = await options.billing.settle(now);
    for (const tenantId of touchedTenants) run.touched.add(tenantId);
    run.report.settled = settled;
  }

  await Promise.all(
    [...run.touched].map((tenantId) =>
      refreshEntitlementCounter(env.ENTITLEMENT_COUNTER, tenantId),
    ),
  );
  return run.report;
}

/** One run of the jobs: its clock and scope, and what it did so far. */
interface JobRun {
  db: Database;
  now: Date;
  at: string;
  scope: TenantScope;
  /** Tenants whose counter objects must re-read. */
  touched: Set<string>;
  report: SubscriptionJobReport;
}

async function activateEndedTrials(run: JobRun) {
  const { db, now, at, report, touched } = run;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const trials = await dueTrialsIn(db, at, run.scope, BATCH);
    for (const { subscription, price } of trials) {
      const period = subscriptionPeriodAt(timelineOf(subscription, price.interval), now);
      const changed = await activateAfterTrial(
        db,
        subscription.id,
        { start: period.start.toISOString(), end: period.end.toISOString() },
        at,
      );
      if (changed) {
        report.activated++;
        touched.add(changed.tenantId);
      }
    }
    if (trials.length < BATCH) break;
  }
}

/**
 * Each ended period is closed before its subscription leaves it; a
 * subscription whose close failed is skipped for the rest of the run, so
 * that it stays in its period for the next run.
 */
async function closeEndedPeriods(run: JobRun, billing: BillingCycle | undefined) {
  const stuck = new Set<string>();
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const due = (await periodsToClose(run.db, run.at, run.scope, BATCH)).filter(
      (found) => !stuck.has(found.subscription.id),
    );
    if (due.length === 0) break;
    for (const found of due) {
      const { subscription } = found;
      if (billing) {
        try {
          await billing.closePeriod(found, run.now);
          run.report.closed++;
        } catch (error) {
          stuck.add(subscription.id);
          run.report.closeFailures++;
          console.error(
            JSON.stringify({
              level: "error",
              msg: "closing a billing period failed; the subscription stays in it until the next run",
              subscriptionId: subscription.id,
              error: String(error),
            }),
          );
          continue;
        }
      }
      await leaveClosedPeriod(run, found);
    }
  }
}

/** Where a subscription goes once its ended period is closed. */
async function leaveClosedPeriod(run: JobRun, found: SubscriptionWithPlan) {
  const { db, at, report, touched } = run;
  const { subscription, price } = found;
  if (subscription.status === "CANCELLED") {
    // Ended after this period: the next period holds its end, billed by the final invoice.
    if (subscription.pausedAt === null) {
      const next = subscriptionPeriodAt(
        timelineOf(subscription, price.interval),
        new Date(subscription.currentPeriodEnd),
      );
      await rollEndedPeriod(
        db,
        subscription.id,
        subscription.currentPeriodEnd,
        { start: next.start.toISOString(), end: next.end.toISOString() },
        at,
      );
    }
    return;
  }
  if (subscription.status === "PAUSED" && !subscription.cancelAtPeriodEnd) return;
  if (subscription.cancelAtPeriodEnd) {
    const changed = await endAtPeriodEnd(db, subscription.id, subscription.currentPeriodEnd, at);
    if (changed) {
      report.ended++;
      touched.add(changed.tenantId);
    }
    return;
  }
  // The period that starts where the closed one ends (counted from the cycle origin).
  const next = subscriptionPeriodAt(
    timelineOf(subscription, price.interval),
    new Date(subscription.currentPeriodEnd),
  );
  const changed = await rollPeriod(
    db,
    subscription.id,
    subscription.currentPeriodEnd,
    { start: next.start.toISOString(), end: next.end.toISOString() },
    at,
  );
  if (changed) {
    report.rolled++;
    touched.add(subscription.tenantId);
  }
}

async function endUnbilledCancellations(run: JobRun) {
  const { db, at, report, touched } = run;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const due = await unbilledCancellations(db, at, run.scope, BATCH);
    for (const subscription of due) {
      const changed = await endAtPeriodEnd(db, subscription.id, subscription.currentPeriodEnd, at);
      if (changed) {
        report.ended++;
        touched.add(changed.tenantId);
      }
    }
    if (due.length < BATCH) break;
  }
}
