import { env } from "cloudflare:workers";
import { resetWindowAt } from "@edge-platform/shared/billing/billing-period";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { describe, expect, it } from "vitest";
import { insertSubscription, insertTenant, snapshot } from "./entitlement-fixtures.ts";

// The counter's flush claims the usage_events rows of pipeline entries in
// the same D1 batch as the increment: only rows it claims are counted.

describe("EntitlementCounter: claims of usage event rows", () => {
  it("counts claimed rows once, and takes back the units of a row it could not claim", async () => {
    const tenantId = await insertTenant();
    const fixture = await insertSubscription({
      tenantId,
      snapshots: [snapshot.metered("api_calls", 0)],
    });
    const now = new Date();
    const window = resetWindowAt(
      { startedAt: fixture.startedAt, trialEndsAt: null, interval: "MONTHLY" },
      "MONTHLY",
      now,
    );
    const rows = [
      { id: crypto.randomUUID(), amount: 5, status: "VALIDATED" },
      { id: crypto.randomUUID(), amount: 7, status: "VALIDATED" },
      // Already counted by an earlier flush (a counter that forgot the id).
      { id: crypto.randomUUID(), amount: 11, status: "AGGREGATED" },
    ];
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
          window.key,
          window.start.toISOString(),
          window.end?.toISOString() ?? null,
        )
        .run();
    }
    const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);
    const entries = rows.map((row) => ({
      eventId: row.id,
      usageEventId: row.id,
      subscriptionId: fixture.subscriptionId,
      featureKey: "api_calls",
      periodKey: window.key,
      periodStart: window.start.toISOString(),
      periodEnd: window.end?.toISOString() ?? null,
      amount: row.amount,
      occurredAt: now.toISOString(),
    }));
    expect(await counter.record(entries)).toEqual({ recorded: 3, duplicates: 0 });
    expect(await counter.record(entries)).toEqual({ recorded: 0, duplicates: 3 });
    expect((await counter.check("api_calls")).used).toBe(23);
    expect(await counter.flush()).toMatchObject({ pendingUnits: 0 });

    const { results } = await env.DB.prepare(
      "SELECT id, status, aggregation_flush_id AS flush FROM usage_events WHERE tenant_id = ? ORDER BY amount",
    )
      .bind(tenantId)
      .all<{ id: string; status: string; flush: string | null }>();
    expect(results.map((row) => row.status)).toEqual(["AGGREGATED", "AGGREGATED", "AGGREGATED"]);
    expect(results[0]?.flush).toEqual(expect.any(String));
    expect(results[2]?.flush).toBeNull();
    const aggregate = await env.DB.prepare(
      "SELECT amount FROM usage_aggregates WHERE subscription_id = ? AND feature_lookup_key = 'api_calls'",
    )
      .bind(fixture.subscriptionId)
      .first<{ amount: number }>();
    expect(aggregate?.amount).toBe(12);
    // The counter agrees with D1: the unclaimed row's units were taken back.
    expect((await counter.check("api_calls")).used).toBe(12);
    const ledger = await env.DB.prepare("SELECT units FROM usage_flushes WHERE tenant_id = ?")
      .bind(tenantId)
      .all<{ units: number }>();
    expect(ledger.results.reduce((sum, row) => sum + row.units, 0)).toBe(12);
  });
});
