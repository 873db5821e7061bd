import { describe, expect, it } from "vitest";
import {
  createApiKey,
  createFeature,
  createPlan,
  createPrice,
  entitlementsFor,
  grant,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { call, expectError, register } from "./helpers.ts";

// The acceptance flow, end to end over HTTP: an admin builds a plan
// with all four kinds of entitlement; a tenant subscribes with a trial; the
// plan is edited and the snapshot stays; consume hits the HARD limit; SOFT
// goes into overage; the tenant changes plan and gets the new limits.
describe("entitlements, end to end", () => {
  it("runs the whole flow", async () => {
    const admin = await platformAdmin();
    const asAdmin = (path: string, body?: unknown, method?: string) =>
      call(path, { token: admin.accessToken, body, method });

    const sso = await createFeature(admin, "BOOLEAN", { name: "SSO" });
    const projects = await createFeature(admin, "QUOTA", { name: "Projects", unit: "project" });
    const seats = await createFeature(admin, "QUOTA", { name: "Seats", unit: "seat" });
    const calls = await createFeature(admin, "METERED", { name: "API calls", unit: "call" });

    const starter = await createPlan(admin, { name: "Starter", displayOrder: 1 });
    const starterMonthly = await createPrice(admin, starter.id, {
      interval: "MONTHLY",
      amount: 1900,
      // The catalog gives the trial (a tenant's first subscription to this price).
      trialDays: 14,
    });
    const projectsGrant = await grant(admin, starter.id, projects.id, {
      limit: 3,
      limitBehavior: "HARD",
      resetPeriod: "MONTHLY",
    });
    await grant(admin, starter.id, sso.id, { value: true });
    await grant(admin, starter.id, seats.id, {
      limit: 2,
      limitBehavior: "SOFT",
      overagePrice: 50_000,
      resetPeriod: "MONTHLY",
    });
    await grant(admin, starter.id, calls.id, {
      includedAmount: 100,
      overagePrice: 20,
      resetPeriod: "MONTHLY",
    });

    const growth = await createPlan(admin, { name: "Growth", displayOrder: 2 });
    const growthAnnual = await createPrice(admin, growth.id, {
      interval: "ANNUALLY",
      amount: 49_000,
    });
    await grant(admin, growth.id, projects.id, {
      limit: 10,
      limitBehavior: "HARD",
      resetPeriod: "MONTHLY",
    });
    await grant(admin, growth.id, seats.id, {
      limit: 20,
      limitBehavior: "SOFT",
      overagePrice: 40_000,
      resetPeriod: "MONTHLY",
    });

    // A tenant subscribes and gets the price's trial.
    const owner = await register();
    const trial = await subscribe(owner, starter.id, starterMonthly.id);
    expect(trial.status).toBe("TRIALING");
    const key = await createApiKey(owner);
    const api = entitlementsFor(key);

    // The plan is edited; the tenant's snapshot stays.
    await asAdmin(
      `/api/v1/plans/${starter.id}/entitlements/${projectsGrant.id}`,
      { limit: 1000 },
      "PATCH",
    );
    expect(
      (await call(`/api/v1/plans/${starter.id}/entitlements/${projectsGrant.id}`)).body.limit,
    ).toBe(1000);
    expect((await api.check(projects.lookupKey)).body).toMatchObject({
      allowed: true,
      limit: 3,
      used: 0,
    });
    expect((await api.check(sso.lookupKey)).body.allowed).toBe(true);

    // Consume hits the HARD limit.
    for (let i = 1; i <= 3; i++) {
      expect((await api.consume(projects.lookupKey)).body).toMatchObject({
        used: i,
        overage: false,
      });
    }
    expectError(await api.consume(projects.lookupKey), 403, /^Quota exceeded for/);
    expect((await api.check(projects.lookupKey)).body).toMatchObject({
      allowed: false,
      used: 3,
      remaining: 0,
    });

    // SOFT goes into overage; METERED counts past its included amount.
    expect((await api.consume(seats.lookupKey, 2)).body.overage).toBe(false);
    expect((await api.consume(seats.lookupKey, 1)).body).toMatchObject({ overage: true, used: 3 });
    expect((await api.consume(calls.lookupKey, 120)).body).toMatchObject({
      overage: true,
      used: 120,
    });
    expectError(await api.consume(sso.lookupKey), 400);

    // The tenant changes plan and gets the new limits, from fresh snapshots.
    const changed = await subscribe(owner, growth.id, growthAnnual.id);
    expect(changed.status).toBe("ACTIVE");
    expect((await api.check(projects.lookupKey)).body).toMatchObject({
      allowed: true,
      limit: 10,
      used: 0,
    });
    expect((await api.consume(projects.lookupKey, 4)).body).toMatchObject({
      used: 4,
      remaining: 6,
    });
    expect((await api.check(seats.lookupKey)).body).toMatchObject({ limit: 20, overage: 0 });
    expect((await api.check(sso.lookupKey)).body).toMatchObject({
      allowed: false,
      reason: `Feature "${sso.lookupKey}" is not included in your plan`,
    });
    const history = await call("/api/v1/subscriptions", {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(history.body.data.map((s: { status: string }) => s.status)).toEqual([
      "ACTIVE",
      "CANCELLED",
    ]);
  });
});
