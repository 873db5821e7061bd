import { database } from "@edge-platform/shared/db/client";
import { finishWebhookEvent } from "./provider-webhook-storage.ts";
import { processWebhookEvent, type WebhookQueueMessage } from "./provider-webhooks.ts";
import type { PaymentService } from "./service.ts";

export const WEBHOOK_QUEUE = "payprovider-webhooks";
export const WEBHOOK_DEAD_LETTER_QUEUE = "payprovider-webhooks-dlq";

export function isWebhookQueue(queue: string): boolean {
  return queue === WEBHOOK_QUEUE || queue === WEBHOOK_DEAD_LETTER_QUEUE;
}

/** Retry delays for webhook processing: 5 s, 10 s, 20 s, ... capped at 5 minutes. */
function retryDelaySeconds(attempts: number): number {
  return Math.min(300, 5 * 2 ** Math.max(0, attempts - 1));
}

/** Queue consumer for stored provider webhooks and their dead letters, applied by `payments`. */
export async function consumeWebhookBatch(
  batch: MessageBatch<WebhookQueueMessage>,
  env: Env,
  payments: PaymentService,
): Promise<void> {
  const db = database(env.DB);
  if (batch.queue === WEBHOOK_DEAD_LETTER_QUEUE) {
    for (const message of batch.messages) {
      await finishWebhookEvent(env.DB, message.body.webhookEventId, {
        status: "FAILED",
        error: "dead-lettered: processing kept failing after every retry",
        now: new Date().toISOString(),
      });
      console.error(
        JSON.stringify({
          level: "error",
          msg: "webhook event dead-lettered",
          webhookEventId: message.body.webhookEventId,
        }),
      );
      message.ack();
    }
    return;
  }
  for (const message of batch.messages) {
    try {
      await processWebhookEvent(db, env.DB, payments, message.body.webhookEventId, new Date());
      message.ack();
    } catch (error) {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "webhook processing failed; will retry",
          webhookEventId: message.body.webhookEventId,
          attempts: message.attempts,
          error: String(error),
        }),
      );
      message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
    }
  }
}
