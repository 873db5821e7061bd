import { database } from "../db/client.ts";
import {
  activateAfterTrial,
  dueCancellations,
  dueTrials,
  elapsedPeriods,
  endAtPeriodEnd,
  rollPeriod,
} from "../db/subscriptions.ts";
import { subscriptionPeriodAt } from "../domain/billing-period.ts";
import { refreshEntitlementCounter } from "../services/subscriptions.ts";

const BATCH = 100;
const MAX_ROUNDS = 50;

export interface SubscriptionJobReport {
  activated: number;
  ended: number;
  rolled: number;
}

/**
 * The scheduled subscription transitions (Cron Trigger, every minute), each
 * a conditional update so overlapping runs and retries are harmless:
 * - TRIALING whose trial has ended -> ACTIVE, current period = the first
 *   billable period (or the one containing `now` if the job ran late);
 * - cancel-at-period-end subscriptions whose period has ended -> CANCELLED;
 * - ACTIVE and PAST_DUE subscriptions whose period has ended move to the
 *   period containing `now` (anchored on the first billable start).
 * The counter objects of touched tenants are told to re-read.
 */
export async function runSubscriptionJobs(env: Env, now: Date): Promise<SubscriptionJobReport> {
  const db = database(env.DB);
  const at = now.toISOString();
  const touched = new Set<string>();
  const report: SubscriptionJobReport = { activated: 0, ended: 0, rolled: 0 };

  for (let round = 0; round < MAX_ROUNDS; round++) {
    const trials = await dueTrials(db, at, BATCH);
    for (const { subscription, interval } of trials) {
      const period = subscriptionPeriodAt(
        {
          startedAt: new Date(subscription.startedAt),
          trialEndsAt: subscription.trialEndsAt ? new Date(subscription.trialEndsAt) : null,
          interval,
        },
        now,
      );
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

  for (let round = 0; round < MAX_ROUNDS; round++) {
    const due = await dueCancellations(db, at, BATCH);
    for (const subscription of due) {
      const changed = await endAtPeriodEnd(db, subscription.id, subscription.currentPeriodEnd, at);
      if (changed) {
        report.ended++;
        touched.add(changed.tenantId);
      }
    }
    if (due.length < BATCH) break;
  }

  for (let round = 0; round < MAX_ROUNDS; round++) {
    const elapsed = await elapsedPeriods(db, at, BATCH);
    for (const { subscription, interval } of elapsed) {
      const period = subscriptionPeriodAt(
        {
          startedAt: new Date(subscription.startedAt),
          trialEndsAt: subscription.trialEndsAt ? new Date(subscription.trialEndsAt) : null,
          interval,
        },
        now,
      );
      const changed = await rollPeriod(
        db,
        subscription.id,
        subscription.currentPeriodEnd,
        { start: period.start.toISOString(), end: period.end.toISOString() },
        at,
      );
      if (changed) {
        report.rolled++;
        touched.add(subscription.tenantId);
      }
    }
    if (elapsed.length < BATCH) break;
  }

  await Promise.all(
    [...touched].map((tenantId) => refreshEntitlementCounter(env.ENTITLEMENT_COUNTER, tenantId)),
  );
  return report;
}
