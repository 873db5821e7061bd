import { createApp } from "./app.ts";
import { SYSTEM_AUDIT } from "./audit/index.ts";
import { type CounterEffects, EntitlementCounterObject } from "./entitlements/index.ts";
import {
  consumeOutboundWebhookBatch,
  isOutboundWebhookQueue,
  relayTenantEventsQuietly,
} from "./notifications/index.ts";
import { consumeWebhookBatch, isWebhookQueue, type WebhookQueueMessage } from "./payments/index.ts";
import { runScheduledWork } from "./scheduled-work.ts";
import { counterEffects, payments } from "./services.ts";

export { RateLimiter } from "@edge-platform/shared/rate-limit/rate-limiter";
export { UsageLog } from "./usage/index.ts";

/** The tenant's usage counter, with the services that do the work it records. */
export class EntitlementCounter extends EntitlementCounterObject {
  protected override effects(): CounterEffects {
    return counterEffects(this.env);
  }
}

const app = createApp();

export default {
  fetch(request, env, ctx) {
    return app.fetch(request, env, ctx);
  },
  /**
   * Cron Trigger (wrangler.toml [triggers]): subscription transitions, the
   * billing cycle, the tenant-event sweep, moving the D1 usage log of
   * earlier releases into the usage log, and pruning (scheduled-work.ts); one log line per run.
   */
  scheduled(controller, env, ctx) {
    ctx.waitUntil(runScheduledWork(env, controller));
  },
  /**
   * Queue consumers (wrangler.toml): provider webhooks and their dead
   * letters; tenant events, outbound webhook deliveries and theirs.
   */
  async queue(batch, env) {
    if (isWebhookQueue(batch.queue)) {
      await consumeWebhookBatch(
        batch as MessageBatch<WebhookQueueMessage>,
        env,
        payments(env, SYSTEM_AUDIT),
      );
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
