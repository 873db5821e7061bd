import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { describe, expect, it } from "vitest";
import {
  insertSubscription,
  insertTenant,
  monthlyWindowAt,
  snapshot,
} from "./entitlement-fixtures.ts";

// The counter's flush claims the usage_events rows of pipeline entries in
// the same D1 batch as the increment: only rows it claims are counted.

describe("EntitlementCounter: claims of usage event rows", () => {
  it("counts claimed rows once (VALIDATED, or PENDING counted at validation), and takes back the units of rows it could not claim", async () => {
    const tenantId = await insertTenant();
    const fixture = await insertSubscription({
      tenantId,
      snapshots: [snapshot.metered("api_calls", 0)],
    });
    const now = new Date();
    const window = monthlyWindowAt(fixture, now);
    const rows = [
      { id: crypto.randomUUID(), amount: 5, status: "VALIDATED" },
      { id: crypto.randomUUID(), amount: 7, status: "VALIDATED" },
      // Already counted by an earlier flush (a counter that forgot the id).
      { id: crypto.randomUUID(), amount: 11, status: "AGGREGATED" },
    ];
    // Counted by validation straight through the counter: still PENDING,
    // with no window yet; and one that a later delivery REJECTED meanwhile.
    const pending = { id: crypto.randomUUID(), amount: 13, status: "PENDING" };
    const rejected = { id: crypto.randomUUID(), amount: 17, status: "REJECTED" };
    for (const row of [pending, rejected]) {
      await env.DB.prepare(
        `INSERT INTO usage_events (id, tenant_id, event_id, feature_lookup_key, amount, timestamp, received_at, status)
         VALUES (?, ?, ?, 'api_calls', ?, ?, ?, ?)`,
      )
        .bind(
          row.id,
          tenantId,
          crypto.randomUUID(),
          row.amount,
          now.toISOString(),
          now.toISOString(),
          row.status,
        )
        .run();
    }
    for (const row of rows) {
      await env.DB.prepare(
        `INSERT INTO usage_events (id, tenant_id, event_id, subscription_id, feature_lookup_key, amount,
            timestamp, received_at, status, period_key, period_start, period_end)
         VALUES (?, ?, ?, ?, 'api_calls', ?, ?, ?, ?, ?, ?, ?)`,
      )
        .bind(
          row.id,
          tenantId,
          crypto.randomUUID(),
          fixture.subscriptionId,
          row.amount,
          now.toISOString(),
          now.toISOString(),
          row.status,
          window.periodKey,
          window.periodStart,
          window.periodEnd,
        )
        .run();
    }
    const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);
    const entries = [...rows, pending, rejected].map((row) => ({
      eventId: row.id,
      usageEventId: row.id,
      subscriptionId: fixture.subscriptionId,
      featureKey: "api_calls",
      ...window,
      amount: row.amount,
      occurredAt: now.toISOString(),
    }));
    expect(await counter.record(entries)).toEqual({ recorded: 5, duplicates: 0 });
    expect(await counter.record(entries)).toEqual({ recorded: 0, duplicates: 5 });
    expect((await counter.check("api_calls")).used).toBe(53);
    expect(await counter.flush()).toMatchObject({ pendingUnits: 0 });

    const { results } = await env.DB.prepare(
      `SELECT id, status, aggregation_flush_id AS flush, subscription_id AS subscriptionId,
              period_key AS periodKey, period_start AS periodStart, period_end AS periodEnd,
              validated_at AS validatedAt, aggregated_at AS aggregatedAt
         FROM usage_events WHERE tenant_id = ? ORDER BY amount`,
    )
      .bind(tenantId)
      .all<Record<string, string | null>>();
    expect(results.map((row) => row.status)).toEqual([
      "AGGREGATED",
      "AGGREGATED",
      "AGGREGATED",
      "AGGREGATED",
      "REJECTED",
    ]);
    expect(results[0]?.flush).toEqual(expect.any(String));
    expect(results[2]?.flush).toBeNull();
    // The PENDING row moved straight to AGGREGATED, with the window and the
    // subscription it was counted in, validated and aggregated in that step.
    expect(results[3]).toMatchObject({
      flush: results[0]?.flush,
      subscriptionId: fixture.subscriptionId,
      ...window,
    });
    expect(results[3]?.validatedAt).toBe(results[3]?.aggregatedAt);
    expect(results[4]).toMatchObject({ flush: null, subscriptionId: null, periodKey: null });
    const aggregate = await env.DB.prepare(
      "SELECT amount FROM usage_aggregates WHERE subscription_id = ? AND feature_lookup_key = 'api_calls'",
    )
      .bind(fixture.subscriptionId)
      .first<{ amount: number }>();
    expect(aggregate?.amount).toBe(25);
    // The counter agrees with D1: the unclaimed rows' units were taken back.
    expect((await counter.check("api_calls")).used).toBe(25);
    const ledger = await env.DB.prepare("SELECT units FROM usage_flushes WHERE tenant_id = ?")
      .bind(tenantId)
      .all<{ units: number }>();
    expect(ledger.results.reduce((sum, row) => sum + row.units, 0)).toBe(25);
  });
});
