import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { usageAggregates, usageFlushes } from "@edge-platform/shared/db/schema/usage-aggregates";
import { eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { describe, expect, it, vi } from "vitest";
import type { EntitlementCounter } from "../src/index.ts";
import { applyUsageFlush } from "../src/usage/aggregates-storage.ts";
import {
  insertSubscription,
  insertTenant,
  monthlyWindowAt,
  recordEntryFor,
  snapshot,
  storedAmount,
  subscribedTenant,
} from "./entitlement-fixtures.ts";

const db = () => drizzle(env.DB);
const counterFor = (tenantId: string) => entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);
const stubFor = (tenantId: string) =>
  env.ENTITLEMENT_COUNTER.get(env.ENTITLEMENT_COUNTER.idFromName(tenantId));

describe("EntitlementCounter: check and consume", () => {
  it("never passes a HARD limit under 200 concurrent consumes", async () => {
    const fixture = await subscribedTenant([snapshot.hard("projects", 50)]);
    const counter = counterFor(fixture.tenantId);
    const results = await Promise.all(
      Array.from({ length: 200 }, () => counter.consume("projects", 1)),
    );
    expect(results.filter((r) => r.status === "consumed")).toHaveLength(50);
    expect(results.filter((r) => r.status === "quota_exceeded")).toHaveLength(150);
    const check = await counter.check("projects");
    expect(check).toMatchObject({ allowed: false, used: 50, remaining: 0, limit: 50 });
  });

  it("refuses a HARD consume that would pass the limit and counts nothing of it", async () => {
    const fixture = await subscribedTenant([snapshot.hard("projects", 5)]);
    const counter = counterFor(fixture.tenantId);
    expect(await counter.consume("projects", 4)).toMatchObject({ status: "consumed", used: 4 });
    expect(await counter.consume("projects", 2)).toEqual({
      status: "quota_exceeded",
      feature: "projects",
      limit: 5,
      used: 4,
      requested: 2,
    });
    expect(await counter.consume("projects", 1)).toMatchObject({
      status: "consumed",
      used: 5,
      remaining: 0,
      overage: false,
    });
  });

  it("lets SOFT quotas and METERED features run into overage", async () => {
    const fixture = await subscribedTenant([
      snapshot.soft("seats", 2),
      snapshot.metered("api_calls", 100),
    ]);
    const counter = counterFor(fixture.tenantId);
    expect(await counter.consume("seats", 2)).toMatchObject({ overage: false, used: 2 });
    expect(await counter.consume("seats", 1)).toMatchObject({
      status: "consumed",
      overage: true,
      used: 3,
      remaining: 0,
    });
    expect(await counter.check("seats")).toMatchObject({ allowed: true, overage: 1 });
    expect(await counter.consume("api_calls", 150)).toMatchObject({
      status: "consumed",
      type: "METERED",
      overage: true,
      limit: 100,
    });
  });

  it("answers BOOLEAN checks from the snapshot and refuses to consume them", async () => {
    const fixture = await subscribedTenant([
      snapshot.flag("sso", true),
      snapshot.flag("audit", false),
    ]);
    const counter = counterFor(fixture.tenantId);
    expect(await counter.check("sso")).toMatchObject({ allowed: true, type: "BOOLEAN" });
    expect(await counter.check("audit")).toMatchObject({
      allowed: false,
      reason: 'Feature "audit" is not enabled on your plan',
    });
    expect(await counter.consume("sso", 1)).toEqual({ status: "not_consumable", feature: "sso" });
  });

  it("denies with a reason without a subscription or outside the plan", async () => {
    const lonely = await insertTenant();
    expect(await counterFor(lonely).check("projects")).toMatchObject({
      allowed: false,
      reason: "No active subscription",
    });
    expect(await counterFor(lonely).consume("projects", 1)).toMatchObject({ status: "denied" });
    const fixture = await subscribedTenant([snapshot.hard("projects", 5)]);
    expect(await counterFor(fixture.tenantId).check("storage")).toMatchObject({
      allowed: false,
      reason: 'Feature "storage" is not included in your plan',
    });
  });

  it("denies a paused subscription", async () => {
    const tenantId = await insertTenant();
    await insertSubscription({
      tenantId,
      snapshots: [snapshot.hard("projects", 5)],
      status: "PAUSED",
    });
    expect(await counterFor(tenantId).check("projects")).toMatchObject({
      allowed: false,
      reason: "Subscription is paused",
    });
  });

  it("starts a fresh count in the next reset window, whose end is resetAt", async () => {
    const startedAt = new Date("2026-01-31T10:00:00.000Z");
    const tenantId = await insertTenant();
    await insertSubscription({ tenantId, snapshots: [snapshot.hard("projects", 3)], startedAt });
    const counter = counterFor(tenantId);
    const january = Date.parse("2026-02-10T00:00:00.000Z");
    const march = Date.parse("2026-03-05T00:00:00.000Z");
    expect(await counter.consume("projects", 3, january)).toMatchObject({
      used: 3,
      resetAt: "2026-02-28T10:00:00.000Z",
    });
    expect((await counter.consume("projects", 1, january)).status).toBe("quota_exceeded");
    expect(await counter.check("projects", march)).toMatchObject({
      allowed: true,
      used: 0,
      resetAt: "2026-03-31T10:00:00.000Z",
    });
  });

  it("reports resetAt null for a NEVER-resetting quota", async () => {
    const fixture = await subscribedTenant([snapshot.hard("workspaces", 2, "NEVER")]);
    expect(await counterFor(fixture.tenantId).check("workspaces")).toMatchObject({
      allowed: true,
      resetAt: null,
    });
  });

  it("serves one tenant only", async () => {
    const fixture = await subscribedTenant([snapshot.hard("projects", 5)]);
    await counterFor(fixture.tenantId).check("projects");
    // Rejections are asserted inside the object: a rejecting RPC leaks an
    // unhandled rejection in vitest-pool-workers (workers-sdk#14736).
    await runInDurableObject(stubFor(fixture.tenantId), async (instance: EntitlementCounter) => {
      await expect(
        instance.check({ tenantId: crypto.randomUUID(), featureKey: "projects" }),
      ).rejects.toThrow(/does not serve/);
    });
  });

  it("validates its inputs", async () => {
    await runInDurableObject(stubFor(crypto.randomUUID()), async (instance: EntitlementCounter) => {
      await expect(
        instance.consume({ tenantId: "not-a-uuid", featureKey: "x", amount: 1 }),
      ).rejects.toThrow(/tenantId/);
      await expect(
        instance.consume({ tenantId: crypto.randomUUID(), featureKey: "x", amount: 0 }),
      ).rejects.toThrow(/amount/);
      await expect(
        instance.consume({ tenantId: crypto.randomUUID(), featureKey: "x", amount: 1.5 }),
      ).rejects.toThrow(/amount/);
    });
  });
});

describe("EntitlementCounter: cold start and subscription changes", () => {
  it("seeds a cold counter from the stored aggregates before deciding", async () => {
    const fixture = await subscribedTenant([snapshot.hard("projects", 50)]);
    const window = monthlyWindowAt(fixture);
    await db()
      .insert(usageAggregates)
      .values({
        id: crypto.randomUUID(),
        tenantId: fixture.tenantId,
        subscriptionId: fixture.subscriptionId,
        featureLookupKey: "projects",
        ...window,
        amount: 45,
      });
    const counter = counterFor(fixture.tenantId);
    const results = await Promise.all(
      Array.from({ length: 10 }, () => counter.consume("projects", 1)),
    );
    expect(results.filter((r) => r.status === "consumed")).toHaveLength(5);
    expect(await counter.check("projects")).toMatchObject({ used: 50 });
  });

  it("keeps the cached subscription until refreshed, then uses the new one", async () => {
    const tenantId = await insertTenant();
    const first = await insertSubscription({ tenantId, snapshots: [snapshot.hard("projects", 1)] });
    const counter = counterFor(tenantId);
    expect(await counter.consume("projects", 1)).toMatchObject({ status: "consumed" });
    // A plan change, written the way the subscription service writes it.
    const { subscriptions } = await import("@edge-platform/shared/db/schema/subscriptions");
    await db()
      .update(subscriptions)
      .set({ status: "CANCELLED", endedAt: new Date().toISOString() })
      .where(eq(subscriptions.id, first.subscriptionId));
    await insertSubscription({ tenantId, snapshots: [snapshot.hard("projects", 10)] });
    await counter.refresh();
    expect(await counter.check("projects")).toMatchObject({ allowed: true, limit: 10, used: 0 });
  });
});

describe("EntitlementCounter: the single path into usage_aggregates", () => {
  it("flushes consumed units to the aggregates exactly once", async () => {
    const fixture = await subscribedTenant([snapshot.metered("api_calls", 0)]);
    const counter = counterFor(fixture.tenantId);
    await Promise.all(Array.from({ length: 30 }, (_, i) => counter.consume("api_calls", i + 1)));
    // The alarm may already have flushed part of it; either way all of it lands once.
    expect(await counter.flush()).toMatchObject({ pendingUnits: 0 });
    expect(await storedAmount(fixture, "api_calls")).toBe(465);
    expect(await counter.flush()).toMatchObject({ flushes: 0, units: 0 });
    expect(await storedAmount(fixture, "api_calls")).toBe(465);
    const ledger = await db()
      .select()
      .from(usageFlushes)
      .where(eq(usageFlushes.tenantId, fixture.tenantId))
      .all();
    expect(ledger.reduce((sum, row) => sum + row.units, 0)).toBe(465);
  });

  it("flushes on its own alarm", async () => {
    const fixture = await subscribedTenant([snapshot.hard("projects", 10)]);
    const counter = counterFor(fixture.tenantId);
    await counter.consume("projects", 7);
    await vi.waitFor(async () => expect(await storedAmount(fixture, "projects")).toBe(7), {
      timeout: 15_000,
      interval: 50,
    });
  });

  it("adds nothing when a flush whose commit was not acknowledged is retried", async () => {
    const fixture = await subscribedTenant([snapshot.metered("api_calls", 0)]);
    const window = monthlyWindowAt(fixture);
    const flush = {
      id: crypto.randomUUID(),
      tenantId: fixture.tenantId,
      deltas: [
        {
          subscriptionId: fixture.subscriptionId,
          featureLookupKey: "api_calls",
          ...window,
          amount: 12,
          lastEventAt: new Date().toISOString(),
        },
      ],
    };
    expect(await applyUsageFlush(env.DB, flush)).toBe(true);
    expect(await applyUsageFlush(env.DB, flush)).toBe(false);
    expect(await storedAmount(fixture, "api_calls")).toBe(12);

    // The same inside the object: a claimed flush left behind by a crash after the commit.
    const stub = stubFor(fixture.tenantId);
    await counterFor(fixture.tenantId).check("api_calls");
    await runInDurableObject(stub, (instance: EntitlementCounter, state) => {
      void instance;
      state.storage.sql.exec(
        "INSERT INTO flushes (id, deltas, claimed_at) VALUES (?, ?, ?)",
        flush.id,
        JSON.stringify(flush.deltas),
        Date.now(),
      );
    });
    expect(await counterFor(fixture.tenantId).flush()).toMatchObject({ flushes: 1 });
    expect(await storedAmount(fixture, "api_calls")).toBe(12);
  });

  it("keeps units durable in the object when D1 refuses a flush, and applies them on retry", async () => {
    const fixture = await subscribedTenant([snapshot.metered("api_calls", 0)]);
    const counter = counterFor(fixture.tenantId);
    // Every flush of this tenant fails inside D1 until the trigger is dropped.
    const trigger = `fail_flush_${fixture.tenantId.replaceAll("-", "")}`;
    await env.DB.prepare(
      `CREATE TRIGGER ${trigger} BEFORE INSERT ON usage_flushes WHEN NEW.tenant_id = '${fixture.tenantId}' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
    ).run();
    await counter.consume("api_calls", 9);
    const pending = await runInDurableObject(
      stubFor(fixture.tenantId),
      async (instance: EntitlementCounter, state) => {
        await expect(instance.flush({ tenantId: fixture.tenantId })).rejects.toThrow(
          /injected failure/,
        );
        return state.storage.sql
          .exec<{ attempts: number }>("SELECT attempts FROM flushes")
          .toArray();
      },
    );
    expect(await storedAmount(fixture, "api_calls")).toBe(0);
    expect(pending).toHaveLength(1);
    expect(pending[0]?.attempts).toBeGreaterThanOrEqual(1);
    // Still counted while D1 is refusing: the object is the source of truth.
    expect(await counter.check("api_calls")).toMatchObject({ used: 9 });
    await env.DB.prepare(`DROP TRIGGER ${trigger}`).run();
    await counter.consume("api_calls", 1);
    expect(await counter.flush()).toMatchObject({ pendingUnits: 0 });
    expect(await storedAmount(fixture, "api_calls")).toBe(10);
  });

  it("counts pipeline events once each, next to consumes, in the same window", async () => {
    const fixture = await subscribedTenant([snapshot.hard("projects", 100)]);
    const counter = counterFor(fixture.tenantId);
    const entry = recordEntryFor(fixture, "projects", new Date());
    const a = crypto.randomUUID();
    const b = crypto.randomUUID();
    expect(await counter.record([entry(a, 5), entry(b, 7), entry(a, 5)])).toEqual({
      recorded: 2,
      duplicates: 1,
    });
    // A redelivery of the same message.
    expect(await counter.record([entry(b, 7)])).toEqual({ recorded: 0, duplicates: 1 });
    await counter.consume("projects", 3);
    expect(await counter.check("projects")).toMatchObject({ used: 15 });
    await counter.flush();
    expect(await storedAmount(fixture, "projects")).toBe(15);
    // Pipeline usage is never refused, even past a HARD limit: it already happened.
    expect(await counter.record([entry(crypto.randomUUID(), 200)])).toMatchObject({ recorded: 1 });
    expect(await counter.consume("projects", 1)).toMatchObject({ status: "quota_exceeded" });
  });
});
