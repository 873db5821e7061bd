import { beforeAll, describe, expect, it } from "vitest";
import {
  createApiKey,
  createFeature,
  createPlan,
  createPrice,
  grant,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { type Account, call, db, register } from "./helpers.ts";

// A HARD quota on distinct values (at most N active users), decided by the
// tenant's counter in one synchronous step per consume: a value already
// counted is admitted with no change, a new value takes a unit, and a new
// value at the limit is refused. Driven through the HTTP API.

let admin: Account;
beforeAll(async () => {
  admin = await platformAdmin();
});

async function activeUsersTenant(limit: number) {
  const feature = await createFeature(admin, "QUOTA", {
    meter: { aggregation: "UNIQUE_COUNT", property: "user_id" },
  });
  const plan = await createPlan(admin);
  await grant(admin, plan.id, feature.id, { limit, limitBehavior: "HARD", resetPeriod: "MONTHLY" });
  const price = await createPrice(admin, plan.id);
  const owner = await register();
  const subscription = await subscribe(owner, plan.id, price.id);
  const key = await createApiKey(owner);
  const consume = (body: Record<string, unknown>) =>
    call(`/api/v1/entitlements/${feature.lookupKey}/consume`, { token: key, body });
  const check = () => call(`/api/v1/entitlements/${feature.lookupKey}/check`, { token: key });
  return { feature, owner, subscription, consume, check };
}

describe("UNIQUE_COUNT quotas", () => {
  it("admits a counted value with no change, a new one while under the limit, and refuses a new one at it", async () => {
    const tenant = await activeUsersTenant(2);
    const first = await tenant.consume({ properties: { user_id: "u-1" } });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ consumed: 1, used: 1, limit: 2, remaining: 1 });
    const again = await tenant.consume({ properties: { user_id: "u-1" } });
    expect(again.body).toMatchObject({ consumed: 0, used: 1 });
    expect((await tenant.consume({ properties: { user_id: "u-2" } })).body).toMatchObject({
      consumed: 1,
      used: 2,
      remaining: 0,
    });
    const refused = await tenant.consume({ properties: { user_id: "u-3" } });
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body)).toContain("Quota exceeded");
    // Counted users still get in at the limit.
    expect((await tenant.consume({ properties: { user_id: "u-2" } })).status).toBe(200);
    expect((await tenant.check()).body).toMatchObject({ used: 2, allowed: false });
  });

  it("refuses a consume without the property the meter counts (422), and bad properties (422)", async () => {
    const tenant = await activeUsersTenant(5);
    const missing = await tenant.consume({});
    expect(missing.status).toBe(422);
    expect(JSON.stringify(missing.body)).toContain("user_id");
    const badKey = await tenant.consume({ properties: { "User-Id": "u-1" } });
    expect(badKey.status).toBe(422);
    const badValue = await tenant.consume({ properties: { user_id: { nested: true } } });
    expect(badValue.status).toBe(422);
    expect((await tenant.check()).body).toMatchObject({ used: 0 });
  });

  it("50 concurrent consumes of one new value count it once", async () => {
    const tenant = await activeUsersTenant(10);
    const results = await Promise.all(
      Array.from({ length: 50 }, () => tenant.consume({ properties: { user_id: "same" } })),
    );
    expect(results.every((result) => result.status === 200)).toBe(true);
    expect(results.filter((result) => result.body.consumed === 1)).toHaveLength(1);
    expect((await tenant.check()).body).toMatchObject({ used: 1 });
  });

  it("50 concurrent consumes of 50 new values against a limit of 10 admit exactly 10, each counted once in D1", async () => {
    const tenant = await activeUsersTenant(10);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, index) =>
        tenant.consume({ properties: { user_id: `user-${index}` } }),
      ),
    );
    expect(results.filter((result) => result.status === 200)).toHaveLength(10);
    expect(results.filter((result) => result.status === 403)).toHaveLength(40);
    expect((await tenant.check()).body).toMatchObject({ used: 10, allowed: false });
    // Invoicing's flush writes what the counter holds: ten distinct values in the window's group.
    const flushed = await call("/api/v1/usage/aggregates", {
      token: tenant.owner.accessToken,
      tenant: tenant.owner.tenant.id,
    });
    expect(flushed.status).toBe(200);
    await waitForMeterRow(tenant.subscription.id, tenant.feature.lookupKey, 10);
  });
});

/** The counter flushes on its alarm: wait until D1 holds the window's distinct values. */
async function waitForMeterRow(subscriptionId: string, feature: string, distinct: number) {
  for (let attempt = 0; attempt < 100; attempt++) {
    const row = await db()
      .prepare(
        "SELECT sum(distinct_values) AS distinct_values, sum(events) AS events FROM usage_meter_groups WHERE subscription_id = ? AND feature_lookup_key = ?",
      )
      .bind(subscriptionId, feature)
      .first<{ distinct_values: number | null; events: number | null }>();
    if ((row?.distinct_values ?? 0) >= distinct) {
      expect(row).toEqual({ distinct_values: distinct, events: distinct });
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("the counter's flush did not write the distinct values");
}
