import { pruneUsageFlushIds } from "./entitlements/index.ts";
import { runSubscriptionJobs } from "./invoicing/index.ts";
import { pruneWebhookHistory, relayTenantEventsQuietly } from "./notifications/index.ts";
import {
  pruneIdempotencyKeys,
  type ScheduledRunRecord,
  type ScheduledTaskResults,
  scheduledRunRecord,
} from "./platform/index.ts";
import { billingCycle, creditNotesService, expireCreditGrants } from "./services.ts";
import { drainD1UsageLog } from "./usage/index.ts";

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
 * left), moving what is left of the D1 usage log of earlier releases into
 * the tenants' usage logs (usage/log/d1-drain.ts), and the idempotency-key
 * and webhook-history pruning, the usage counters' old flush ids
 * (entitlements/counter/flush-prune.ts), the write-off of expired credit grants,
 * and the refunds of credit notes the payment provider could not be asked for.
 * The usage logs archive and re-drive by
 * their own alarms. The independent tasks run side by side;
 * a task that fails is logged and does not stop the others. Ends with one
 * log line of what the run did (platform/domain/scheduled-run.ts), which it returns.
 */
export async function runScheduledWork(
  env: Env,
  controller: Pick<ScheduledController, "cron" | "scheduledTime">,
): Promise<ScheduledRunRecord> {
  const started = Date.now();
  const now = new Date(controller.scheduledTime);
  const [
    subscriptions,
    usageDrain,
    idempotencyPrune,
    webhookHistoryPrune,
    creditGrantsExpired,
    usageFlushIdsPruned,
    refundsSent,
  ] = await Promise.all([
    runSubscriptionJobs(env, now, { billing: billingCycle(env) }).catch(
      failed("subscription jobs"),
    ),
    drainD1UsageLog(env).catch(failed("usage log drain")),
    pruneIdempotencyKeys(env, controller.scheduledTime),
    pruneWebhookHistory(env.DB, now),
    expireCreditGrants(env, now).catch(failed("credit grant expiry")),
    pruneUsageFlushIds(env, controller.scheduledTime),
    creditNotesService(env).sendUnsentRefunds(now).catch(failed("credit note refunds")),
  ]);
  // After the cycle, so the events it wrote (finalized, paid, failed, past due) go out now.
  const tenantEvents = await relayTenantEventsQuietly(env);
  const results: ScheduledTaskResults = {
    subscriptions,
    tenantEvents,
    usageArchive: usageDrain && { events: usageDrain.moved, deleted: usageDrain.deleted },
    idempotencyPrune,
    webhookHistoryPrune,
    usageReconciler: usageDrain ? true : null,
  };
  const record = scheduledRunRecord(
    { cron: controller.cron, scheduledTime: now, durationMs: Date.now() - started },
    results,
  );
  console.log(JSON.stringify({ ...record, creditGrantsExpired, usageFlushIdsPruned, refundsSent }));
  return record;
}
