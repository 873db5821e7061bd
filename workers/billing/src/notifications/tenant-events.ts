import { type NewTenantEvent, type TenantEvent, tenantEvent } from "./domain/tenant-events.ts";
import {
  claimUnsentTenantEvents,
  markTenantEventsSent,
  tenantEventOf,
} from "./tenant-event-storage.ts";

/** Queues' sendBatch takes at most 100 messages. */
const SEND_BATCH_LIMIT = 100;
/** A relay that claimed events and died leaves them to a sweep after this long. */
export const RELAY_LEASE_MS = 60_000;
const RELAY_ROUNDS = 20;

/**
 * Emits events for the tenant's webhook endpoints: one message per event on
 * the `tenant-events` queue, whose consumer fans each out to the endpoints
 * that subscribe to its type. Returns the events as sent (with their ids).
 * For events that describe a D1 change, prefer the outbox
 * (notifications/tenant-event-storage.ts in the change's batch, then `relayTenantEvents`):
 * it cannot lose an event between the commit and the send.
 */
export async function emitTenantEvents(
  queue: Queue<TenantEvent>,
  events: readonly NewTenantEvent[],
  now: Date = new Date(),
): Promise<TenantEvent[]> {
  const sent = events.map((event) => tenantEvent(event, now));
  await sendTenantEvents(queue, sent);
  return sent;
}

async function sendTenantEvents(queue: Queue<TenantEvent>, events: readonly TenantEvent[]) {
  for (let start = 0; start < events.length; start += SEND_BATCH_LIMIT) {
    await queue.sendBatch(
      events
        .slice(start, start + SEND_BATCH_LIMIT)
        .map((body) => ({ body, contentType: "json" as const })),
    );
  }
}

/**
 * Sends the outbox's unsent events to the queue and marks them sent. Runs
 * after every write request and queue batch that may have written events
 * (in the background), and from the Cron Trigger, which picks up events a
 * failed or interrupted relay left behind once their lease has run out.
 * An event sent twice (a relay that died between send and mark) reaches
 * receivers once more with the same id; fan-out makes no second delivery.
 */
export async function relayTenantEvents(
  env: { DB: D1Database; TENANT_EVENTS_QUEUE: Queue<TenantEvent> },
  now: Date = new Date(),
): Promise<number> {
  let relayed = 0;
  for (let round = 0; round < RELAY_ROUNDS; round++) {
    const claimed = await claimUnsentTenantEvents(
      env.DB,
      now,
      new Date(now.getTime() + RELAY_LEASE_MS),
      SEND_BATCH_LIMIT,
    );
    if (claimed.length === 0) break;
    await sendTenantEvents(env.TENANT_EVENTS_QUEUE, claimed.map(tenantEventOf));
    await markTenantEventsSent(
      env.DB,
      claimed.map((row) => row.id),
      new Date(),
    );
    relayed += claimed.length;
    if (claimed.length < SEND_BATCH_LIMIT) break;
  }
  return relayed;
}

/**
 * `relayTenantEvents` for background use: failures are logged, the sweep
 * retries. Resolves to the number of events sent, or null when the relay failed.
 */
export async function relayTenantEventsQuietly(
  env: { DB: D1Database; TENANT_EVENTS_QUEUE: Queue<TenantEvent> },
  now: Date = new Date(),
): Promise<number | null> {
  try {
    return await relayTenantEvents(env, now);
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "tenant event relay failed; the cron sweep retries",
        error: String(error),
      }),
    );
    return null;
  }
}
