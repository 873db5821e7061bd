import { beforeAll, describe, expect, it } from "vitest";
import {
  createFeature,
  createPlan,
  createPrice,
  grant,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { type Account, call, db, expectError, register } from "./helpers.ts";

// Features with meters, and entitlements priced by decimal micro-cents and
// per group of a meter's groupBy, driven through the HTTP API as a client
// would.

let admin: Account;
beforeAll(async () => {
  admin = await platformAdmin();
});

const asAdmin = (path: string, body?: unknown, method?: string) =>
  call(path, { token: admin.accessToken, body, method });

const DEFAULT = { aggregation: "SUM", property: null, filters: {}, groupBy: [] };

const messageContains = (expected: string) => (message: string | string[]) =>
  expect(Array.isArray(message) ? message : [message]).toEqual(
    expect.arrayContaining([expect.stringContaining(expected)]),
  );

/** Usage of `lookupKey` counted for a fresh subscriber, written as the counter's flush would. */
async function recordUsage(lookupKey: string, amount: number) {
  const owner = await register();
  const plan = await createPlan(admin);
  const price = await createPrice(admin, plan.id);
  const subscription = await subscribe(owner, plan.id, price.id);
  await db()
    .prepare(
      `INSERT INTO usage_aggregates (id, tenant_id, subscription_id, feature_lookup_key, period_key, period_start, period_end, amount)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(
      crypto.randomUUID(),
      owner.tenant.id,
      subscription.id,
      lookupKey,
      subscription.currentPeriodStart,
      subscription.currentPeriodStart,
      subscription.currentPeriodEnd,
      amount,
    )
    .run();
  return { owner, subscription };
}

describe("features with a meter", () => {
  it("returns the default meter for a feature given none", async () => {
    const feature = await createFeature(admin, "METERED");
    expect(feature.meter).toEqual(DEFAULT);
    const flag = await createFeature(admin, "BOOLEAN");
    expect(flag.meter).toEqual(DEFAULT);
    expect((await call(`/api/v1/features/${feature.id}`)).body.meter).toEqual(DEFAULT);
  });

  it.each([
    [{ aggregation: "SUM", property: "tokens" }],
    [{ aggregation: "COUNT" }],
    [{ aggregation: "UNIQUE_COUNT", property: "user_id" }],
    [{ aggregation: "MAX", property: "seats" }],
    [{ aggregation: "MIN", property: "seats" }],
    [{ aggregation: "AVG", property: "latency_ms" }],
    [{ aggregation: "LATEST", property: "storage_gb" }],
    [{ aggregation: "WEIGHTED_SUM", property: "storage_gb" }],
  ])("creates a feature measured by %j", async (meter) => {
    const feature = await createFeature(admin, "METERED", { meter });
    expect(feature.meter).toEqual({ ...DEFAULT, ...meter });
    const read = await call(`/api/v1/features/lookup/${feature.lookupKey}`);
    expect(read.body.meter).toEqual({ ...DEFAULT, ...meter });
  });

  it("keeps filters and groupBy, and answers them in every view", async () => {
    const meter = {
      aggregation: "SUM",
      property: "tokens",
      filters: { region: ["eu", "us"], tier: [1, 2] },
      groupBy: ["model", "direction"],
    };
    const feature = await createFeature(admin, "QUOTA", { meter });
    expect(feature.meter).toEqual(meter);
    const list = await call("/api/v1/features");
    const listed = list.body.data.find((f: { id: string }) => f.id === feature.id);
    expect(listed.meter).toEqual(meter);
  });

  it("refuses a meter that breaks the rules with a 422 naming the field", async () => {
    const post = (meter: unknown, type = "METERED") =>
      asAdmin("/api/v1/features", {
        name: "Tokens",
        lookupKey: `tokens_${crypto.randomUUID().slice(0, 8)}`,
        type,
        meter,
      });
    expectError(await post({ aggregation: "MEDIAN" }), 422, messageContains("meter.aggregation"));
    expectError(await post({ aggregation: "AVG" }), 422, "meter.property is required for AVG");
    expectError(
      await post({ aggregation: "COUNT", property: "x" }),
      422,
      "meter.property is not used by COUNT: leave it out",
    );
    expectError(
      await post({ aggregation: "SUM", groupBy: ["a", "b", "c", "d"] }),
      422,
      "meter.groupBy takes at most 3 properties",
    );
    expectError(
      await post({ aggregation: "SUM", groupBy: ["Model"] }),
      422,
      'meter.groupBy: "Model" must match [a-z0-9_]{1,64}',
    );
    expectError(
      await post({ aggregation: "SUM", filters: { region: [] } }),
      422,
      "meter.filters.region must list 1 to 100 values",
    );
    expectError(
      await post({ aggregation: "SUM", filters: { region: "eu" } }),
      422,
      messageContains("meter.filters.region"),
    );
    expectError(
      await post({ aggregation: "SUM", unknown: 1 }),
      422,
      messageContains("meter.unknown should not exist"),
    );
    expectError(
      await post({ aggregation: "SUM" }, "BOOLEAN"),
      422,
      /meter: BOOLEAN features have no usage to measure/,
    );
    // Other problems in the same body stay the usual 400.
    expectError(
      await asAdmin("/api/v1/features", { name: "", lookupKey: "x", type: "METERED", meter: 5 }),
      400,
    );
  });

  it("changes filters, groupBy and property freely, and the aggregation until there is usage", async () => {
    const feature = await createFeature(admin, "METERED", { meter: { aggregation: "SUM" } });
    const path = `/api/v1/features/${feature.id}`;
    const patched = await asAdmin(
      path,
      { meter: { aggregation: "MAX", property: "seats" } },
      "PATCH",
    );
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.meter).toEqual({ ...DEFAULT, aggregation: "MAX", property: "seats" });
    expectError(
      await asAdmin(path, { meter: { aggregation: "MAX" } }, "PATCH"),
      422,
      "meter.property is required for MAX",
    );

    // A usage window with no units yet is no usage.
    await recordUsage(feature.lookupKey, 0);
    expect(
      (await asAdmin(path, { meter: { aggregation: "SUM", property: "tokens" } }, "PATCH")).status,
    ).toBe(200);

    await recordUsage(feature.lookupKey, 12);
    expectError(
      await asAdmin(path, { meter: { aggregation: "COUNT" } }, "PATCH"),
      409,
      /^meter\.aggregation cannot change from SUM to COUNT: feature "[a-z0-9_]+" has usage/,
    );
    expectError(
      await asAdmin(path, { meter: { aggregation: "AVG", property: "tokens" } }, "PATCH"),
      409,
      /has usage/,
    );
    // Everything but the aggregation may still change.
    const regrouped = await asAdmin(
      path,
      {
        meter: {
          aggregation: "SUM",
          property: "output_tokens",
          filters: { region: ["eu"] },
          groupBy: ["model"],
        },
        name: "Output tokens",
      },
      "PATCH",
    );
    expect(regrouped.status, JSON.stringify(regrouped.body)).toBe(200);
    expect(regrouped.body).toMatchObject({
      name: "Output tokens",
      meter: {
        aggregation: "SUM",
        property: "output_tokens",
        filters: { region: ["eu"] },
        groupBy: ["model"],
      },
    });
    // Without a meter in the body the meter stays as it is.
    expect((await asAdmin(path, { name: "Tokens" }, "PATCH")).body.meter.groupBy).toEqual([
      "model",
    ]);
    // Back to SUM of amount: the same aggregation, so allowed.
    expect((await asAdmin(path, { meter: null }, "PATCH")).body.meter).toEqual(DEFAULT);
  });

  it("counts a meter group as usage", async () => {
    const feature = await createFeature(admin, "METERED", {
      meter: { aggregation: "MAX", property: "seats" },
    });
    const path = `/api/v1/features/${feature.id}`;
    // No usage yet: the aggregation may change.
    const changed = await asAdmin(
      path,
      { meter: { aggregation: "MIN", property: "seats" } },
      "PATCH",
    );
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    const { owner, subscription } = await recordUsage(`${feature.lookupKey}_other`, 0);
    await db()
      .prepare(
        `INSERT INTO usage_meter_groups (tenant_id, subscription_id, feature_lookup_key, period_key, period_start, period_end, group_key, events, value_min)
         VALUES (?, ?, ?, ?, ?, ?, '', 1, 3)`,
      )
      .bind(
        owner.tenant.id,
        subscription.id,
        feature.lookupKey,
        subscription.currentPeriodStart,
        subscription.currentPeriodStart,
        subscription.currentPeriodEnd,
      )
      .run();
    expectError(
      await asAdmin(path, { meter: { aggregation: "COUNT" } }, "PATCH"),
      409,
      /^meter\.aggregation cannot change from MIN to COUNT/,
    );
  });

  it("refuses a meter on a BOOLEAN feature on PATCH too", async () => {
    const flag = await createFeature(admin, "BOOLEAN");
    expectError(
      await asAdmin(`/api/v1/features/${flag.id}`, { meter: { aggregation: "COUNT" } }, "PATCH"),
      422,
      /BOOLEAN features have no usage to measure/,
    );
  });
});

describe("entitlements priced by decimal micro-cents and per group", () => {
  async function groupedFeature() {
    return createFeature(admin, "METERED", {
      meter: { aggregation: "SUM", property: "tokens", groupBy: ["model", "direction"] },
    });
  }

  it("takes overagePriceDecimal and unitPriceDecimal, and answers them", async () => {
    const plan = await createPlan(admin);
    const metered = await createFeature(admin, "METERED");
    const soft = await createFeature(admin, "QUOTA");
    const decimal = await grant(admin, plan.id, metered.id, {
      overagePriceDecimal: "0.0000000001",
      resetPeriod: "MONTHLY",
    });
    expect(decimal).toMatchObject({
      overagePrice: null,
      overagePriceDecimal: "0.0000000001",
      pricing: null,
      dimensions: null,
      includedAmount: 0,
    });
    const tiers = [
      { upTo: 1000, unitPriceDecimal: "0.15" },
      { upTo: null, unitPrice: 1, flatFee: 5 },
    ];
    const tiered = await grant(admin, plan.id, soft.id, {
      limit: 10,
      limitBehavior: "SOFT",
      pricing: { model: "graduated", tiers },
      resetPeriod: "MONTHLY",
    });
    expect(tiered).toMatchObject({
      pricing: { model: "graduated", tiers },
      overagePriceDecimal: null,
    });
    const listed = await call(`/api/v1/plans/${plan.id}/entitlements`);
    expect(
      listed.body.data.map((e: { overagePriceDecimal: string | null }) => e.overagePriceDecimal),
    ).toEqual(expect.arrayContaining(["0.0000000001", null]));
  });

  it("refuses malformed decimal prices and more than one price", async () => {
    const plan = await createPlan(admin);
    const metered = await createFeature(admin, "METERED");
    const quota = await createFeature(admin, "QUOTA");
    const post = (featureId: string, terms: object) =>
      asAdmin(`/api/v1/plans/${plan.id}/entitlements`, { featureId, ...terms });
    expectError(
      await post(metered.id, { overagePriceDecimal: 0.5, resetPeriod: "MONTHLY" }),
      400,
      messageContains("overagePriceDecimal must be a string"),
    );
    for (const bad of ["-1", "1.", "0.00000000001", "1e-3", "1000000000000000", ""]) {
      expectError(
        await post(metered.id, { overagePriceDecimal: bad, resetPeriod: "MONTHLY" }),
        400,
        messageContains("overagePriceDecimal must be a non-negative decimal string"),
      );
    }
    expectError(
      await post(metered.id, {
        overagePrice: 1,
        overagePriceDecimal: "0.5",
        resetPeriod: "MONTHLY",
      }),
      400,
      /two prices cannot both be set/,
    );
    expectError(
      await post(quota.id, { limit: 5, overagePriceDecimal: "0.5", resetPeriod: "MONTHLY" }),
      400,
      /HARD quotas do not accept "overagePrice" or "pricing", nor "overagePriceDecimal"/,
    );
    const tier = (extra: object) => ({
      resetPeriod: "MONTHLY",
      pricing: { model: "volume", tiers: [{ upTo: null, ...extra }] },
    });
    expectError(
      await post(metered.id, tier({ unitPrice: 1, unitPriceDecimal: "0.5" })),
      400,
      messageContains("pricing.tiers[0] takes one of unitPrice and unitPriceDecimal, not both"),
    );
    expectError(
      await post(metered.id, tier({})),
      400,
      messageContains("pricing.tiers[0] needs unitPrice"),
    );
    expectError(
      await post(metered.id, tier({ unitPriceDecimal: "abc" })),
      400,
      messageContains("unitPriceDecimal must be a non-negative decimal string"),
    );
  });

  it("prices groups of a grouped meter, with defaults made explicit", async () => {
    const plan = await createPlan(admin);
    const feature = await groupedFeature();
    const created = await grant(admin, plan.id, feature.id, {
      overagePrice: 2,
      includedAmount: 100,
      resetPeriod: "MONTHLY",
      dimensions: [
        { match: { model: "large", direction: "input" }, overagePriceDecimal: "0.3" },
        { match: { model: "large" }, includedAmount: 1000, overagePrice: 1 },
        {
          match: { direction: "output" },
          pricing: { model: "package", packageSize: 1000, packagePrice: 7 },
        },
      ],
    });
    expect(created.dimensions).toEqual([
      {
        match: { model: "large", direction: "input" },
        includedAmount: 0,
        overagePrice: null,
        overagePriceDecimal: "0.3",
        pricing: null,
      },
      {
        match: { model: "large" },
        includedAmount: 1000,
        overagePrice: 1,
        overagePriceDecimal: null,
        pricing: null,
      },
      {
        match: { direction: "output" },
        includedAmount: 0,
        overagePrice: null,
        overagePriceDecimal: null,
        pricing: { model: "package", packageSize: 1000, packagePrice: 7 },
      },
    ]);
    const path = `/api/v1/plans/${plan.id}/entitlements/${created.id}`;
    const cleared = await asAdmin(path, { dimensions: null }, "PATCH");
    expect(cleared.body.dimensions).toBeNull();
    const again = await asAdmin(
      path,
      { dimensions: [{ match: { model: 7 }, overagePriceDecimal: "1.5" }] },
      "PATCH",
    );
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.dimensions[0]).toMatchObject({ match: { model: 7 }, includedAmount: 0 });
  });

  it("refuses dimensions that do not fit the feature or its meter", async () => {
    const plan = await createPlan(admin);
    const grouped = await groupedFeature();
    const plain = await createFeature(admin, "METERED");
    const hard = await createFeature(admin, "QUOTA", {
      meter: { aggregation: "SUM", groupBy: ["model"] },
    });
    const post = (featureId: string, dimensions: unknown, terms: object = {}) =>
      asAdmin(`/api/v1/plans/${plan.id}/entitlements`, {
        featureId,
        overagePrice: 2,
        resetPeriod: "MONTHLY",
        dimensions,
        ...terms,
      });
    expectError(
      await post(grouped.id, [{ match: { region: "eu" }, overagePrice: 1 }]),
      422,
      "dimensions[0].match.region is not in the feature's meter groupBy (model, direction)",
    );
    expectError(
      await post(plain.id, [{ match: { model: "large" }, overagePrice: 1 }]),
      422,
      /the feature's meter has no groupBy/,
    );
    expectError(
      await post(hard.id, [{ match: { model: "large" }, overagePrice: 1 }], {
        overagePrice: undefined,
        limit: 5,
      }),
      400,
      /HARD quotas do not accept/,
    );
    expectError(
      await post(grouped.id, [{ match: { model: "large" } }]),
      400,
      'dimensions[0] needs exactly one of "overagePrice", "overagePriceDecimal" and "pricing"',
    );
    expectError(
      await post(grouped.id, [
        { match: { model: "large" }, overagePrice: 1 },
        { match: { model: "large" }, overagePrice: 2 },
      ]),
      400,
      "dimensions[1].match repeats an earlier entry's match",
    );
    expectError(
      await post(grouped.id, [{ match: {}, overagePrice: 1 }]),
      400,
      messageContains("dimensions[].match must name 1 to 3 properties"),
    );
    expectError(
      await post(grouped.id, [{ match: { model: ["a"] }, overagePrice: 1 }]),
      400,
      messageContains("dimensions.0.match.model"),
    );
    const many = Array.from({ length: 101 }, (_, index) => ({
      match: { model: `m${index}` },
      overagePrice: 1,
    }));
    expectError(
      await post(grouped.id, many),
      400,
      messageContains("dimensions may list at most 100 entries"),
    );
  });

  it("keeps a feature's groupBy while plans price groups by it", async () => {
    const plan = await createPlan(admin);
    const feature = await groupedFeature();
    await grant(admin, plan.id, feature.id, {
      overagePrice: 2,
      resetPeriod: "MONTHLY",
      dimensions: [{ match: { model: "large" }, overagePrice: 1 }],
    });
    expectError(
      await asAdmin(
        `/api/v1/features/${feature.id}`,
        { meter: { aggregation: "SUM", property: "tokens", groupBy: ["direction"] } },
        "PATCH",
      ),
      409,
      new RegExp(`plan "${plan.slug}" prices groups by: dimensions\\[0\\]\\.match\\.model`),
    );
  });
});

describe("subscription snapshots", () => {
  it("carry the feature's meter and the decimal and per-group prices as they were", async () => {
    const owner = await register();
    const plan = await createPlan(admin);
    const price = await createPrice(admin, plan.id);
    const meter = {
      aggregation: "SUM",
      property: "tokens",
      filters: { region: ["eu"] },
      groupBy: ["model"],
    };
    const tokens = await createFeature(admin, "METERED", { meter });
    const calls = await createFeature(admin, "METERED");
    await grant(admin, plan.id, tokens.id, {
      overagePriceDecimal: "0.15",
      resetPeriod: "MONTHLY",
      dimensions: [{ match: { model: "large" }, overagePriceDecimal: "0.3" }],
    });
    await grant(admin, plan.id, calls.id, { overagePrice: 10, resetPeriod: "MONTHLY" });
    const subscription = await subscribe(owner, plan.id, price.id);
    const byKey = (body: { entitlementSnapshots: { featureLookupKey: string }[] }, key: string) =>
      body.entitlementSnapshots.find((s) => s.featureLookupKey === key);
    const expected = {
      featureLookupKey: tokens.lookupKey,
      featureType: "METERED",
      overagePrice: null,
      overagePriceDecimal: "0.15",
      includedAmount: 0,
      meter,
      dimensions: [
        {
          match: { model: "large" },
          includedAmount: 0,
          overagePrice: null,
          overagePriceDecimal: "0.3",
          pricing: null,
        },
      ],
    };
    expect(byKey(subscription, tokens.lookupKey)).toMatchObject(expected);
    expect(byKey(subscription, calls.lookupKey)).toMatchObject({
      overagePrice: 10,
      overagePriceDecimal: null,
      dimensions: null,
      meter: DEFAULT,
    });

    // Later catalog edits reach new subscribers only.
    await asAdmin(
      `/api/v1/features/${tokens.id}`,
      { meter: { ...meter, filters: {}, groupBy: ["model", "direction"] } },
      "PATCH",
    );
    const read = await call("/api/v1/subscriptions/active", {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(read.status, JSON.stringify(read.body)).toBe(200);
    expect(byKey(read.body, tokens.lookupKey)).toMatchObject(expected);
    const stored = await db()
      .prepare(
        "SELECT meter, overage_price_decimal, dimensions FROM entitlement_snapshots WHERE subscription_id = ? AND feature_lookup_key = ?",
      )
      .bind(subscription.id, tokens.lookupKey)
      .first<{ meter: string; overage_price_decimal: string; dimensions: string }>();
    expect(JSON.parse(stored?.meter ?? "null")).toEqual(meter);
    expect(stored?.overage_price_decimal).toBe("0.15");
  });
});
