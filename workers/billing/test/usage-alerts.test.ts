import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { onlyAuditRow } from "./audit-helpers.ts";
import { buildMoneyPlan, type MoneyPlan } from "./billing-helpers.ts";
import { createFeature, platformAdmin, subscribe } from "./catalog-helpers.ts";
import {
  type Account,
  addMember,
  type CallOptions,
  call,
  expectError,
  register,
} from "./helpers.ts";

// /api/v1/usage-alerts over HTTP, and an alert that fires when usage
// consumed over HTTP reaches it.

let admin: Account;
let plan: MoneyPlan;

beforeAll(async () => {
  admin = await platformAdmin();
  plan = await buildMoneyPlan(admin, 2900);
});

const as =
  (account: { accessToken: string }, tenantId: string) =>
  (path: string, options: CallOptions = {}) =>
    call(path, { token: account.accessToken, tenant: tenantId, ...options });

async function subscribedOwner() {
  const owner = await register();
  await subscribe(owner, plan.planId, plan.priceId);
  return owner;
}

describe("POST /api/v1/usage-alerts", () => {
  it("creates units and percent alerts, with the units they are reached at on the current plan, and an audit row", async () => {
    const owner = await subscribedOwner();
    const api = as(owner, owner.tenant.id);
    const percent = await api("/api/v1/usage-alerts", {
      body: { featureLookupKey: plan.keys.hard, threshold: { type: "percent", value: 80 } },
    });
    expect(percent.status, JSON.stringify(percent.body)).toBe(201);
    expect(percent.body).toEqual({
      id: expect.any(String),
      featureLookupKey: plan.keys.hard,
      threshold: { type: "percent", value: 80 },
      thresholdUnits: 8,
      createdAt: expect.any(String),
    });
    const units = await api("/api/v1/usage-alerts", {
      body: { featureLookupKey: plan.keys.calls, threshold: { type: "units", value: 5000 } },
    });
    expect(units.status).toBe(201);
    // 150% of the METERED included amount: an overage warning.
    const overage = await api("/api/v1/usage-alerts", {
      body: { featureLookupKey: plan.keys.calls, threshold: { type: "percent", value: 150 } },
    });
    expect(overage.body.thresholdUnits).toBe(1500);

    const audit = await onlyAuditRow(percent.body.id, "usage_alert.created");
    expect(audit).toMatchObject({
      tenant_id: owner.tenant.id,
      actor_type: "user",
      actor_id: owner.user.id,
      target_type: "usage_alert",
    });
    expect(audit.changes).toEqual({
      featureLookupKey: { after: plan.keys.hard },
      threshold: { after: { type: "percent", value: 80 } },
    });

    const list = await api("/api/v1/usage-alerts?limit=2");
    expect(list.status).toBe(200);
    expect(list.body.meta).toEqual({ total: 3, page: 1, limit: 2, totalPages: 2 });
    expect(list.body.data.map((alert: { id: string }) => alert.id)).toEqual([
      overage.body.id,
      units.body.id,
    ]);
    const filtered = await api(`/api/v1/usage-alerts?featureLookupKey=${plan.keys.hard}`);
    expect(filtered.body.data).toEqual([percent.body]);
  });

  it("answers bad input with the billing error shape and writes nothing", async () => {
    const owner = await subscribedOwner();
    const api = as(owner, owner.tenant.id);
    const post = (body: unknown) => api("/api/v1/usage-alerts", { body });
    expectError(await post({ featureLookupKey: plan.keys.hard }), 400);
    expectError(
      await post({ featureLookupKey: plan.keys.hard, threshold: { type: "ratio", value: 3 } }),
      400,
      (message) => expect(String(message)).toMatch(/threshold.type must be "units" or "percent"/),
    );
    expectError(
      await post({ featureLookupKey: plan.keys.hard, threshold: { type: "percent", value: 0 } }),
      400,
      (message) => expect(String(message)).toMatch(/from 1 to 1000 \(percent\)/),
    );
    expectError(
      await post({ featureLookupKey: plan.keys.hard, threshold: { type: "units", value: 2.5 } }),
      400,
      (message) => expect(message).toEqual(["threshold.value must be an integer"]),
    );
    expectError(
      await post({
        featureLookupKey: plan.keys.hard,
        threshold: { type: "units", value: 3 },
        extra: true,
      }),
      400,
    );
    expectError(
      await post({ featureLookupKey: "no_such_feature", threshold: { type: "units", value: 3 } }),
      422,
      'Feature with lookup key "no_such_feature" not found',
    );
    expectError(
      await post({ featureLookupKey: plan.keys.hard, threshold: { type: "percent", value: 120 } }),
      422,
      /HARD limit/,
    );
    const boolean = await createFeature(admin, "BOOLEAN");
    expectError(
      await post({ featureLookupKey: boolean.lookupKey, threshold: { type: "units", value: 1 } }),
      422,
      /BOOLEAN/,
    );
    const offPlan = await createFeature(admin, "QUOTA");
    expectError(
      await post({
        featureLookupKey: offPlan.lookupKey,
        threshold: { type: "percent", value: 50 },
      }),
      422,
      /not on it/,
    );
    // A units threshold on a counted feature that is not on the plan is fine (a later plan may have it).
    const unitsOffPlan = await post({
      featureLookupKey: offPlan.lookupKey,
      threshold: { type: "units", value: 10 },
    });
    expect(unitsOffPlan.status).toBe(201);
    expect(unitsOffPlan.body.thresholdUnits).toBeNull();

    const first = await post({
      featureLookupKey: plan.keys.hard,
      threshold: { type: "units", value: 3 },
    });
    expect(first.status).toBe(201);
    expectError(
      await post({ featureLookupKey: plan.keys.hard, threshold: { type: "units", value: 3 } }),
      409,
      /already exists/,
    );
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM usage_alerts WHERE tenant_id = ?")
      .bind(owner.tenant.id)
      .first<{ n: number }>();
    expect(rows?.n).toBe(2);
  });

  it("replays a retried POST with the same Idempotency-Key: one alert, one audit row", async () => {
    const owner = await subscribedOwner();
    const api = as(owner, owner.tenant.id);
    const options = {
      body: { featureLookupKey: plan.keys.seats, threshold: { type: "percent", value: 100 } },
      headers: { "Idempotency-Key": `alert-${crypto.randomUUID()}` },
    };
    const first = await api("/api/v1/usage-alerts", options);
    const again = await api("/api/v1/usage-alerts", options);
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const list = await api("/api/v1/usage-alerts");
    expect(list.body.meta.total).toBe(1);
    await onlyAuditRow(first.body.id, "usage_alert.created");
  });
});

describe("usage alerts: roles and tenants", () => {
  it("lets OWNER, ADMIN and BILLING write, every member read, and nobody else in", async () => {
    const owner = await subscribedOwner();
    const tenantId = owner.tenant.id;
    const developer = await addMember(owner, "DEVELOPER");
    const billing = await addMember(owner, "BILLING");
    const adminMember = await addMember(owner, "ADMIN");
    const body = (value: number) => ({
      featureLookupKey: plan.keys.calls,
      threshold: { type: "units", value },
    });
    expectError(await as(developer, tenantId)("/api/v1/usage-alerts", { body: body(1) }), 403);
    const byBilling = await as(billing, tenantId)("/api/v1/usage-alerts", { body: body(2) });
    expect(byBilling.status).toBe(201);
    const byAdmin = await as(adminMember, tenantId)("/api/v1/usage-alerts", { body: body(3) });
    expect(byAdmin.status).toBe(201);
    expect((await as(developer, tenantId)("/api/v1/usage-alerts")).body.meta.total).toBe(2);
    expectError(
      await as(developer, tenantId)(`/api/v1/usage-alerts/${byBilling.body.id}`, {
        method: "DELETE",
      }),
      403,
    );

    // Another tenant's owner sees none of it and cannot delete it.
    const stranger = await subscribedOwner();
    expectError(await as(stranger, tenantId)("/api/v1/usage-alerts"), 403);
    expect((await as(stranger, stranger.tenant.id)("/api/v1/usage-alerts")).body.data).toEqual([]);
    expectError(
      await as(stranger, stranger.tenant.id)(`/api/v1/usage-alerts/${byBilling.body.id}`, {
        method: "DELETE",
      }),
      404,
    );
    expectError(await call("/api/v1/usage-alerts", { tenant: tenantId }), 401);

    const deleted = await as(adminMember, tenantId)(`/api/v1/usage-alerts/${byBilling.body.id}`, {
      method: "DELETE",
    });
    expect(deleted.status).toBe(200);
    expect(deleted.body.id).toBe(byBilling.body.id);
    const audit = await onlyAuditRow(byBilling.body.id, "usage_alert.deleted");
    expect(audit.changes).toEqual({
      featureLookupKey: { before: plan.keys.calls },
      threshold: { before: { type: "units", value: 2 } },
    });
    expectError(
      await as(owner, tenantId)(`/api/v1/usage-alerts/${byBilling.body.id}`, { method: "DELETE" }),
      404,
    );
    expectError(
      await as(owner, tenantId)("/api/v1/usage-alerts/not-a-uuid", { method: "DELETE" }),
      400,
    );
  });
});

describe("usage alerts and HTTP consumes", () => {
  it("emits usage.threshold_reached once when consumes reach 80%, and quota.exhausted on the first refusal", async () => {
    const owner = await subscribedOwner();
    const tenantId = owner.tenant.id;
    const api = as(owner, tenantId);
    const created = await api("/api/v1/usage-alerts", {
      body: { featureLookupKey: plan.keys.hard, threshold: { type: "percent", value: 80 } },
    });
    expect(created.status).toBe(201);
    const consume = (amount: number) =>
      api(`/api/v1/entitlements/${plan.keys.hard}/consume`, { body: { amount } });
    expect((await consume(7)).status).toBe(200);
    expect((await consume(1)).status).toBe(200);
    expect((await consume(2)).status).toBe(200);
    expectError(await consume(1), 403, /^Quota exceeded/);
    expectError(await consume(1), 403, /^Quota exceeded/);

    const stub = env.ENTITLEMENT_COUNTER.get(env.ENTITLEMENT_COUNTER.idFromName(tenantId));
    const rows = await vi.waitFor(
      async () => {
        const found = await runInDurableObject(stub, (_instance, state) =>
          state.storage.sql
            .exec<{ type: string; body: string; sent_at: number | null }>(
              "SELECT type, body, sent_at FROM tenant_event_outbox ORDER BY created_at, id",
            )
            .toArray(),
        );
        if (found.some((row) => row.sent_at === null)) throw new Error("not sent yet");
        return found;
      },
      { timeout: 5000, interval: 50 },
    );
    expect(rows.map((row) => row.type)).toEqual(["usage.threshold_reached", "quota.exhausted"]);
    const [reached, exhausted] = rows.map((row) => JSON.parse(row.body));
    expect(reached).toMatchObject({
      tenantId,
      data: { alertId: created.body.id, thresholdUnits: 8, used: 8, limit: 10 },
    });
    expect(exhausted.data).toMatchObject({
      featureKey: plan.keys.hard,
      limit: 10,
      used: 10,
      requested: 1,
    });
  });
});
