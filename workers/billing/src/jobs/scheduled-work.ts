import {
  type ScheduledRunRecord,
  type ScheduledTaskResults,
  scheduledRunRecord,
} from "../domain/scheduled-run.ts";
import { relayTenantEventsQuietly } from "../services/tenant-events.ts";
import { armUsageReconciler } from "../services/usage-reconciler-arming.ts";
import { scheduledBillingCycle } from "./billing-cycle.ts";
import { expireCreditGrants } from "./credit-expiry.ts";
import { pruneIdempotencyKeys } from "./idempotency-prune.ts";
import { runSubscriptionJobs } from "./subscription-jobs.ts";
import { runUsageArchive } from "./usage-archive.ts";
import { pruneWebhookHistory } from "./webhook-retention.ts";

function failed(task: string) {
  return (error: unknown) => {
    console.error(
      JSON.stringify({ level: "error", msg: `scheduled ${task} failed`, error: String(error) }),
    );
    return null;
  };
}

/**
 * Everything the Cron Trigger does, at `controller.scheduledTime`: the
 * subscription transitions and billing cycle (then the tenant-event sweep,
 * which sends the events the cycle wrote and re-sends any an earlier relay
 * left), the usage archive, the idempotency-key and webhook-history pruning,
 * the write-off of expired credit grants, and arming the usage reconciler. The independent tasks run side by side;
 * a task that fails is logged and does not stop the others. Ends with one
 * log line of what the run did (domain/scheduled-run.ts), which it returns.
 */
export async function runScheduledWork(
  env: Env,
  controller: Pick<ScheduledController, "cron" | "scheduledTime">,
): Promise<ScheduledRunRecord> {
  const started = Date.now();
  const now = new Date(controller.scheduledTime);
  const [
    subscriptions,
    usageArchive,
    idempotencyPrune,
    webhookHistoryPrune,
    usageReconciler,
    creditGrantsExpired,
  ] = await Promise.all([
    runSubscriptionJobs(env, now, { billing: scheduledBillingCycle(env) }).catch(
      failed("subscription jobs"),
    ),
    runUsageArchive(env, now).catch(failed("usage archive")),
    pruneIdempotencyKeys(env, controller.scheduledTime),
    pruneWebhookHistory(env.DB, now),
    armUsageReconciler.now(env).then((armed) => (armed ? (true as const) : null)),
    expireCreditGrants(env, now).catch(failed("credit grant expiry")),
  ]);
  // After the cycle, so the events it wrote (finalized, paid, failed, past due) go out now.
  const tenantEvents = await relayTenantEventsQuietly(env);
  const results: ScheduledTaskResults = {
    subscriptions,
    tenantEvents,
    usageArchive,
    idempotencyPrune,
    webhookHistoryPrune,
    usageReconciler,
  };
  const record = scheduledRunRecord(
    { cron: controller.cron, scheduledTime: now, durationMs: Date.now() - started },
    results,
  );
  console.log(JSON.stringify({ ...record, creditGrantsExpired }));
  return record;
}
