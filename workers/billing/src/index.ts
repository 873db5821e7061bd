import { createApp } from "./app.ts";
import {
  consumeWebhookBatch,
  isWebhookQueue,
  scheduledBillingCycle,
} from "./jobs/billing-cycle.ts";
import { pruneIdempotencyKeys } from "./jobs/idempotency-prune.ts";
import { runSubscriptionJobs } from "./jobs/subscription-jobs.ts";
import { runUsageArchive } from "./jobs/usage-archive.ts";
import { consumeOutboundWebhookBatch, isOutboundWebhookQueue } from "./jobs/webhook-deliveries.ts";
import { pruneWebhookHistory } from "./jobs/webhook-retention.ts";
import { relayTenantEventsQuietly } from "./services/tenant-events.ts";
import { armUsageReconciler } from "./services/usage-reconciler-arming.ts";
import type { WebhookQueueMessage } from "./services/webhooks.ts";

export { RateLimiter } from "@edge-platform/shared/rate-limit/rate-limiter";
export { EntitlementCounter } from "./durable-objects/entitlement-counter.ts";
export { UsageArchiveIndex } from "./durable-objects/usage-archive-index.ts";
export { UsageDedupWindow } from "./durable-objects/usage-dedup-window.ts";
export { UsageOutboxPublisher } from "./durable-objects/usage-outbox-publisher.ts";

const app = createApp();

export default {
  fetch(request, env, ctx) {
    armUsageReconciler.once(env, ctx);
    return app.fetch(request, env, ctx);
  },
  /**
   * Cron Trigger (wrangler.toml [triggers]): subscription transitions, the
   * billing cycle, arming the usage reconciler, and archiving the usage
   * events past the retention window to R2.
   */
  scheduled(controller, env, ctx) {
    ctx.waitUntil(pruneIdempotencyKeys(env, controller.scheduledTime));
    ctx.waitUntil(pruneWebhookHistory(env.DB, new Date(controller.scheduledTime)));
    ctx.waitUntil(armUsageReconciler.now(env));
    ctx.waitUntil(
      runUsageArchive(env, new Date(controller.scheduledTime)).catch((error: unknown) =>
        console.error(
          JSON.stringify({ level: "error", msg: "usage archive run failed", error: String(error) }),
        ),
      ),
    );
    ctx.waitUntil(
      runSubscriptionJobs(env, new Date(controller.scheduledTime), {
        billing: scheduledBillingCycle(env),
      })
        .then((report) => {
          if (report.activated + report.ended + report.rolled + report.closeFailures > 0) {
            console.log(JSON.stringify({ level: "info", msg: "subscription jobs", ...report }));
          }
        })
        // The cycle's events (finalized, paid, failed, past due) are in the
        // outbox; this also re-sends events an earlier relay left unsent.
        .finally(() => relayTenantEventsQuietly(env)),
    );
  },
  /**
   * Queue consumers (wrangler.toml): provider webhooks and their dead
   * letters; tenant events, outbound webhook deliveries and theirs.
   */
  async queue(batch, env) {
    if (isWebhookQueue(batch.queue)) {
      await consumeWebhookBatch(batch as MessageBatch<WebhookQueueMessage>, env);
      // Payment events may have written tenant events (paid, failed, past due).
      await relayTenantEventsQuietly(env);
      return;
    }
    if (isOutboundWebhookQueue(batch.queue)) {
      await consumeOutboundWebhookBatch(batch, env);
      return;
    }
    console.error(
      JSON.stringify({ level: "error", msg: "no consumer for queue", queue: batch.queue }),
    );
    batch.retryAll();
  },
} satisfies ExportedHandler<Env>;
