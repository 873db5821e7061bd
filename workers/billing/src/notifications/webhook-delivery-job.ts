import { deliverySettings } from "./domain/webhook-delivery.ts";
import {
  deadLetterWebhookBatch,
  deliverWebhookBatch,
  fanOutTenantEvents,
  parkTenantEvents,
} from "./webhook-delivery.ts";
import type { WebhookDeliveryMessage } from "./webhook-endpoint-service.ts";

// Outbound webhooks' queues (wrangler.toml): tenant events fan out to
// deliveries (an event whose fan-out keeps failing is parked back in the
// outbox); each delivery is one signed POST, retried with backoff by the
// queue; a delivery whose retries are spent reaches the dead-letter queue.

export const TENANT_EVENTS_QUEUE = "tenant-events";
export const TENANT_EVENTS_DLQ = "tenant-events-dlq";
export const WEBHOOK_DELIVERIES_QUEUE = "webhook-deliveries";
export const WEBHOOK_DELIVERIES_DLQ = "webhook-deliveries-dlq";

export function isOutboundWebhookQueue(queue: string): boolean {
  return (
    queue === TENANT_EVENTS_QUEUE ||
    queue === TENANT_EVENTS_DLQ ||
    queue === WEBHOOK_DELIVERIES_QUEUE ||
    queue === WEBHOOK_DELIVERIES_DLQ
  );
}

export async function consumeOutboundWebhookBatch(batch: MessageBatch, env: Env): Promise<void> {
  switch (batch.queue) {
    case TENANT_EVENTS_QUEUE:
      await fanOutTenantEvents(batch, env);
      return;
    case TENANT_EVENTS_DLQ:
      await parkTenantEvents(batch, env);
      return;
    case WEBHOOK_DELIVERIES_QUEUE:
      await deliverWebhookBatch(batch as MessageBatch<WebhookDeliveryMessage>, env, {
        settings: deliverySettings(env),
      });
      return;
    case WEBHOOK_DELIVERIES_DLQ:
      await deadLetterWebhookBatch(batch as MessageBatch<WebhookDeliveryMessage>, env);
      return;
  }
}
