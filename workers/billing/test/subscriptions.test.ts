import {
  createExecutionContext,
  createScheduledController,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import worker from "../src/index.ts";
import {
  type BuiltPlan,
  buildPlan,
  createApiKey,
  createPlan,
  createPrice,
  entitlementsFor,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { type Account, addMember, call, db, expectError, register } from "./helpers.ts";

let admin: Account;
let built: BuiltPlan;
beforeAll(async () => {
  admin = await platformAdmin();
  built = await buildPlan(admin);
});

const asOwner = (owner: Account, path: string, body?: unknown, method?: string) =>
  call(path, { token: owner.accessToken, tenant: owner.tenant.id, body, method });

/** Runs the worker's Cron Trigger handler as the runtime would, at `at`. */
async function runCron(at: Date) {
  const ctx = createExecutionContext();
  worker.scheduled(
    createScheduledController({ scheduledTime: at.getTime(), cron: "* * * * *" }),
    env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
}

describe("POST /subscriptions", () => {
  it("subscribes with snapshots of every entitlement and a period in UTC", async () => {
    const owner = await register();
    const before = Date.now();
    const subscription = await subscribe(owner, built.plan.id, built.monthly.id);
    expect(subscription).toMatchObject({
      tenantId: owner.tenant.id,
      status: "ACTIVE",
      trialEndsAt: null,
      cancelAtPeriodEnd: false,
      plan: { id: built.plan.id, slug: built.plan.slug },
      price: { id: built.monthly.id, interval: "MONTHLY", amount: 2900, currency: "usd" },
    });
    const start = Date.parse(subscription.currentPeriodStart);
    expect(start).toBeGreaterThanOrEqual(before - 1000);
    const expectedEnd = new Date(start);
    expectedEnd.setUTCMonth(expectedEnd.getUTCMonth() + 1);
    if (expectedEnd.getUTCDate() !== new Date(start).getUTCDate()) expectedEnd.setUTCDate(0);
    expect(subscription.currentPeriodEnd).toBe(expectedEnd.toISOString());
    expect(subscription.billingAnchor).toBe(Math.min(new Date(start).getUTCDate(), 28));
    expect(
      subscription.entitlementSnapshots.map(
        (s: { featureLookupKey: string }) => s.featureLookupKey,
      ),
    ).toEqual(Object.values(built.keys).sort());
    expect(subscription.entitlementSnapshots).toContainEqual({
      featureLookupKey: built.keys.hard,
      featureType: "QUOTA",
      value: null,
      limit: 50,
      limitBehavior: "HARD",
      overagePrice: null,
      includedAmount: null,
      resetPeriod: "MONTHLY",
      pricing: null,
      overagePriceDecimal: null,
      dimensions: null,
      meter: { aggregation: "SUM", property: null, filters: {}, groupBy: [] },
    });
  });

  it("needs an ACTIVE plan and an active price of that plan", async () => {
    const owner = await register();
    const missing = crypto.randomUUID();
    expectError(
      await asOwner(owner, "/api/v1/subscriptions", { planId: missing, priceId: built.monthly.id }),
      404,
      `Plan with ID "${missing}" not found`,
    );
    const other = await createPlan(admin);
    const otherPrice = await createPrice(admin, other.id);
    expectError(
      await asOwner(owner, "/api/v1/subscriptions", {
        planId: built.plan.id,
        priceId: otherPrice.id,
      }),
      404,
      "Price not found, does not belong to this plan, or is inactive",
    );
    await call(`/api/v1/plans/${other.id}/prices/${otherPrice.id}`, {
      method: "PATCH",
      token: admin.accessToken,
    });
    expectError(
      await asOwner(owner, "/api/v1/subscriptions", { planId: other.id, priceId: otherPrice.id }),
      404,
    );
    const archived = await createPlan(admin);
    const archivedPrice = await createPrice(admin, archived.id);
    await call(`/api/v1/plans/${archived.id}`, {
      method: "PATCH",
      token: admin.accessToken,
      body: { status: "ARCHIVED" },
    });
    expectError(
      await asOwner(owner, "/api/v1/subscriptions", {
        planId: archived.id,
        priceId: archivedPrice.id,
      }),
      400,
      `Plan "${archived.slug}" is not active - cannot subscribe to archived plans`,
    );
    expectError(
      await asOwner(owner, "/api/v1/subscriptions", {
        planId: built.plan.id,
        priceId: built.monthly.id,
        trialDays: 0,
      }),
      400,
    );
  });

  it("is for OWNER and ADMIN; other members may read", async () => {
    const owner = await register();
    const developer = await addMember(owner, "DEVELOPER");
    const admin2 = await addMember(owner, "ADMIN");
    const body = { planId: built.plan.id, priceId: built.monthly.id };
    expectError(
      await call("/api/v1/subscriptions", {
        token: developer.accessToken,
        tenant: owner.tenant.id,
        body,
      }),
      403,
      "This action requires one of these roles: OWNER, ADMIN",
    );
    expect(
      (
        await call("/api/v1/subscriptions", {
          token: admin2.accessToken,
          tenant: owner.tenant.id,
          body,
        })
      ).status,
    ).toBe(201);
    const read = await call("/api/v1/subscriptions/active", {
      token: developer.accessToken,
      tenant: owner.tenant.id,
    });
    expect(read.status).toBe(200);
    // Another tenant's members see nothing of it.
    const stranger = await register();
    expectError(
      await call("/api/v1/subscriptions/active", {
        token: stranger.accessToken,
        tenant: owner.tenant.id,
      }),
      403,
    );
  });

  it("changes plan: the old subscription is CANCELLED and kept, the new one gets fresh snapshots", async () => {
    const owner = await register();
    const first = await subscribe(owner, built.plan.id, built.monthly.id);
    const bigger = await buildPlan(admin, { hard: 500 });
    const second = await subscribe(owner, bigger.plan.id, bigger.annual.id);
    expect(second.price.interval).toBe("ANNUALLY");
    const history = await asOwner(owner, "/api/v1/subscriptions");
    expect(history.body.meta).toMatchObject({ total: 2, page: 1, limit: 20, totalPages: 1 });
    expect(history.body.data.map((s: { id: string; status: string }) => [s.id, s.status])).toEqual([
      [second.id, "ACTIVE"],
      [first.id, "CANCELLED"],
    ]);
    const old = history.body.data[1];
    expect(old.cancelledAt).not.toBeNull();
    expect(
      old.entitlementSnapshots.find(
        (s: { featureLookupKey: string }) => s.featureLookupKey === built.keys.hard,
      ).limit,
    ).toBe(50);
    expect((await asOwner(owner, "/api/v1/subscriptions/active")).body.id).toBe(second.id);
  });

  it("leaves exactly one current subscription when subscribes race", async () => {
    const owner = await register();
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        asOwner(owner, "/api/v1/subscriptions", {
          planId: built.plan.id,
          priceId: built.monthly.id,
        }),
      ),
    );
    for (const result of results) expect([201, 409]).toContain(result.status);
    const current = await db()
      .prepare(
        "SELECT count(*) AS n FROM subscriptions WHERE tenant_id = ? AND status IN ('ACTIVE','TRIALING','PAST_DUE','PAUSED')",
      )
      .bind(owner.tenant.id)
      .first<{ n: number }>();
    expect(current?.n).toBe(1);
  });

  it("is guarded by the database: a second current subscription cannot be inserted", async () => {
    const owner = await register();
    const subscription = await subscribe(owner, built.plan.id, built.monthly.id);
    const now = new Date().toISOString();
    await expect(
      db()
        .prepare(
          `INSERT INTO subscriptions (id, tenant_id, plan_id, price_id, status, started_at, current_period_start, current_period_end, billing_anchor)
           VALUES (?, ?, ?, ?, 'PAUSED', ?, ?, ?, 1)`,
        )
        .bind(crypto.randomUUID(), owner.tenant.id, built.plan.id, built.monthly.id, now, now, now)
        .run(),
    ).rejects.toThrow(/UNIQUE constraint failed: subscriptions.tenant_id/);
    // A CANCELLED one can always be added: only current statuses are unique.
    await db()
      .prepare(
        `INSERT INTO subscriptions (id, tenant_id, plan_id, price_id, status, started_at, current_period_start, current_period_end, billing_anchor)
         VALUES (?, ?, ?, ?, 'CANCELLED', ?, ?, ?, 1)`,
      )
      .bind(crypto.randomUUID(), owner.tenant.id, built.plan.id, built.monthly.id, now, now, now)
      .run();
    expect((await asOwner(owner, "/api/v1/subscriptions/active")).body.id).toBe(subscription.id);
  });
});

describe("trials", () => {
  /** A plan like `built` whose monthly price carries a trial (a fresh plan, so no other test gets one). */
  async function trialPlan(days = 14) {
    const plan = await buildPlan(admin);
    const patched = await call(`/api/v1/plans/${plan.plan.id}/prices/${plan.monthly.id}`, {
      method: "PATCH",
      token: admin.accessToken,
      body: { trialDays: days },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ isActive: true, trialDays: days });
    return plan;
  }

  it("starts TRIALING from the price's trialDays; the first billable period starts when the trial ends; the cron makes it ACTIVE", async () => {
    const owner = await register();
    const withTrial = await trialPlan(14);
    const subscription = await subscribe(owner, withTrial.plan.id, withTrial.monthly.id);
    const started = Date.parse(subscription.startedAt);
    expect(subscription.status).toBe("TRIALING");
    expect(Date.parse(subscription.trialEndsAt) - started).toBe(14 * 86_400_000);
    expect(subscription.currentPeriodStart).toBe(subscription.startedAt);
    expect(subscription.currentPeriodEnd).toBe(subscription.trialEndsAt);
    expect(subscription.billingAnchor).toBe(
      Math.min(new Date(subscription.trialEndsAt).getUTCDate(), 28),
    );

    // Entitled during the trial.
    const key = await createApiKey(owner);
    expect((await entitlementsFor(key).check(withTrial.keys.flag)).body.allowed).toBe(true);

    await runCron(new Date(started + 13 * 86_400_000));
    expect((await asOwner(owner, "/api/v1/subscriptions/active")).body.status).toBe("TRIALING");

    await runCron(new Date(Date.parse(subscription.trialEndsAt) + 60_000));
    const active = (await asOwner(owner, "/api/v1/subscriptions/active")).body;
    expect(active.status).toBe("ACTIVE");
    expect(active.currentPeriodStart).toBe(subscription.trialEndsAt);
    const end = new Date(subscription.trialEndsAt);
    const expectedEnd = new Date(end);
    expectedEnd.setUTCMonth(end.getUTCMonth() + 1);
    if (expectedEnd.getUTCDate() !== end.getUTCDate()) expectedEnd.setUTCDate(0);
    expect(active.currentPeriodEnd).toBe(expectedEnd.toISOString());
    expect((await entitlementsFor(key).check(withTrial.keys.flag)).body.allowed).toBe(true);
  });

  it("gives a tenant one trial in its lifetime; a plan change never starts one; the tenant cannot ask for one", async () => {
    const withTrial = await trialPlan(30);
    const other = await trialPlan(7);
    const owner = await register();
    // The tenant does not choose trials.
    expectError(
      await asOwner(owner, "/api/v1/subscriptions", {
        planId: withTrial.plan.id,
        priceId: withTrial.monthly.id,
        trialDays: 90,
      }),
      400,
      (message) => expect(message).toContain("property trialDays should not exist"),
    );
    const first = await subscribe(owner, withTrial.plan.id, withTrial.monthly.id);
    expect(first.status).toBe("TRIALING");
    // Subscribing again to the same price is a plan change: no fresh trial, no moved trialEndsAt.
    const again = await subscribe(owner, withTrial.plan.id, withTrial.monthly.id);
    expect(again).toMatchObject({ status: "ACTIVE", trialEndsAt: null });
    // A plan change to another price with a trial: none either.
    const changed = await subscribe(owner, other.plan.id, other.monthly.id);
    expect(changed).toMatchObject({ status: "ACTIVE", trialEndsAt: null });
    // Cancelled and subscribed afresh later: the trial was used.
    await asOwner(owner, `/api/v1/subscriptions/${changed.id}/cancel`, {});
    const fresh = await subscribe(owner, other.plan.id, other.monthly.id);
    expect(fresh).toMatchObject({ status: "ACTIVE", trialEndsAt: null });
    // Another tenant still gets its trial; a price without one gives none.
    const newcomer = await register();
    expect((await subscribe(newcomer, other.plan.id, other.monthly.id)).status).toBe("TRIALING");
    const plain = await register();
    expect((await subscribe(plain, built.plan.id, built.monthly.id)).trialEndsAt).toBeNull();
  });

  it("two concurrent first subscribes start at most one trial", async () => {
    const withTrial = await trialPlan(14);
    const owner = await register();
    const results = await Promise.all(
      [1, 2, 3].map(() =>
        asOwner(owner, "/api/v1/subscriptions", {
          planId: withTrial.plan.id,
          priceId: withTrial.monthly.id,
        }),
      ),
    );
    const trials = await db()
      .prepare(
        "SELECT count(*) AS n FROM subscriptions WHERE tenant_id = ? AND trial_ends_at IS NOT NULL",
      )
      .bind(owner.tenant.id)
      .first<{ n: number }>();
    expect(trials?.n).toBe(1);
    expect(results.some((result) => result.status === 201)).toBe(true);
    for (const result of results) expect([201, 409]).toContain(result.status);
  });
});

describe("cancel, pause, resume", () => {
  it("cancels immediately; a second cancel is a 409; entitlements end at once", async () => {
    const owner = await register();
    const key = await createApiKey(owner);
    const subscription = await subscribe(owner, built.plan.id, built.monthly.id);
    const cancelled = await asOwner(owner, `/api/v1/subscriptions/${subscription.id}/cancel`, {});
    expect(cancelled.status).toBe(201);
    expect(cancelled.body).toMatchObject({ status: "CANCELLED", cancelAtPeriodEnd: false });
    expect(cancelled.body.cancelledAt).not.toBeNull();
    expect(cancelled.body.endedAt).not.toBeNull();
    expectError(
      await asOwner(owner, `/api/v1/subscriptions/${subscription.id}/cancel`, {}),
      409,
      "Subscription is already cancelled",
    );
    expect((await entitlementsFor(key).check(built.keys.flag)).body).toMatchObject({
      allowed: false,
      reason: "No active subscription",
    });
    expectError(
      await asOwner(owner, "/api/v1/subscriptions/active"),
      404,
      `No active subscription found for tenant "${owner.tenant.id}"`,
    );
  });

  it("cancels at period end: stays current until then, the cron ends it, a second cancel is a 409", async () => {
    const owner = await register();
    const subscription = await subscribe(owner, built.plan.id, built.monthly.id);
    const scheduled = await asOwner(owner, `/api/v1/subscriptions/${subscription.id}/cancel`, {
      atPeriodEnd: true,
    });
    expect(scheduled.status).toBe(201);
    expect(scheduled.body).toMatchObject({
      status: "ACTIVE",
      cancelAtPeriodEnd: true,
      endedAt: null,
    });
    expectError(
      await asOwner(owner, `/api/v1/subscriptions/${subscription.id}/cancel`, {}),
      409,
      /already set to cancel at the end of its period/,
    );
    await runCron(new Date(Date.parse(subscription.currentPeriodEnd) + 60_000));
    const after = await asOwner(owner, "/api/v1/subscriptions");
    expect(after.body.data[0]).toMatchObject({
      status: "CANCELLED",
      endedAt: subscription.currentPeriodEnd,
    });
  });

  it("the Cron Trigger logs one line per run with what it did", async () => {
    const owner = await register();
    const subscription = await subscribe(owner, built.plan.id, built.monthly.id);
    const scheduled = await asOwner(owner, `/api/v1/subscriptions/${subscription.id}/cancel`, {
      atPeriodEnd: true,
    });
    expect(scheduled.status).toBe(201);
    const at = new Date(Date.parse(subscription.currentPeriodEnd) + 60_000);
    const logged = vi.spyOn(console, "log");
    try {
      await runCron(at);
      const runs = logged.mock.calls
        .map(([line]) => (typeof line === "string" && line.startsWith("{") ? JSON.parse(line) : {}))
        .filter((record) => record.msg === "scheduled run");
      expect(runs).toHaveLength(1);
      // Other tests' subscriptions may end by then too: at least this one's period.
      expect(runs[0]).toMatchObject({
        level: "info",
        cron: "* * * * *",
        scheduledTime: at.toISOString(),
        failedTasks: [],
      });
      expect(runs[0].periodsClosed).toBeGreaterThanOrEqual(1);
      expect(runs[0].subscriptionsEnded).toBeGreaterThanOrEqual(1);
      expect(runs[0].paymentsAttempted).toBeGreaterThanOrEqual(1);
      expect(runs[0].tenantEventsSent).toBeGreaterThanOrEqual(1);
    } finally {
      logged.mockRestore();
    }
  });

  it("accepts cancel without a body, and 404s for another tenant's subscription", async () => {
    const owner = await register();
    const subscription = await subscribe(owner, built.plan.id, built.monthly.id);
    const stranger = await register();
    expectError(
      await asOwner(stranger, `/api/v1/subscriptions/${subscription.id}/cancel`, {}),
      404,
      "Subscription not found or does not belong to this tenant",
    );
    const cancelled = await call(`/api/v1/subscriptions/${subscription.id}/cancel`, {
      method: "POST",
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(cancelled.status).toBe(201);
  });

  it("pauses (entitlements withheld) and resumes", async () => {
    const owner = await register();
    const key = await createApiKey(owner);
    const subscription = await subscribe(owner, built.plan.id, built.monthly.id);
    const paused = await asOwner(owner, `/api/v1/subscriptions/${subscription.id}/pause`, {});
    expect(paused.status).toBe(201);
    expect(paused.body.status).toBe("PAUSED");
    expectError(
      await asOwner(owner, `/api/v1/subscriptions/${subscription.id}/pause`, {}),
      409,
      "Subscription is already paused",
    );
    expect((await entitlementsFor(key).check(built.keys.hard)).body).toMatchObject({
      allowed: false,
      reason: "Subscription is paused",
    });
    expectError(await entitlementsFor(key).consume(built.keys.hard), 403, "Subscription is paused");
    const resumed = await asOwner(owner, `/api/v1/subscriptions/${subscription.id}/resume`, {});
    expect(resumed.body.status).toBe("ACTIVE");
    expectError(
      await asOwner(owner, `/api/v1/subscriptions/${subscription.id}/resume`, {}),
      409,
      "Subscription is not paused",
    );
    expect((await entitlementsFor(key).consume(built.keys.hard)).status).toBe(200);
  });
});

describe("period close and tenant cancellation", () => {
  it("moves an ACTIVE subscription whose period ended to the next period, anchored on its start", async () => {
    const owner = await register();
    const subscription = await subscribe(owner, built.plan.id, built.annual.id);
    const end = Date.parse(subscription.currentPeriodEnd);
    await runCron(new Date(end + 86_400_000));
    const rolled = (await asOwner(owner, "/api/v1/subscriptions/active")).body;
    expect(rolled.currentPeriodStart).toBe(subscription.currentPeriodEnd);
    const start = new Date(subscription.startedAt);
    const expected = new Date(start);
    expected.setUTCFullYear(start.getUTCFullYear() + 2);
    if (expected.getUTCDate() !== start.getUTCDate()) expected.setUTCDate(0);
    expect(rolled.currentPeriodEnd).toBe(expected.toISOString());
    expect(rolled.status).toBe("ACTIVE");
    // The cron is unscoped here: it closes a year of every tenant of this file.
  }, 120_000);

  it("ends the current subscription in the same batch that cancels the tenant", async () => {
    const owner = await register();
    const subscription = await subscribe(owner, built.plan.id, built.monthly.id);
    const cancelled = await call(`/api/v1/tenants/${owner.tenant.id}`, {
      method: "DELETE",
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    const row = await db()
      .prepare("SELECT status, ended_at FROM subscriptions WHERE id = ?")
      .bind(subscription.id)
      .first<{ status: string; ended_at: string | null }>();
    expect(row?.status).toBe("CANCELLED");
    expect(row?.ended_at).not.toBeNull();
    const check = await call(`/api/v1/entitlements/${built.keys.flag}/check`, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(check.body).toMatchObject({ allowed: false, reason: "Tenant is cancelled" });
    expectError(
      await call(`/api/v1/entitlements/${built.keys.hard}/consume`, {
        token: owner.accessToken,
        tenant: owner.tenant.id,
        body: { amount: 1 },
      }),
      403,
    );
  });
});

describe("snapshots", () => {
  it("do not change when the plan is edited afterwards", async () => {
    const plan = await buildPlan(admin, { hard: 3 });
    const owner = await register();
    const key = await createApiKey(owner);
    await subscribe(owner, plan.plan.id, plan.monthly.id);
    const edit = await call(
      `/api/v1/plans/${plan.plan.id}/entitlements/${plan.entitlements.hard}`,
      {
        method: "PATCH",
        token: admin.accessToken,
        body: { limit: 1000 },
      },
    );
    expect(edit.body.limit).toBe(1000);
    await call(`/api/v1/plans/${plan.plan.id}/entitlements/${plan.entitlements.flag}`, {
      method: "DELETE",
      token: admin.accessToken,
    });
    const active = (await asOwner(owner, "/api/v1/subscriptions/active")).body;
    expect(
      active.entitlementSnapshots.find(
        (s: { featureLookupKey: string }) => s.featureLookupKey === plan.keys.hard,
      ).limit,
    ).toBe(3);
    expect((await entitlementsFor(key).check(plan.keys.hard)).body.limit).toBe(3);
    expect((await entitlementsFor(key).check(plan.keys.flag)).body.allowed).toBe(true);
    // A new subscriber gets the plan as it is now.
    const newcomer = await register();
    const fresh = await subscribe(newcomer, plan.plan.id, plan.monthly.id);
    expect(
      fresh.entitlementSnapshots.find(
        (s: { featureLookupKey: string }) => s.featureLookupKey === plan.keys.hard,
      ).limit,
    ).toBe(1000);
    expect(
      fresh.entitlementSnapshots.map((s: { featureLookupKey: string }) => s.featureLookupKey),
    ).not.toContain(plan.keys.flag);
  });

  it("have no update path in the API", async () => {
    const owner = await register();
    const subscription = await subscribe(owner, built.plan.id, built.monthly.id);
    const attempt = await call(`/api/v1/subscriptions/${subscription.id}`, {
      method: "PATCH",
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { entitlementSnapshots: [] },
    });
    expect([404, 405]).toContain(attempt.status);
    // And the database keeps one snapshot per (subscription, feature lookup key).
    await expect(
      db()
        .prepare(
          "INSERT INTO entitlement_snapshots (id, subscription_id, feature_lookup_key, feature_type, value) VALUES (?, ?, ?, 'BOOLEAN', 0)",
        )
        .bind(crypto.randomUUID(), subscription.id, built.keys.flag)
        .run(),
    ).rejects.toThrow(/UNIQUE constraint failed: entitlement_snapshots\.subscription_id/);
  });
});
