import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import type { ConsumeResult } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import { drizzle } from "drizzle-orm/d1";
import { beforeAll, describe, expect, it } from "vitest";
import {
  createFeature,
  createPlan,
  createPrice,
  grant,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import {
  recordEntryFor,
  snapshot,
  storedAmount,
  subscribedTenant,
} from "./entitlement-fixtures.ts";
import { type Account, register } from "./helpers.ts";

// A tenant's counting spread over four counter shards (entitlements/counter/
// README.md, "Counter shards"), driven the way the billing worker and the
// usage pipeline call them: consumes and checks to any shard, events to the
// shard of their log shard. Shard 0 owns HARD limits and leases quota.

const SHARDS = 4;
const _db = () => drizzle(env.DB);
const shardsOf = (tenantId: string) =>
  Array.from({ length: SHARDS }, (_, shard) =>
    entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId, shard),
  );

const admitted = (results: ConsumeResult[]) =>
  results.filter((result) => result.status === "consumed");
const refused = (results: ConsumeResult[]) =>
  results.filter(
    (result): result is Extract<ConsumeResult, { status: "quota_exceeded" }> =>
      result.status === "quota_exceeded",
  );

describe("counter shards: HARD limits with quota leases", () => {
  it("300 racing consumes of 1 over 4 shards against HARD 100 admit exactly 100", async () => {
    const fixture = await subscribedTenant([snapshot.hard("seats", 100)]);
    const shards = shardsOf(fixture.tenantId);
    // Each shard holds a lease when the race starts.
    const warmUp = await Promise.all(shards.map((shard) => shard.consume("seats", 1)));
    const results = await Promise.all(
      Array.from({ length: 296 }, (_, i) => shards[i % SHARDS]?.consume("seats", 1)),
    );
    const answers = [...warmUp, ...results] as ConsumeResult[];
    expect(admitted(answers)).toHaveLength(100);
    expect(refused(answers)).toHaveLength(200);
    for (const refusal of refused(answers))
      expect(refusal.used + refusal.requested).toBeGreaterThan(100);
    await shards[0]?.flush();
    expect(await storedAmount(fixture, "seats")).toBe(100);
    expect(await shards[0]?.check("seats")).toMatchObject({ used: 100, allowed: false });
  });

  it("1,000 racing consumes of 1-5 over 4 shards never pass HARD 1,000 and refuse only when used + amount > limit", async () => {
    const fixture = await subscribedTenant([snapshot.hard("tokens", 1_000)]);
    const shards = shardsOf(fixture.tenantId);
    const sizes = Array.from({ length: 1_000 }, () => 1 + Math.floor(Math.random() * 5));
    const completed: ConsumeResult[] = [];
    // Each shard holds a lease when the race starts.
    for (const [i, shard] of shards.entries()) {
      completed.push(await shard.consume("tokens", sizes[i] ?? 1));
    }
    await Promise.all(
      sizes.slice(SHARDS).map(async (amount, i) => {
        const result = await shards[i % SHARDS]?.consume("tokens", amount);
        if (result) completed.push(result);
      }),
    );
    const taken = admitted(completed).reduce(
      (sum, result) => sum + (result.status === "consumed" ? result.consumed : 0),
      0,
    );
    expect(taken).toBeLessThanOrEqual(1_000);
    const refusals = refused(completed);
    expect(refusals.length).toBeGreaterThan(0);
    for (const refusal of refusals) {
      expect(refusal.used + refusal.requested).toBeGreaterThan(1_000);
      // Units only grow: a refusal that would have fit the final total was a wrong one.
      expect(taken + refusal.requested).toBeGreaterThan(1_000);
    }
    const last = refusals.at(-1);
    expect(last && last.used + last.requested).toBeGreaterThan(1_000);
    await shards[0]?.flush();
    expect(await storedAmount(fixture, "tokens")).toBe(taken);
    expect(await shards[0]?.check("tokens")).toMatchObject({ used: taken });
  });

  it("shard 0 saturated while the other shards spend their leases: still exactly the limit", async () => {
    const fixture = await subscribedTenant([snapshot.hard("seats", 100)]);
    const shards = shardsOf(fixture.tenantId);
    const warmUp = await Promise.all(shards.map((shard) => shard.consume("seats", 1)));
    // The other shards spend what is left of their leases (5 units each) while
    // shard 0 takes a flood: its decisions count those leases as used.
    const race = await Promise.all([
      ...shards
        .slice(1)
        .flatMap((shard) => Array.from({ length: 4 }, () => shard.consume("seats", 1))),
      ...Array.from(
        { length: 200 },
        () => shards[0]?.consume("seats", 1) as Promise<ConsumeResult>,
      ),
    ]);
    expect(admitted([...warmUp, ...race])).toHaveLength(100);
    await shards[0]?.flush();
    expect(await storedAmount(fixture, "seats")).toBe(100);
  });

  it("a shard admits from its lease without asking shard 0 each time, and shard 0 takes the lease back before it refuses", async () => {
    const fixture = await subscribedTenant([snapshot.hard("seats", 1_000)]);
    const [zero, one] = shardsOf(fixture.tenantId);
    // The first consume on shard 1 leases 5% of the limit (50 units).
    for (let i = 0; i < 40; i++) {
      expect(await one?.consume("seats", 1)).toMatchObject({ status: "consumed" });
    }
    // Shard 0 counts the lease as used: 950 fit beside it...
    expect(await zero?.consume("seats", 950)).toMatchObject({ status: "consumed" });
    // ...and the last 10 units come back from shard 1 when shard 0 needs them.
    expect(await zero?.consume("seats", 10)).toMatchObject({ status: "consumed", used: 1_000 });
    expect(await zero?.consume("seats", 1)).toMatchObject({
      status: "quota_exceeded",
      used: 1_000,
    });
    expect(await one?.consume("seats", 1)).toMatchObject({ status: "quota_exceeded", used: 1_000 });
    await zero?.flush();
    expect(await storedAmount(fixture, "seats")).toBe(1_000);
  });
});

describe("counter shards: counting", () => {
  it("events and SOFT consumes spread over 4 shards are each counted once, in D1 and in shard 0's total", async () => {
    const fixture = await subscribedTenant([snapshot.metered("api_calls", 10_000)]);
    const shards = shardsOf(fixture.tenantId);
    const entry = recordEntryFor(fixture, "api_calls", new Date());
    await Promise.all(
      Array.from({ length: 40 }, (_, batch) =>
        shards[batch % SHARDS]?.record(
          Array.from({ length: 25 }, (_, i) => entry(`evt-${batch}-${i}`, 2)),
        ),
      ),
    );
    // A redelivery reaches the same shard, which remembers the ids.
    expect(await shards[1]?.record([entry("evt-1-0", 2), entry("evt-1-1", 2)])).toEqual({
      recorded: 0,
      duplicates: 2,
    });
    await Promise.all(
      Array.from({ length: 100 }, (_, i) => shards[i % SHARDS]?.consume("api_calls", 3)),
    );
    await shards[0]?.flush();
    expect(await storedAmount(fixture, "api_calls")).toBe(40 * 25 * 2 + 100 * 3);
    expect(await shards[0]?.check("api_calls")).toMatchObject({ used: 2_300 });
  });

  it("a check on another shard lags the tenant's total by at most USAGE_COUNTER_LEASE_INTERVAL_MS", async () => {
    const fixture = await subscribedTenant([snapshot.soft("projects", 100)]);
    const [zero, one, two] = shardsOf(fixture.tenantId);
    expect(await two?.check("projects")).toMatchObject({ used: 0 });
    expect(await one?.consume("projects", 7)).toMatchObject({ status: "consumed", used: 7 });
    expect(await zero?.consume("projects", 5)).toMatchObject({ status: "consumed", used: 5 });
    // Shard 2's view was synced a moment ago: it has not seen either consume yet.
    expect(await two?.check("projects")).toMatchObject({ used: 0 });
    // Within the lease interval (1 s here) shard 1 has reported and shard 2's view is synced again.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await zero?.check("projects")).toMatchObject({ used: 12 });
    expect(await two?.check("projects")).toMatchObject({ used: 12 });
    expect(await one?.check("projects")).toMatchObject({ used: 12 });
  });

  it("from 1 shard to 4 and back in the middle of a load, nothing is lost or counted twice", async () => {
    const fixture = await subscribedTenant([
      snapshot.metered("api_calls", 100_000),
      snapshot.hard("seats", 500),
    ]);
    const shards = shardsOf(fixture.tenantId);
    const entry = recordEntryFor(fixture, "api_calls", new Date());
    // Where calls go: shard 0 alone, then all four, then shard 0 alone again.
    const phases = [1, SHARDS, 1];
    let expectedEvents = 0;
    const seatResults: ConsumeResult[] = [];
    const phaseLoads = phases.map((count, phase) => async () => {
      const loads: Promise<unknown>[] = [];
      for (let batch = 0; batch < 12; batch++) {
        const shard = shards[batch % count];
        const entries = Array.from({ length: 20 }, (_, i) => entry(`p${phase}-${batch}-${i}`, 1));
        expectedEvents += entries.length;
        loads.push(shard?.record(entries) ?? Promise.resolve());
        for (let i = 0; i < 20; i++) {
          loads.push(
            (shards[(batch + i) % count]?.consume("seats", 2) ?? Promise.reject()).then((result) =>
              seatResults.push(result),
            ),
          );
        }
      }
      await Promise.all(loads);
    });
    // Each phase starts while the one before is still running.
    const running: Promise<void>[] = [];
    for (const load of phaseLoads) {
      running.push(load());
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await Promise.all(running);
    // Redeliveries after the change back: the shard that first counted an event is not called any more.
    expect(await shards[0]?.record([entry("p2-0-0", 1)])).toEqual({ recorded: 0, duplicates: 1 });

    await shards[0]?.flush();
    expect(await storedAmount(fixture, "api_calls")).toBe(expectedEvents);
    const seats = admitted(seatResults).length * 2;
    expect(seats).toBe(500);
    expect(await storedAmount(fixture, "seats")).toBe(500);
    expect(await shards[0]?.check("api_calls")).toMatchObject({ used: expectedEvents });
    expect(await shards[0]?.check("seats")).toMatchObject({ used: 500, allowed: false });
  });
});

describe("counter shards: what stays on shard 0", () => {
  let admin: Account;
  beforeAll(async () => {
    admin = await platformAdmin();
  });

  it("UNIQUE_COUNT consumes on any shard count each distinct value once (shard 0 decides them)", async () => {
    const feature = await createFeature(admin, "QUOTA", {
      meter: { aggregation: "UNIQUE_COUNT", property: "user_id" },
    });
    const plan = await createPlan(admin);
    await grant(admin, plan.id, feature.id, {
      limit: 1_000,
      limitBehavior: "HARD",
      resetPeriod: "MONTHLY",
    });
    const price = await createPrice(admin, plan.id);
    const owner = await register();
    const subscription = await subscribe(owner, plan.id, price.id);
    const shards = shardsOf(owner.tenant.id);
    const key = feature.lookupKey as string;
    // 40 racing consumes of 3 values, over every shard: each value takes one unit.
    const consumed = await Promise.all(
      Array.from(
        { length: 40 },
        (_, i) =>
          shards[i % SHARDS]?.consume(key, 1, undefined, undefined, {
            user_id: `u-${i % 3}`,
          }) as Promise<ConsumeResult>,
      ),
    );
    expect(consumed.every((result) => result.status === "consumed")).toBe(true);
    expect(
      consumed.reduce(
        (sum, result) => sum + (result.status === "consumed" ? result.consumed : 0),
        0,
      ),
    ).toBe(3);
    const fixture = {
      tenantId: owner.tenant.id,
      subscriptionId: subscription.id as string,
      startedAt: new Date(subscription.startedAt as string),
    };
    await shards[0]?.flush();
    expect(await storedAmount(fixture, key)).toBe(3);
    for (const shard of shards) expect(await shard.check(key)).toMatchObject({ used: 3 });
  });
});
