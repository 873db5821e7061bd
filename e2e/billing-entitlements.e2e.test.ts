import { describe, expect, it } from "vitest";
import {
  createApiKey,
  createFeature,
  createPlanWithPrice,
  grantEntitlement,
  loginDevAdmin,
  registerTenantOwner,
  send,
  subscribe,
} from "./lib/billing-api.ts";

// The entitlements acceptance flow against the running stack (wrangler dev,
// real D1, real Durable Objects, the demo admin), including the concurrency
// proof over real HTTP connections.

const suffix = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const key = (name: string) => `e2e_${name}_${suffix}`;

describe("entitlements against the running stack", () => {
  it("admin builds a plan, a tenant subscribes with a trial, limits hold under 200 parallel consumes, plan change", async () => {
    const admin = await loginDevAdmin();
    const platform = { token: admin };

    // The demo catalog is there.
    const plans = await send("/plans");
    expect(plans.body.data.map((p: { slug: string }) => p.slug)).toEqual(
      expect.arrayContaining(["free", "pro", "enterprise"]),
    );

    const features = {
      sso: await createFeature(platform, { name: "SSO", lookupKey: key("sso"), type: "BOOLEAN" }),
      projects: await createFeature(platform, {
        name: "Projects",
        lookupKey: key("projects"),
        type: "QUOTA",
        unit: "project",
      }),
      seats: await createFeature(platform, {
        name: "Seats",
        lookupKey: key("seats"),
        type: "QUOTA",
        unit: "seat",
      }),
      calls: await createFeature(platform, {
        name: "Calls",
        lookupKey: key("calls"),
        type: "METERED",
        unit: "call",
      }),
    };
    // The trial comes from the catalog: a tenant's first subscription to this price gets 7 days.
    const { plan, price } = await createPlanWithPrice(
      platform,
      { name: "E2E Team", slug: `e2e-team-${suffix}` },
      { interval: "MONTHLY", amount: 4900, currency: "usd", trialDays: 7 },
    );
    await grantEntitlement(platform, plan.id, features.sso.id, { value: true });
    const projectsGrant = await grantEntitlement(platform, plan.id, features.projects.id, {
      limit: 50,
      limitBehavior: "HARD",
      resetPeriod: "MONTHLY",
    });
    await grantEntitlement(platform, plan.id, features.seats.id, {
      limit: 5,
      limitBehavior: "SOFT",
      overagePrice: 100_000,
      resetPeriod: "MONTHLY",
    });
    await grantEntitlement(platform, plan.id, features.calls.id, {
      includedAmount: 1000,
      overagePrice: 10,
      resetPeriod: "MONTHLY",
    });

    // A tenant signs up and subscribes (the price's trial); its server uses an API key.
    const owner = await registerTenantOwner({
      email: `e2e-ent-${suffix}@example.com`,
      password: "E2ePassw0rd",
      firstName: "Ent",
      lastName: "Itled",
      tenantName: "Entitled Co",
    });
    const token = owner.accessToken as string;
    const tenantId = owner.tenant.id as string;
    const customer = { token, tenantId };
    const subscription = await subscribe(customer, { planId: plan.id, priceId: price.id });
    expect(subscription.status).toBe("TRIALING");
    const apiKey = await createApiKey(customer, "server");
    const check = (feature: string) => send(`/entitlements/${feature}/check`, { token: apiKey });
    const consume = (feature: string, amount = 1) =>
      send(`/entitlements/${feature}/consume`, { token: apiKey, body: { amount } });

    // Editing the plan afterwards changes nothing for this subscriber.
    const edit = await send(`/plans/${plan.id}/entitlements/${projectsGrant.id}`, {
      method: "PATCH",
      token: admin,
      body: { limit: 5000 },
    });
    expect(edit.status).toBe(200);
    expect((await check(features.projects.lookupKey)).body).toMatchObject({
      allowed: true,
      limit: 50,
      used: 0,
    });

    // 200 parallel consumes of 1 against the HARD limit of 50.
    const results = await Promise.all(
      Array.from({ length: 200 }, () => consume(features.projects.lookupKey)),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(50);
    expect(results.filter((r) => r.status === 403)).toHaveLength(150);
    expect((await check(features.projects.lookupKey)).body).toMatchObject({
      allowed: false,
      used: 50,
      remaining: 0,
    });

    // SOFT goes into overage, METERED past its included amount, BOOLEAN is a check only.
    expect((await consume(features.seats.lookupKey, 6)).body).toMatchObject({
      overage: true,
      used: 6,
    });
    expect((await consume(features.calls.lookupKey, 1500)).body).toMatchObject({ overage: true });
    expect((await consume(features.sso.lookupKey)).status).toBe(400);
    expect((await check(features.sso.lookupKey)).body.allowed).toBe(true);

    // A plan change brings the new limits.
    const bigger = await createPlanWithPrice(
      platform,
      { name: "E2E Scale", slug: `e2e-scale-${suffix}` },
      { interval: "ANNUALLY", amount: 49_000, currency: "usd" },
    );
    await grantEntitlement(platform, bigger.plan.id, features.projects.id, {
      limit: 500,
      limitBehavior: "HARD",
      resetPeriod: "MONTHLY",
    });
    await subscribe(customer, { planId: bigger.plan.id, priceId: bigger.price.id });
    expect((await check(features.projects.lookupKey)).body).toMatchObject({
      allowed: true,
      limit: 500,
      used: 0,
    });
    expect((await check(features.seats.lookupKey)).body.allowed).toBe(false);
    const history = await send("/subscriptions", { token, tenant: tenantId });
    expect(history.body.data.map((s: { status: string }) => s.status)).toEqual([
      "ACTIVE",
      "CANCELLED",
    ]);
  });
});
