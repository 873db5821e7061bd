import { type NewTenantEvent, type TenantEvent, tenantEvent } from "../domain/tenant-events.ts";

/** Queues' sendBatch takes at most 100 messages. */
const SEND_BATCH_LIMIT = 100;

/**
 * Emits events for the tenant's webhook endpoints: one message per event on
 * the `tenant-events` queue, whose consumer fans each out to the endpoints
 * that subscribe to its type. Returns the events as sent (with their ids).
 */
export async function emitTenantEvents(
  queue: Queue<TenantEvent>,
  events: readonly NewTenantEvent[],
  now: Date = new Date(),
): Promise<TenantEvent[]> {
  const sent = events.map((event) => tenantEvent(event, now));
  for (let start = 0; start < sent.length; start += SEND_BATCH_LIMIT) {
    await queue.sendBatch(
      sent
        .slice(start, start + SEND_BATCH_LIMIT)
        .map((body) => ({ body, contentType: "json" as const })),
    );
  }
  return sent;
}
