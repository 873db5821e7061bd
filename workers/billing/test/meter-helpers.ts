import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { withShard } from "@edge-platform/shared/usage-log/client";
import { monthlyWindowAt, type SubscriptionFixture } from "./entitlement-fixtures.ts";
import { usageLogObject } from "./usage-log-helpers.ts";

// Usage events as the pipeline counts them, below the queues: stored in the
// tenant's usage log (validated, in their window) and recorded through the
// tenant's counter with their amount and properties, then flushed. The
// counter reads each feature's meter from the subscription's snapshot.

export type EventProperties = Record<string, string | number>;

export interface PipelineEvent {
  feature: string;
  properties: EventProperties;
  /** The event's time (ISO); its monthly window is the subscription's window at that time. */
  timestamp: string;
  amount?: number;
  /** Our id; a resend passes the same one. */
  id?: string;
}

export function pipelineEvent(
  feature: string,
  properties: EventProperties,
  timestamp: string,
  amount?: number,
): PipelineEvent & { id: string } {
  return {
    id: withShard(crypto.randomUUID(), 0),
    feature,
    properties,
    timestamp,
    ...(amount === undefined ? {} : { amount }),
  };
}

export async function recordThroughPipeline(
  fixture: SubscriptionFixture,
  events: readonly PipelineEvent[],
) {
  const { tenantId, subscriptionId } = fixture;
  const rows = events.map((event) => {
    const id = event.id ?? withShard(crypto.randomUUID(), 0);
    const window = monthlyWindowAt(fixture, new Date(event.timestamp));
    return { id, event, window };
  });
  await usageLogObject(tenantId).import({
    tenantId,
    shard: 0,
    events: rows.map(({ id, event, window }) => ({
      id,
      eventId: id,
      feature: event.feature,
      amount: event.amount ?? 1,
      timestamp: event.timestamp,
      receivedAt: new Date().toISOString(),
      status: "VALIDATED" as const,
      reason: null,
      message: null,
      subscriptionId,
      ...window,
      validatedAt: new Date().toISOString(),
      aggregatedAt: null,
      metadata: {},
      properties: event.properties,
    })),
  });
  const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);
  const result = await counter.record(
    rows.map(({ id, event, window }) => ({
      eventId: id,
      usageEventId: id,
      subscriptionId,
      featureKey: event.feature,
      ...window,
      amount: event.amount ?? 1,
      occurredAt: event.timestamp,
      properties: event.properties,
    })),
  );
  await counter.flush();
  return result;
}
