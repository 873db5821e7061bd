import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { expect } from "vitest";
import { monthlyWindowAt, type SubscriptionFixture } from "./entitlement-fixtures.ts";
import { inUsageLog } from "./usage-log-helpers.ts";

/**
 * What the usage pipeline's validation stage does with the tenant's
 * pending events (it runs in the usage-consumer worker, not here): hands
 * them to the counter in their subscription's window, with their
 * properties, and flushes, which folds them into the meter groups.
 */
export async function countPendingEvents(fixture: SubscriptionFixture) {
  const pending = await inUsageLog(fixture.tenantId, 0, (sql) =>
    sql
      .exec<{ id: string; feature: string; amount: number; timestamp: string; properties: string }>(
        "SELECT id, feature, amount, timestamp, properties FROM events WHERE status = 'PENDING'",
      )
      .toArray(),
  );
  const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, fixture.tenantId);
  await counter.record(
    pending.map((event) => ({
      eventId: event.id,
      usageEventId: event.id,
      subscriptionId: fixture.subscriptionId,
      featureKey: event.feature,
      ...monthlyWindowAt(fixture, new Date(event.timestamp)),
      amount: event.amount,
      occurredAt: event.timestamp,
      properties: JSON.parse(event.properties),
    })),
  );
  expect(await counter.flush()).toMatchObject({ pendingUnits: 0 });
  return pending.length;
}
