import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { withShard } from "@edge-platform/shared/usage-log/client";
import { describe, expect, it } from "vitest";
import {
  insertSubscription,
  insertTenant,
  monthlyWindowAt,
  snapshot,
} from "./entitlement-fixtures.ts";
import { inUsageLog, usageLogObject } from "./usage-log-helpers.ts";

// The counter's flush claims the logged events of pipeline entries in their
// usage-log shard before the D1 increment: only events it claims are counted.

describe("EntitlementCounter: claims of logged usage events", () => {
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
    for (const row of [...rows, pending, rejected]) row.id = withShard(row.id, 0);
    const moved = (row: { id: string; amount: number; status: string }, windowed: boolean) => ({
      id: row.id,
      eventId: crypto.randomUUID(),
      feature: "api_calls",
      amount: row.amount,
      timestamp: now.toISOString(),
      receivedAt: now.toISOString(),
      status: row.status as "PENDING",
      reason: null,
      message: null,
      subscriptionId: windowed ? fixture.subscriptionId : null,
      periodKey: windowed ? window.periodKey : null,
      periodStart: windowed ? window.periodStart : null,
      periodEnd: windowed ? window.periodEnd : null,
      validatedAt: null,
      aggregatedAt: null,
      metadata: {},
    });
    await usageLogObject(tenantId).import({
      tenantId,
      shard: 0,
      events: [
        ...[pending, rejected].map((row) => moved(row, false)),
        ...rows.map((row) => moved(row, true)),
      ],
    });
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

    const results = await inUsageLog(tenantId, 0, (sql) =>
      sql
        .exec<Record<string, string | null>>(
          `SELECT id, status, claim_flush_id AS flush, subscription_id AS subscriptionId,
                  period_key AS periodKey, period_start AS periodStart, period_end AS periodEnd,
                  validated_at AS validatedAt, aggregated_at AS aggregatedAt
             FROM events ORDER BY amount`,
        )
        .toArray(),
    );
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
