import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import {
  createFeature,
  createPlan,
  createPrice,
  grant,
  platformAdmin,
  uniqueKey,
  uniquePlanSlug,
} from "./catalog-helpers.ts";
import { type Account, call, expectError, register } from "./helpers.ts";

let admin: Account;
let owner: Account;
beforeAll(async () => {
  admin = await platformAdmin();
  owner = await register();
});

const asAdmin = (path: string, body?: unknown, method?: string) =>
  call(path, { token: admin.accessToken, body, method });

describe("catalog writes are for platform administrators only", () => {
  it("refuses anonymous callers (401) and a tenant OWNER who is not a platform admin (403)", async () => {
    const body = { name: "Cheap", slug: uniquePlanSlug() };
    expectError(await call("/api/v1/plans", { body }), 401);
    expectError(
      await call("/api/v1/plans", { token: owner.accessToken, tenant: owner.tenant.id, body }),
      403,
      "Platform admin access required",
    );
    const plan = await createPlan(admin);
    const writes: [string, string, unknown][] = [
      ["PATCH", `/api/v1/plans/${plan.id}`, { name: "Hijacked" }],
      [
        "POST",
        `/api/v1/plans/${plan.id}/prices`,
        { interval: "MONTHLY", amount: 1, currency: "usd" },
      ],
      ["POST", "/api/v1/features", { name: "X", lookupKey: uniqueKey("x"), type: "BOOLEAN" }],
      [
        "POST",
        `/api/v1/plans/${plan.id}/entitlements`,
        { featureId: crypto.randomUUID(), value: true },
      ],
    ];
    for (const [method, path, requestBody] of writes) {
      expectError(
        await call(path, { method, token: owner.accessToken, body: requestBody }),
        403,
        "Platform admin access required",
      );
    }
    expect((await call(`/api/v1/plans/${plan.id}`)).body.name).toBe("Plan");
  });
});

describe("plans", () => {
  it("creates a plan with defaults and reads it by id and by slug, with its active prices", async () => {
    const slug = uniquePlanSlug("pro");
    const created = await asAdmin("/api/v1/plans", { name: "Pro", slug, description: "For teams" });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: "Pro",
      slug,
      description: "For teams",
      status: "ACTIVE",
      isPublic: true,
      displayOrder: 0,
      metadata: {},
      prices: [],
    });
    await createPrice(admin, created.body.id, { interval: "ANNUALLY", amount: 29000 });
    await createPrice(admin, created.body.id, { interval: "MONTHLY", amount: 2900 });
    const byId = await call(`/api/v1/plans/${created.body.id}`);
    expect(byId.body.prices.map((p: { interval: string }) => p.interval)).toEqual([
      "MONTHLY",
      "ANNUALLY",
    ]);
    const bySlug = await call(`/api/v1/plans/slug/${slug}`);
    expect(bySlug.body).toEqual(byId.body);
  });

  it("answers 404 for unknown plans and 400 for malformed ids", async () => {
    const id = crypto.randomUUID();
    expectError(await call(`/api/v1/plans/${id}`), 404, `Plan with ID "${id}" not found`);
    expectError(
      await call("/api/v1/plans/slug/no-such-plan-xyz"),
      404,
      'Plan with slug "no-such-plan-xyz" not found',
    );
    expectError(await call("/api/v1/plans/not-a-uuid"), 400);
  });

  it("refuses a taken slug (409) and invalid fields (400)", async () => {
    const slug = uniquePlanSlug();
    await createPlan(admin, { slug });
    expectError(
      await asAdmin("/api/v1/plans", { name: "Again", slug }),
      409,
      `Plan with slug "${slug}" already exists`,
    );
    expectError(
      await asAdmin("/api/v1/plans", { name: "Bad", slug: "Not Valid" }),
      400,
      (message) =>
        expect(message).toContain("slug must be lowercase alphanumeric with hyphens only"),
    );
    expectError(
      await asAdmin("/api/v1/plans", { name: "", slug: uniquePlanSlug(), displayOrder: -1 }),
      400,
      (message) =>
        expect(message).toEqual(
          expect.arrayContaining(["name should not be empty", "displayOrder must not be negative"]),
        ),
    );
    expectError(
      await asAdmin("/api/v1/plans", { name: "X", slug: uniquePlanSlug(), extra: 1 }),
      400,
      (message) => expect(message).toContain("property extra should not exist"),
    );
  });

  it("keeps the slug immutable and archives through status", async () => {
    const plan = await createPlan(admin, { displayOrder: 3 });
    expectError(
      await asAdmin(`/api/v1/plans/${plan.id}`, { slug: "renamed" }, "PATCH"),
      400,
      (message) => expect(message).toContain("slug is immutable and cannot be changed"),
    );
    const archived = await asAdmin(
      `/api/v1/plans/${plan.id}`,
      { status: "ARCHIVED", name: "Old" },
      "PATCH",
    );
    expect(archived.status).toBe(200);
    expect(archived.body).toMatchObject({ status: "ARCHIVED", name: "Old", slug: plan.slug });
    expectError(await asAdmin(`/api/v1/plans/${crypto.randomUUID()}`, { name: "X" }, "PATCH"), 404);
  });

  it("lists a catalog of more plans than D1 takes bound parameters in one statement", async () => {
    const stamp = new Date().toISOString();
    const bulk = Array.from({ length: 120 }, (_, index) => ({
      id: crypto.randomUUID(),
      name: `Bulk plan ${index}`,
      slug: `bulk-${crypto.randomUUID()}`,
    }));
    await env.DB.batch(
      bulk.map((plan) =>
        env.DB.prepare(
          "INSERT INTO plans (id, name, slug, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
        ).bind(plan.id, plan.name, plan.slug, stamp, stamp),
      ),
    );
    const [price] = bulk;
    await createPrice(admin, price?.id as string, { amount: 1234 });

    const listed = await call("/api/v1/plans?includeArchived=true", { token: admin.accessToken });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    const byId = new Map(
      listed.body.data.map((plan: { id: string; prices: unknown[] }) => [plan.id, plan]),
    );
    for (const plan of bulk) expect(byId.has(plan.id)).toBe(true);
    expect(byId.get(price?.id)).toMatchObject({ prices: [{ amount: 1234 }] });
  });

  it("lists ACTIVE plans by displayOrder; includeArchived adds ARCHIVED; unlisted plans only for admins", async () => {
    const later = await createPlan(admin, { displayOrder: 900_001 });
    const earlier = await createPlan(admin, { displayOrder: 900_000 });
    const archived = await createPlan(admin, { displayOrder: 900_002 });
    await asAdmin(`/api/v1/plans/${archived.id}`, { status: "ARCHIVED" }, "PATCH");
    const unlisted = await createPlan(admin, { displayOrder: 900_003, isPublic: false });
    const ids = (body: { data: { id: string }[] }) => body.data.map((plan) => plan.id);

    const publicList = await call("/api/v1/plans");
    expect(publicList.status).toBe(200);
    const orders = publicList.body.data.map((plan: { displayOrder: number }) => plan.displayOrder);
    expect(orders).toEqual([...orders].sort((a: number, b: number) => a - b));
    expect(ids(publicList.body)).toEqual(expect.arrayContaining([earlier.id, later.id]));
    expect(ids(publicList.body).indexOf(earlier.id)).toBeLessThan(
      ids(publicList.body).indexOf(later.id),
    );
    expect(ids(publicList.body)).not.toContain(archived.id);
    expect(ids(publicList.body)).not.toContain(unlisted.id);

    expect(ids((await call("/api/v1/plans?includeArchived=true")).body)).toContain(archived.id);
    expect(ids((await call("/api/v1/plans", { token: admin.accessToken })).body)).toContain(
      unlisted.id,
    );
    expectError(await call("/api/v1/plans?includeArchived=yes"), 400);
    // A server presenting its API key browses the public catalog like anyone.
    const withKey = await call("/api/v1/plans", { token: `mk_${"a".repeat(43)}` });
    expect(withKey.status).toBe(200);
    expect(ids(withKey.body)).not.toContain(unlisted.id);
    expectError(await call("/api/v1/plans", { token: "not-a-valid-jwt" }), 401);
    // Unlisted is not secret: the plan is reachable by id for whoever has the link.
    expect((await call(`/api/v1/plans/${unlisted.id}`)).status).toBe(200);
  });
});

describe("prices", () => {
  it("stores the currency lower-case and refuses a second active price for the same interval and currency", async () => {
    const plan = await createPlan(admin);
    const first = await asAdmin(`/api/v1/plans/${plan.id}/prices`, {
      interval: "MONTHLY",
      amount: 1500,
      currency: "EUR",
    });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      planId: plan.id,
      interval: "MONTHLY",
      amount: 1500,
      currency: "eur",
      isActive: true,
    });
    expectError(
      await asAdmin(`/api/v1/plans/${plan.id}/prices`, {
        interval: "MONTHLY",
        amount: 1700,
        currency: "eur",
      }),
      409,
      `Plan "${plan.slug}" already has an active MONTHLY price in eur`,
    );
    expect(
      (
        await asAdmin(`/api/v1/plans/${plan.id}/prices`, {
          interval: "MONTHLY",
          amount: 1700,
          currency: "usd",
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await asAdmin(`/api/v1/plans/${plan.id}/prices`, {
          interval: "ANNUALLY",
          amount: 15000,
          currency: "eur",
        })
      ).status,
    ).toBe(201);
  });

  it("validates interval, amount (whole cents) and currency", async () => {
    const plan = await createPlan(admin);
    const bad = await asAdmin(`/api/v1/plans/${plan.id}/prices`, {
      interval: "WEEKLY",
      amount: 9.99,
      currency: "dollars",
    });
    expectError(bad, 400, (message) =>
      expect(message).toEqual(
        expect.arrayContaining([
          "interval must be MONTHLY or ANNUALLY",
          "amount must be a whole number of cents (minor units)",
          "currency must be a 3-letter ISO 4217 code",
        ]),
      ),
    );
    expectError(
      await asAdmin(`/api/v1/plans/${crypto.randomUUID()}/prices`, {
        interval: "MONTHLY",
        amount: 1,
        currency: "usd",
      }),
      404,
    );
  });

  it("lists prices and deactivates one for good, which frees its slot for a replacement", async () => {
    const plan = await createPlan(admin);
    const price = await createPrice(admin, plan.id, { amount: 1000 });
    const deactivated = await asAdmin(
      `/api/v1/plans/${plan.id}/prices/${price.id}`,
      undefined,
      "PATCH",
    );
    expect(deactivated.status).toBe(200);
    expect(deactivated.body.isActive).toBe(false);
    expect((await call(`/api/v1/plans/${plan.id}/prices`)).body.data).toEqual([]);
    expect(
      (await call(`/api/v1/plans/${plan.id}/prices?includeInactive=true`)).body.data,
    ).toHaveLength(1);
    expect((await call(`/api/v1/plans/${plan.id}`)).body.prices).toEqual([]);
    const replacement = await createPrice(admin, plan.id, { amount: 1200 });
    expect(replacement.isActive).toBe(true);
    // The price must belong to the plan in the path.
    const other = await createPlan(admin);
    expectError(
      await asAdmin(`/api/v1/plans/${other.id}/prices/${replacement.id}`, undefined, "PATCH"),
      404,
      "Price not found or does not belong to this plan",
    );
  });
});

describe("features", () => {
  it("creates features of every type, unique by lookup key, readable by id and lookup key", async () => {
    const lookupKey = uniqueKey("api_calls");
    const created = await asAdmin("/api/v1/features", {
      name: "API calls",
      lookupKey,
      type: "METERED",
      unit: "call",
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      lookupKey,
      type: "METERED",
      unit: "call",
      status: "ACTIVE",
    });
    expectError(
      await asAdmin("/api/v1/features", { name: "Again", lookupKey, type: "QUOTA" }),
      409,
      `Feature with lookup key "${lookupKey}" already exists`,
    );
    expect((await call(`/api/v1/features/${created.body.id}`)).body.id).toBe(created.body.id);
    expect((await call(`/api/v1/features/lookup/${lookupKey}`)).body.id).toBe(created.body.id);
    expectError(await call(`/api/v1/features/lookup/${uniqueKey("missing")}`), 404);
  });

  it("has no unit for BOOLEAN features and keeps lookupKey and type immutable", async () => {
    expectError(
      await asAdmin("/api/v1/features", {
        name: "SSO",
        lookupKey: uniqueKey("sso"),
        type: "BOOLEAN",
        unit: "seat",
      }),
      400,
      'BOOLEAN features have no "unit": leave it out or send null',
    );
    const flag = await createFeature(admin, "BOOLEAN");
    expect(flag.unit).toBeNull();
    expectError(await asAdmin(`/api/v1/features/${flag.id}`, { unit: "seat" }, "PATCH"), 400);
    expectError(
      await asAdmin(`/api/v1/features/${flag.id}`, { lookupKey: "other", type: "QUOTA" }, "PATCH"),
      400,
      (message) =>
        expect(message).toEqual(
          expect.arrayContaining([
            "lookupKey is immutable and cannot be changed",
            "type is immutable and cannot be changed",
          ]),
        ),
    );
    expectError(
      await asAdmin("/api/v1/features", { name: "X", lookupKey: "Bad-Key", type: "QUOTA" }),
      400,
      (message) =>
        expect(message).toContain("lookupKey must be lowercase alphanumeric with underscores only"),
    );
  });

  it("archives features, which hides them from the default list", async () => {
    const feature = await createFeature(admin, "QUOTA");
    const archived = await asAdmin(
      `/api/v1/features/${feature.id}`,
      { status: "ARCHIVED" },
      "PATCH",
    );
    expect(archived.body.status).toBe("ARCHIVED");
    const keys = (body: { data: { lookupKey: string }[] }) => body.data.map((f) => f.lookupKey);
    expect(keys((await call("/api/v1/features")).body)).not.toContain(feature.lookupKey);
    expect(keys((await call("/api/v1/features?includeArchived=true")).body)).toContain(
      feature.lookupKey,
    );
  });
});

describe("plan entitlements", () => {
  it("enforces the type rules with clear 400s", async () => {
    const plan = await createPlan(admin);
    const flag = await createFeature(admin, "BOOLEAN");
    const quota = await createFeature(admin, "QUOTA");
    const metered = await createFeature(admin, "METERED");
    const post = (featureId: string, terms: object) =>
      asAdmin(`/api/v1/plans/${plan.id}/entitlements`, { featureId, ...terms });
    expectError(
      await post(flag.id, { value: true, limit: 5 }),
      400,
      /BOOLEAN features only accept "value"/,
    );
    expectError(await post(flag.id, {}), 400, 'BOOLEAN features require "value" (true or false)');
    expectError(
      await post(quota.id, { limit: 5 }),
      400,
      'QUOTA features require "limit" and "resetPeriod"',
    );
    expectError(
      await post(quota.id, { limit: 5, resetPeriod: "MONTHLY", includedAmount: 1 }),
      400,
      /QUOTA features do not accept/,
    );
    expectError(
      await post(quota.id, { limit: 5, resetPeriod: "MONTHLY", limitBehavior: "SOFT" }),
      400,
      /SOFT quotas require "overagePrice"/,
    );
    expectError(
      await post(quota.id, { limit: 5, resetPeriod: "MONTHLY", overagePrice: 10 }),
      400,
      /HARD quotas do not accept "overagePrice"/,
    );
    expectError(
      await post(metered.id, { includedAmount: 10, resetPeriod: "MONTHLY" }),
      400,
      /METERED features require "overagePrice" and "resetPeriod"/,
    );
    expectError(
      await post(metered.id, { overagePrice: 10, resetPeriod: "MONTHLY", limit: 4 }),
      400,
      /METERED features do not accept/,
    );
    expectError(
      await post(metered.id, { overagePrice: 12.5, resetPeriod: "MONTHLY" }),
      400,
      (message) =>
        expect(message).toContain(
          "overagePrice must be a whole number of micro-cents (1 cent = 100 micro-cents)",
        ),
    );
    const hard = await post(quota.id, { limit: 5, resetPeriod: "MONTHLY" });
    expect(hard.status).toBe(201);
    expect(hard.body).toMatchObject({
      planId: plan.id,
      featureId: quota.id,
      limit: 5,
      limitBehavior: "HARD",
      resetPeriod: "MONTHLY",
      overagePrice: null,
      feature: { id: quota.id, lookupKey: quota.lookupKey, type: "QUOTA", unit: "unit" },
    });
    const meter = await post(metered.id, { overagePrice: 10, resetPeriod: "MONTHLY" });
    expect(meter.body).toMatchObject({ includedAmount: 0, overagePrice: 10 });
  });

  it("refuses an unknown plan (404), an unknown or archived feature, and a duplicate (409)", async () => {
    const plan = await createPlan(admin);
    const feature = await createFeature(admin, "BOOLEAN");
    const missingPlan = crypto.randomUUID();
    expectError(
      await asAdmin(`/api/v1/plans/${missingPlan}/entitlements`, {
        featureId: feature.id,
        value: true,
      }),
      404,
      `Plan with ID "${missingPlan}" not found`,
    );
    const missingFeature = crypto.randomUUID();
    expectError(
      await asAdmin(`/api/v1/plans/${plan.id}/entitlements`, {
        featureId: missingFeature,
        value: true,
      }),
      404,
      `Feature with ID "${missingFeature}" not found`,
    );
    await grant(admin, plan.id, feature.id, { value: true });
    expectError(
      await asAdmin(`/api/v1/plans/${plan.id}/entitlements`, {
        featureId: feature.id,
        value: false,
      }),
      409,
      `Plan "${plan.slug}" already has an entitlement for feature "${feature.lookupKey}"`,
    );
    const retired = await createFeature(admin, "BOOLEAN");
    await asAdmin(`/api/v1/features/${retired.id}`, { status: "ARCHIVED" }, "PATCH");
    expectError(
      await asAdmin(`/api/v1/plans/${plan.id}/entitlements`, {
        featureId: retired.id,
        value: true,
      }),
      400,
      `Feature "${retired.lookupKey}" is archived - cannot use archived features`,
    );
  });

  it("lists, reads, updates (merged, rules re-checked) and deletes entitlements", async () => {
    const plan = await createPlan(admin);
    const quota = await createFeature(admin, "QUOTA", { name: "B quota" });
    const flag = await createFeature(admin, "BOOLEAN", { name: "A flag" });
    const entitlement = await grant(admin, plan.id, quota.id, {
      limit: 10,
      resetPeriod: "MONTHLY",
    });
    await grant(admin, plan.id, flag.id, { value: true });
    const list = await call(`/api/v1/plans/${plan.id}/entitlements`);
    expect(list.body.data.map((e: { feature: { name: string } }) => e.feature.name)).toEqual([
      "A flag",
      "B quota",
    ]);
    const path = `/api/v1/plans/${plan.id}/entitlements/${entitlement.id}`;
    expect((await call(path)).body.id).toBe(entitlement.id);

    expectError(
      await asAdmin(path, { limitBehavior: "SOFT" }, "PATCH"),
      400,
      /SOFT quotas require "overagePrice"/,
    );
    const soft = await asAdmin(
      path,
      { limitBehavior: "SOFT", overagePrice: 300, limit: 20 },
      "PATCH",
    );
    expect(soft.body).toMatchObject({
      limit: 20,
      limitBehavior: "SOFT",
      overagePrice: 300,
      resetPeriod: "MONTHLY",
    });
    expectError(
      await asAdmin(path, { limitBehavior: "HARD" }, "PATCH"),
      400,
      /HARD quotas do not accept "overagePrice"/,
    );
    expect(
      (await asAdmin(path, { limitBehavior: "HARD", overagePrice: null }, "PATCH")).body
        .overagePrice,
    ).toBeNull();
    expectError(await asAdmin(path, { featureId: flag.id }, "PATCH"), 400, (message) =>
      expect(message).toContain("featureId is immutable and cannot be changed"),
    );

    const deleted = await asAdmin(path, undefined, "DELETE");
    expect(deleted.status).toBe(200);
    expect(deleted.body.id).toBe(entitlement.id);
    expectError(await call(path), 404, "Entitlement not found or does not belong to this plan");
    expectError(await asAdmin(path, undefined, "DELETE"), 404);
  });
});
