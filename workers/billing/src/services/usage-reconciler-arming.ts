import { usageOutboxPublisher } from "../durable-objects/usage-outbox-publisher-client.ts";

let armedInThisIsolate = false;

/** Resolves to false when the publisher could not be reached (logged; the next run tries again). */
function arm(env: Pick<Env, "USAGE_OUTBOX_PUBLISHER">): Promise<boolean> {
  return usageOutboxPublisher(env.USAGE_OUTBOX_PUBLISHER)
    .ensureRunning()
    .then(() => true)
    .catch((error: unknown) => {
      armedInThisIsolate = false;
      console.error(
        JSON.stringify({ level: "warn", msg: "usage reconciler not armed", error: String(error) }),
      );
      return false;
    });
}

/**
 * Starts the outbox publisher's alarm when there is work for it (it
 * re-drives stranded usage events and keeps running while any event is
 * unfinished). The Cron Trigger
 * arms it every minute; the first request of each isolate arms it too, so
 * that after a restart (locally, where cron triggers do not fire by
 * themselves) whatever was left in flight is picked up again.
 */
export const armUsageReconciler = {
  now: arm,
  once(env: Pick<Env, "USAGE_OUTBOX_PUBLISHER">, ctx: Pick<ExecutionContext, "waitUntil">): void {
    if (armedInThisIsolate) return;
    armedInThisIsolate = true;
    ctx.waitUntil(arm(env));
  },
};
