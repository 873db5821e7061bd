import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { subscriptions } from "@edge-platform/shared/db/schema/subscriptions";
import { withShard } from "@edge-platform/shared/usage-log/client";
import { eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { describe, expect, it } from "vitest";
import type { EntitlementCounter } from "../src/index.ts";
import { insertSubscription, monthlyWindowAt, snapshot } from "./entitlement-fixtures.ts";
import { call, expectError, register } from "./helpers.ts";
import { usageLogObject } from "./usage-log-helpers.ts";

// The timeseries is read from usage_hourly, which the counter's flush
// writes in the same batch as usage_aggregates: over any range the buckets
// must add up to the aggregates, whatever subscription or window the units
// were counted in.

const JANUARY = "2026-01-10T10:00:00.000Z";

async function aggregateTotal(tenantId: string, feature: string): Promise<number> {
  const row = await env.DB.prepare(
    "SELECT coalesce(sum(amount), 0) AS total FROM usage_aggregates WHERE tenant_id = ? AND feature_lookup_key = ?",
  )
    .bind(tenantId, feature)
    .first<{ total: number }>();
  return row?.total ?? 0;
}

/** A VALIDATED event in the tenant's usage log, and the counter entry that counts it. */
async function insertEventRow(
  fixture: { tenantId: string; subscriptionId: string; startedAt: Date },
  at: Date,
  amount: number,
) {
  const id = withShard(crypto.randomUUID(), 0);
  const window = monthlyWindowAt(fixture, at);
  await usageLogObject(fixture.tenantId).import({
    tenantId: fixture.tenantId,
    shard: 0,
    events: [
      {
        id,
        eventId: crypto.randomUUID(),
        feature: "api_calls",
        amount,
        timestamp: at.toISOString(),
        receivedAt: at.toISOString(),
        status: "VALIDATED",
        reason: null,
        message: null,
        subscriptionId: fixture.subscriptionId,
        periodKey: window.periodKey,
        periodStart: window.periodStart,
        periodEnd: window.periodEnd,
        validatedAt: at.toISOString(),
        aggregatedAt: null,
        metadata: {},
      },
    ],
  });
  return {
    eventId: id,
    usageEventId: id,
    subscriptionId: fixture.subscriptionId,
    featureKey: "api_calls",
    ...window,
    amount,
    occurredAt: at.toISOString(),
  };
}

describe("GET /usage/timeseries", () => {
  it("has buckets that add up to the aggregates across a window reset and a plan change", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    const first = await insertSubscription({
      tenantId,
      snapshots: [snapshot.metered("api_calls", 0)],
      startedAt: new Date(JANUARY),
    });
    const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);
    const at = (iso: string) => Date.parse(iso);
    // January window: consumes in two hours, and a pipeline event.
    await counter.consume("api_calls", 3, at("2026-01-20T08:15:00Z"));
    await counter.consume("api_calls", 4, at("2026-01-20T08:45:00Z"));
    await counter.consume("api_calls", 5, at("2026-01-20T09:05:00Z"));
    await counter.record([await insertEventRow(first, new Date("2026-01-20T09:30:00Z"), 6)]);
    // The window resets on 2026-02-10T10:00Z: the next units count in a new window.
    await counter.consume("api_calls", 7, at("2026-02-10T09:59:00Z"));
    await counter.consume("api_calls", 8, at("2026-02-10T10:00:00Z"));
    await counter.flush();
    // A plan change: the first subscription ends, a second one counts from then on.
    await drizzle(env.DB)
      .update(subscriptions)
      .set({ status: "CANCELLED", endedAt: "2026-02-10T11:00:00.000Z" })
      .where(eq(subscriptions.id, first.subscriptionId));
    const second = await insertSubscription({
      tenantId,
      snapshots: [snapshot.metered("api_calls", 0)],
      startedAt: new Date("2026-02-10T11:00:00Z"),
    });
    await counter.refresh();
    await counter.consume("api_calls", 9, at("2026-02-10T11:30:00Z"));
    await counter.record([await insertEventRow(second, new Date("2026-02-11T00:10:00Z"), 10)]);
    expect(await counter.flush()).toMatchObject({ pendingUnits: 0 });

    const aggregates = await call("/api/v1/usage/aggregates?feature=api_calls", {
      token: owner.accessToken,
      tenant: tenantId,
    });
    const total = await aggregateTotal(tenantId, "api_calls");
    expect(total).toBe(52);

    const read = (query: string) =>
      call(`/api/v1/usage/timeseries?feature=api_calls&${query}`, {
        token: owner.accessToken,
        tenant: tenantId,
      });
    const days = await read("from=2026-01-15T00:00:00Z&to=2026-02-15T00:00:00Z&granularity=day");
    expect(days.status, JSON.stringify(days.body)).toBe(200);
    expect(days.body.data).toHaveLength(31);
    const sum = (buckets: { value: number }[]) => buckets.reduce((s, b) => s + b.value, 0);
    expect(sum(days.body.data)).toBe(total);
    expect(days.body.data[5]).toEqual({
      start: "2026-01-20T00:00:00.000Z",
      end: "2026-01-21T00:00:00.000Z",
      value: 18,
    });

    const hours = await read("from=2026-02-10T09:00:00Z&to=2026-02-10T12:00:00Z&granularity=hour");
    expect(hours.body.data.map((bucket: { value: number }) => bucket.value)).toEqual([7, 8, 9]);

    // Per window: the hours inside each window add up to its aggregate.
    const byHours = async (from: string, to: string) =>
      sum((await read(`from=${from}&to=${to}&granularity=hour`)).body.data);
    expect(await byHours("2026-01-10T10:00:00Z", "2026-02-10T10:00:00Z")).toBe(25);
    expect(await byHours("2026-02-10T10:00:00Z", "2026-02-10T11:00:00Z")).toBe(8);
    expect(await byHours("2026-02-10T11:00:00Z", "2026-02-11T11:00:00Z")).toBe(19);
    const amounts = (aggregates.body.data as { amount: number }[]).map((row) => row.amount);
    expect(amounts.sort((a, b) => a - b)).toEqual([8, 19, 25]);
  });

  it("puts units whose hours a restart lost in the hour of their window's latest unit, and takes open hour rows of earlier releases", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    const fixture = await insertSubscription({
      tenantId,
      snapshots: [snapshot.metered("api_calls", 0)],
      startedAt: new Date(JANUARY),
    });
    const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);
    await counter.consume("api_calls", 3, Date.parse("2026-01-20T08:15:00Z"));
    await counter.consume("api_calls", 5, Date.parse("2026-01-20T09:05:00Z"));
    const window = monthlyWindowAt(fixture, new Date("2026-01-20T08:15:00Z"));
    const stub = env.ENTITLEMENT_COUNTER.get(env.ENTITLEMENT_COUNTER.idFromName(tenantId));
    await runInDurableObject(stub, (instance: EntitlementCounter, state) => {
      // A restart: the hours kept in memory are gone. An earlier release
      // had written 1 of the units' hour as an open row.
      (
        instance as unknown as { unflushedHours: { open: Map<string, unknown> } }
      ).unflushedHours.open.clear();
      state.storage.sql.exec(
        `INSERT INTO unflushed_hours (subscription_id, feature_key, period_key, hour_start, units)
         VALUES (?, 'api_calls', ?, '2026-01-20T07:00:00.000Z', 1)`,
        fixture.subscriptionId,
        window.periodKey,
      );
    });
    expect(await counter.flush()).toMatchObject({ pendingUnits: 0 });
    expect(await aggregateTotal(tenantId, "api_calls")).toBe(8);
    const hours = await call(
      "/api/v1/usage/timeseries?feature=api_calls&from=2026-01-20T07:00:00Z&to=2026-01-20T10:00:00Z&granularity=hour",
      { token: owner.accessToken, tenant: tenantId },
    );
    expect(hours.body.data.map((bucket: { value: number }) => bucket.value)).toEqual([1, 0, 7]);
    // Nothing left waiting for a flush.
    const left = await runInDurableObject(
      stub,
      (_instance: EntitlementCounter, state) =>
        state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM unflushed_hours").one().n,
    );
    expect(left).toBe(0);
  });

  it("adds nothing twice when a flush is retried, and nothing is served to another tenant", async () => {
    const owner = await register();
    const other = await register();
    await insertSubscription({
      tenantId: owner.tenant.id,
      snapshots: [snapshot.metered("api_calls", 0)],
    });
    const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, owner.tenant.id);
    await counter.consume("api_calls", 4);
    await counter.flush();
    await counter.flush();
    const now = new Date();
    const from = new Date(now.getTime() - 3_600_000).toISOString();
    const to = new Date(now.getTime() + 3_600_000).toISOString();
    const mine = await call(`/api/v1/usage/timeseries?feature=api_calls&from=${from}&to=${to}`, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(mine.body.data.reduce((s: number, b: { value: number }) => s + b.value, 0)).toBe(4);
    const theirs = await call(`/api/v1/usage/timeseries?feature=api_calls&from=${from}&to=${to}`, {
      token: other.accessToken,
      tenant: other.tenant.id,
    });
    expect(theirs.body.data.every((b: { value: number }) => b.value === 0)).toBe(true);
    const foreign = await call(`/api/v1/usage/timeseries?feature=api_calls&from=${from}&to=${to}`, {
      token: other.accessToken,
      tenant: owner.tenant.id,
    });
    expect(foreign.status).toBe(403);
  });

  it("answers a bad query with a 400 naming the problem", async () => {
    const owner = await register();
    const read = (query: string) =>
      call(`/api/v1/usage/timeseries?${query}`, {
        token: owner.accessToken,
        tenant: owner.tenant.id,
      });
    expectError(
      await read("from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z"),
      400,
      /feature must be a string/,
    );
    expectError(
      await read("feature=x&from=yesterday&to=2026-01-02T00:00:00Z"),
      400,
      /from must be an ISO-8601 date-time/,
    );
    expectError(
      await read("feature=x&from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z"),
      400,
      "to must be after from",
    );
    expectError(
      await read("feature=x&from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z&granularity=week"),
      400,
      /granularity must be one of: hour, day/,
    );
    expectError(
      await read("feature=x&from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z&granularity=hour"),
      400,
      /at most 744 are served/,
    );
  });

  it("is in the OpenAPI document", async () => {
    const document = await call("/api/docs-json");
    const operation = document.body.paths["/api/v1/usage/timeseries"].get;
    expect(operation.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(["feature", "from", "to", "granularity"]),
    );
    expect(operation.responses["200"]).toBeDefined();
  });
});
