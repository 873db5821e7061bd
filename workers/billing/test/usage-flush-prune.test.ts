import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { describe, expect, it } from "vitest";
import { pruneUsageFlushIds } from "../src/entitlements/counter/flush-prune.ts";
import { flushIdsRetentionMs } from "../src/entitlements/domain/usage-counter-settings.ts";
import type { EntitlementCounter } from "../src/index.ts";
import { runScheduledWork } from "../src/scheduled-work.ts";
import { applyUsageFlush } from "../src/usage/aggregates-storage.ts";
import {
  insertSubscription,
  insertTenant,
  monthlyWindowAt,
  snapshot,
} from "./entitlement-fixtures.ts";

// usage_flushes holds the ids that make a counter flush's D1 batch
// idempotent. Kept for good they would fill D1; the Cron Trigger forgets
// those older than USAGE_FLUSH_IDS_RETENTION_SECONDS that no retry can need.

const RETENTION_MS = flushIdsRetentionMs(env.USAGE_FLUSH_IDS_RETENTION_SECONDS);

async function meteredTenant() {
  const tenantId = await insertTenant();
  const fixture = await insertSubscription({
    tenantId,
    snapshots: [snapshot.metered("api_calls", 0)],
  });
  const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);
  /** Consumes and flushes at once: one flush, one usage_flushes row. */
  const flushed = async (amount: number) => {
    expect(await counter.consume("api_calls", amount)).toMatchObject({ status: "consumed" });
    expect(await counter.flush()).toMatchObject({ pendingUnits: 0 });
  };
  const flushIds = async () =>
    (
      await env.DB.prepare("SELECT id, units FROM usage_flushes WHERE tenant_id = ? ORDER BY rowid")
        .bind(tenantId)
        .all<{ id: string; units: number }>()
    ).results;
  const stored = async () =>
    (
      await env.DB.prepare(
        "SELECT sum(amount) AS amount FROM usage_aggregates WHERE subscription_id = ?",
      )
        .bind(fixture.subscriptionId)
        .first<{ amount: number | null }>()
    )?.amount ?? 0;
  return { tenantId, fixture, counter, flushed, flushIds, stored };
}

describe("usage_flushes pruning", () => {
  it("forgets flush ids past the retention but each tenant's latest, and a retried latest flush still applies once", async () => {
    const a = await meteredTenant();
    const b = await meteredTenant();
    await a.flushed(4);
    await a.flushed(6);
    await b.flushed(2);
    const [first, latest] = await a.flushIds();
    expect([first?.units, latest?.units]).toEqual([4, 6]);

    // Fresh rows stay.
    await pruneUsageFlushIds(env, Date.now());
    expect(await a.flushIds()).toHaveLength(2);

    // Past the retention only the tenants' latest rows stay.
    const later = Date.now() + RETENTION_MS + 60_000;
    expect(await pruneUsageFlushIds(env, later)).toBeGreaterThanOrEqual(1);
    expect(await a.flushIds()).toEqual([latest]);
    expect((await b.flushIds()).map((row) => row.units)).toEqual([2]);

    // The counter retries its latest flush (a commit whose answer was lost):
    // its id is still known, so nothing is added twice.
    const window = monthlyWindowAt(a.fixture);
    const deltas = [
      {
        subscriptionId: a.fixture.subscriptionId,
        featureLookupKey: "api_calls",
        ...window,
        amount: 6,
        lastEventAt: new Date().toISOString(),
      },
    ];
    const stub = env.ENTITLEMENT_COUNTER.get(env.ENTITLEMENT_COUNTER.idFromName(a.tenantId));
    await runInDurableObject(stub, (_instance: EntitlementCounter, state) => {
      state.storage.sql.exec(
        "INSERT INTO flushes (id, deltas, claimed_at) VALUES (?, ?, ?)",
        latest?.id,
        JSON.stringify(deltas),
        Date.now(),
      );
    });
    expect(await a.counter.flush()).toMatchObject({ flushes: 1 });
    expect(
      await applyUsageFlush(env.DB, { id: latest?.id ?? "", tenantId: a.tenantId, deltas }),
    ).toBe(false);
    expect(await a.stored()).toBe(10);

    // New flushes apply as before, and the previous latest goes at the next prune.
    await a.flushed(5);
    expect(await a.stored()).toBe(15);
    await pruneUsageFlushIds(env, later + 60_000);
    expect((await a.flushIds()).map((row) => row.units)).toEqual([5]);
  });

  it("runs with the Cron Trigger's scheduled work", async () => {
    const a = await meteredTenant();
    await a.flushed(1);
    await a.flushed(2);
    await runScheduledWork(env, {
      cron: "* * * * *",
      scheduledTime: Date.now() + RETENTION_MS + 60_000,
    });
    expect((await a.flushIds()).map((row) => row.units)).toEqual([2]);
    expect(await a.stored()).toBe(3);
  });
});
