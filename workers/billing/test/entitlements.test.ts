import { env } from "cloudflare:workers";
import { addMonthsClamped } from "@edge-platform/shared/billing/billing-period";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type BuiltPlan,
  buildPlan,
  createApiKey,
  createFeature,
  entitlementsFor,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { type Account, addMember, call, db, expectError, register } from "./helpers.ts";

let admin: Account;
let built: BuiltPlan;
beforeAll(async () => {
  admin = await platformAdmin();
  built = await buildPlan(admin, { hard: 50, soft: 5, included: 100 });
});

async function subscribedTenant(plan: BuiltPlan = built) {
  const owner = await register();
  await subscribe(owner, plan.plan.id, plan.monthly.id);
  const key = await createApiKey(owner);
  return { owner, key, api: entitlementsFor(key) };
}

describe("callers", () => {
  it("accepts the tenant's API key and a member's JWT with x-tenant-id (any role)", async () => {
    const { owner, api } = await subscribedTenant();
    expect((await api.check(built.keys.flag)).body).toMatchObject({ allowed: true });
    const billing = await addMember(owner, "BILLING");
    const viaJwt = await call(`/api/v1/entitlements/${built.keys.hard}/consume`, {
      token: billing.accessToken,
      tenant: owner.tenant.id,
      body: { amount: 2 },
    });
    expect(viaJwt.status).toBe(200);
    expect(viaJwt.body).toMatchObject({ allowed: true, consumed: 2, used: 2 });
    expect((await api.check(built.keys.hard)).body.used).toBe(2);
  });

  it("refuses anonymous callers, bad keys, and members of other tenants", async () => {
    const { owner } = await subscribedTenant();
    expectError(await call(`/api/v1/entitlements/${built.keys.flag}/check`), 401);
    expectError(
      await call(`/api/v1/entitlements/${built.keys.flag}/check`, {
        token: `mk_${"A".repeat(43)}`,
      }),
      401,
      "API key not found or revoked",
    );
    const stranger = await register();
    expectError(
      await call(`/api/v1/entitlements/${built.keys.flag}/check`, {
        token: stranger.accessToken,
        tenant: owner.tenant.id,
      }),
      403,
      "You do not have access to this tenant",
    );
    expectError(
      await call(`/api/v1/entitlements/${built.keys.flag}/check`, { token: owner.accessToken }),
      400,
      "x-tenant-id header is required",
    );
  });

  it("keeps tenants apart: one tenant's usage never shows in another's", async () => {
    const a = await subscribedTenant();
    const b = await subscribedTenant();
    await a.api.consume(built.keys.hard, 7);
    expect((await a.api.check(built.keys.hard)).body.used).toBe(7);
    expect((await b.api.check(built.keys.hard)).body.used).toBe(0);
    // An x-tenant-id header does not move an API key to another tenant.
    const spoofed = await call(`/api/v1/entitlements/${built.keys.hard}/check`, {
      token: b.key,
      tenant: a.owner.tenant.id,
    });
    expect(spoofed.body.used).toBe(0);
  });
});

describe("check", () => {
  it("reports BOOLEAN value, quota usage, remaining and resetAt", async () => {
    const { owner, api } = await subscribedTenant();
    const active = (
      await call("/api/v1/subscriptions/active", {
        token: owner.accessToken,
        tenant: owner.tenant.id,
      })
    ).body;
    // The first monthly window ends one month after the start (stored periods
    // may have been rolled by another file's cron run at a future time).
    const resetAt = addMonthsClamped(new Date(active.startedAt), 1).toISOString();
    expect((await api.check(built.keys.flag)).body).toEqual({
      allowed: true,
      feature: built.keys.flag,
      type: "BOOLEAN",
      limit: null,
      used: null,
      remaining: null,
      overage: null,
      resetAt: null,
      reason: null,
    });
    const check = await api.check(built.keys.hard);
    expect(check.status).toBe(200);
    expect(check.body).toEqual({
      allowed: true,
      feature: built.keys.hard,
      type: "QUOTA",
      limit: 50,
      used: 0,
      remaining: 50,
      overage: 0,
      resetAt,
      reason: null,
    });
  });

  it("says allowed false with a reason without a subscription or for a feature outside the plan", async () => {
    const owner = await register();
    const key = await createApiKey(owner);
    expect((await entitlementsFor(key).check(built.keys.flag)).body).toMatchObject({
      allowed: false,
      reason: "No active subscription",
    });
    const { api } = await subscribedTenant();
    // A feature of the catalog that the plan does not grant: allowed false, with the reason.
    const outside = await createFeature(admin, "QUOTA");
    expect((await api.check(outside.lookupKey)).body).toMatchObject({
      allowed: false,
      feature: outside.lookupKey,
      reason: `Feature "${outside.lookupKey}" is not included in your plan`,
    });
    // A feature that does not exist in the catalog: 404.
    expectError(
      await api.check("no_such_feature_anywhere"),
      404,
      'Feature with lookup key "no_such_feature_anywhere" not found',
    );
    expectError(await api.check("Not-A-Key"), 400, (message) =>
      expect(message).toContain("featureKey must be lowercase alphanumeric with underscores only"),
    );
  });

  it("answers allowed false for a BOOLEAN that the plan switches off", async () => {
    const plan = await buildPlan(admin);
    await call(`/api/v1/plans/${plan.plan.id}/entitlements/${plan.entitlements.flag}`, {
      method: "PATCH",
      token: admin.accessToken,
      body: { value: false },
    });
    const { api } = await subscribedTenant(plan);
    expect((await api.check(plan.keys.flag)).body).toMatchObject({
      allowed: false,
      reason: `Feature "${plan.keys.flag}" is not enabled on your plan`,
    });
  });
});

describe("consume", () => {
  it("HARD: consuming beyond the limit is a 403 and consumes nothing", async () => {
    const plan = await buildPlan(admin, { hard: 5 });
    const { api } = await subscribedTenant(plan);
    const first = await api.consume(plan.keys.hard, 4);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      allowed: true,
      feature: plan.keys.hard,
      consumed: 4,
      used: 4,
      remaining: 1,
      overage: false,
    });
    expectError(
      await api.consume(plan.keys.hard, 2),
      403,
      `Quota exceeded for "${plan.keys.hard}": limit is 5, used 4, requested 2`,
    );
    expect((await api.check(plan.keys.hard)).body).toMatchObject({ used: 4, allowed: true });
    expect((await api.consume(plan.keys.hard, 1)).body).toMatchObject({ used: 5, remaining: 0 });
    expect((await api.check(plan.keys.hard)).body).toMatchObject({
      allowed: false,
      reason: "Quota exceeded",
    });
  });

  it("SOFT quota and METERED: always allowed, overage true beyond the limit", async () => {
    const { api } = await subscribedTenant();
    expect((await api.consume(built.keys.soft, 5)).body).toMatchObject({ overage: false, used: 5 });
    expect((await api.consume(built.keys.soft, 2)).body).toMatchObject({
      allowed: true,
      overage: true,
      used: 7,
      remaining: 0,
    });
    expect((await api.check(built.keys.soft)).body).toMatchObject({ allowed: true, overage: 2 });
    expect((await api.consume(built.keys.metered, 150)).body).toMatchObject({
      type: "METERED",
      limit: 100,
      used: 150,
      overage: true,
    });
  });

  it("refuses BOOLEAN features (400), and without a subscription or outside the plan (403)", async () => {
    const { api } = await subscribedTenant();
    expectError(
      await api.consume(built.keys.flag),
      400,
      "Boolean features cannot be consumed. Use the check endpoint instead.",
    );
    const outside = await createFeature(admin, "QUOTA");
    expectError(
      await api.consume(outside.lookupKey),
      403,
      `Feature "${outside.lookupKey}" is not included in your plan`,
    );
    expectError(await api.consume("no_such_feature_anywhere"), 404, /not found/);
    const owner = await register();
    const key = await createApiKey(owner);
    expectError(await entitlementsFor(key).consume(built.keys.hard), 403, "No active subscription");
  });

  it("takes only positive integer amounts", async () => {
    const { key } = await subscribedTenant();
    const post = (body: unknown) =>
      call(`/api/v1/entitlements/${built.keys.hard}/consume`, { token: key, body });
    for (const amount of [0, -1, 1.5, "3", null]) {
      expectError(await post({ amount }), 400, (message) =>
        expect(message).toEqual(expect.arrayContaining([expect.stringMatching(/^amount must be/)])),
      );
    }
    expectError(await post({ amount: 1, extra: true }), 400);
    expectError(
      await call(`/api/v1/entitlements/${built.keys.hard}/consume`, { token: key, rawBody: "{" }),
      400,
    );
    expect((await post({})).body).toMatchObject({ consumed: 1 });
  });

  it("refuses a tenant that is no longer ACTIVE", async () => {
    const { owner } = await subscribedTenant();
    await db()
      .prepare("UPDATE tenants SET status = 'SUSPENDED' WHERE id = ?")
      .bind(owner.tenant.id)
      .run();
    const asMember = (path: string, body?: unknown) =>
      call(path, { token: owner.accessToken, tenant: owner.tenant.id, body });
    expect((await asMember(`/api/v1/entitlements/${built.keys.flag}/check`)).body).toMatchObject({
      allowed: false,
      reason: "Tenant is suspended",
    });
    expectError(
      await asMember(`/api/v1/entitlements/${built.keys.hard}/consume`, { amount: 1 }),
      403,
    );
  });

  it("never passes a HARD limit: 200 parallel consumes of 1 against 50 give exactly 50 successes", async () => {
    const { api } = await subscribedTenant();
    const results = await Promise.all(
      Array.from({ length: 200 }, () => api.consume(built.keys.hard, 1)),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(50);
    expect(results.filter((r) => r.status === 403)).toHaveLength(150);
    expect(results.every((r) => r.status === 200 || r.status === 403)).toBe(true);
    const usedValues = results
      .filter((r) => r.status === 200)
      .map((r) => r.body.used)
      .sort((a, b) => a - b);
    expect(usedValues).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect((await api.check(built.keys.hard)).body).toMatchObject({
      used: 50,
      remaining: 0,
      allowed: false,
    });
  });

  it("makes consumed units durable in usage_aggregates, once", async () => {
    const { owner, api } = await subscribedTenant();
    await Promise.all([api.consume(built.keys.metered, 30), api.consume(built.keys.metered, 12)]);
    await entitlementCounter(env.ENTITLEMENT_COUNTER, owner.tenant.id).flush();
    const stored = await db()
      .prepare(
        "SELECT sum(amount) AS total FROM usage_aggregates WHERE tenant_id = ? AND feature_lookup_key = ?",
      )
      .bind(owner.tenant.id, built.keys.metered)
      .first<{ total: number }>();
    expect(stored?.total).toBe(42);
    expect((await api.check(built.keys.metered)).body.used).toBe(42);
  });
});
