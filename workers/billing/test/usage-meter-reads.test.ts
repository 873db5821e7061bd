import { groupKeyOf, type Meter, OVERFLOW_GROUP_KEY } from "@edge-platform/shared/billing/meter";
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
import {
  insertSubscription,
  insertTenant,
  monthlyWindowAt,
  type SubscriptionFixture,
  snapshot,
} from "./entitlement-fixtures.ts";
import { type Account, call, db, expectError, type Json, register } from "./helpers.ts";
import { countPendingEvents } from "./meter-usage-helpers.ts";

// Usage reads by dimension: GET /usage/aggregates and /usage/timeseries of
// features with a meter, in total and split by the meter's groupBy
// properties, as a client reads them. One scenario goes from the catalog
// API through ingestion and the counter's flush; the others place stored
// group summaries directly to reach aggregations and windows that events
// of "now" cannot.

let admin: Account;
beforeAll(async () => {
  admin = await platformAdmin();
});

const HOUR = 3_600_000;

const values = (buckets: { value: number }[]) => buckets.map((bucket) => bucket.value);
const total = (buckets: { value: number }[]) => values(buckets).reduce((s, v) => s + v, 0);

describe("usage reads by dimension, end to end", () => {
  it("answers a metered feature's quantity in total and per combination; a plain feature as before", async () => {
    const meter = { aggregation: "SUM", property: "tokens", groupBy: ["model", "direction"] };
    const llm = await createFeature(admin, "METERED", { meter });
    const calls = await createFeature(admin, "METERED");
    const plan = await createPlan(admin);
    const price = await createPrice(admin, plan.id);
    await grant(admin, plan.id, llm.id, { overagePriceDecimal: "0.15", resetPeriod: "MONTHLY" });
    await grant(admin, plan.id, calls.id, { overagePrice: 10, resetPeriod: "MONTHLY" });
    const owner = await register();
    const subscription = await subscribe(owner, plan.id, price.id);
    const key = await createApiKey(owner);

    const at = new Date().toISOString();
    const event = (feature: string, amount: number, properties?: Record<string, unknown>) => ({
      eventId: crypto.randomUUID(),
      feature,
      amount,
      timestamp: at,
      ...(properties ? { properties } : {}),
    });
    const sent = await call("/api/v1/usage/events", {
      token: key,
      body: [
        event(llm.lookupKey, 1, { model: "large", direction: "input", tokens: 500 }),
        event(llm.lookupKey, 1, { model: "large", direction: "input", tokens: 1500 }),
        event(llm.lookupKey, 1, { model: "large", direction: "output", tokens: 300 }),
        event(llm.lookupKey, 1, { model: "small", direction: "input", tokens: 3000 }),
        event(llm.lookupKey, 1, { model: "small", tokens: 200 }),
        event(calls.lookupKey, 2),
        event(calls.lookupKey, 3, { region: "eu" }),
      ],
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    expect(sent.body.accepted).toBe(7);
    const fixture = {
      tenantId: owner.tenant.id,
      subscriptionId: subscription.id,
      startedAt: new Date(subscription.startedAt),
    };
    expect(await countPendingEvents(fixture)).toBe(7);

    const read = async (path: string) => {
      const result = await call(`/api/v1/usage/${path}`, { token: key });
      expect(result.status, JSON.stringify(result.body)).toBe(200);
      return result.body;
    };
    const window = {
      subscriptionId: subscription.id,
      feature: llm.lookupKey,
      periodKey: monthlyWindowAt(fixture, new Date(at)).periodKey,
    };

    // Without groupBy: the meter's quantity of the window, over all groups.
    const whole = await read(`aggregates?feature=${llm.lookupKey}`);
    expect(whole.data).toEqual([
      expect.objectContaining({ ...window, amount: 5500, dimensions: null }),
    ]);
    expect(whole.data[0]).not.toHaveProperty("overflow");

    const split = await read(`aggregates?feature=${llm.lookupKey}&groupBy=model,direction`);
    expect(
      split.data.map((row: Json) => [row.dimensions, row.amount, row.overflow, row.periodKey]),
    ).toEqual([
      [{ model: "large", direction: "input" }, 2000, false, window.periodKey],
      [{ model: "small", direction: "input" }, 3000, false, window.periodKey],
      [{ model: "large", direction: "output" }, 300, false, window.periodKey],
      [{ model: "small", direction: null }, 200, false, window.periodKey],
    ]);
    expect(split.data[0].lastEventAt).toBe(at);
    const byModel = await read(`aggregates?feature=${llm.lookupKey}&groupBy=model`);
    expect(byModel.data.map((row: Json) => [row.dimensions, row.amount])).toEqual([
      [{ model: "large" }, 2300],
      [{ model: "small" }, 3200],
    ]);

    const from = new Date(Date.parse(at) - HOUR).toISOString();
    const to = new Date(Date.parse(at) + HOUR).toISOString();
    const range = `from=${from}&to=${to}&granularity=hour`;
    const series = await read(`timeseries?feature=${llm.lookupKey}&${range}&groupBy=model`);
    expect(total(series.data)).toBe(5500);
    expect(
      series.series.map((s: Json) => [s.dimensions, s.overflow, total(s.data), s.data.length]),
    ).toEqual([
      [{ model: "large" }, false, 2300, series.data.length],
      [{ model: "small" }, false, 3200, series.data.length],
    ]);
    expect(series.series[0].data.map((b: Json) => b.start)).toEqual(
      series.data.map((b: Json) => b.start),
    );
    const unsplit = await read(`timeseries?feature=${llm.lookupKey}&${range}`);
    expect(Object.keys(unsplit)).toEqual(["data"]);
    expect(unsplit.data).toEqual(series.data);

    // The plain feature: its units, as before meters.
    const plain = await read(`aggregates?feature=${calls.lookupKey}`);
    expect(plain.data).toEqual([
      {
        subscriptionId: subscription.id,
        feature: calls.lookupKey,
        periodKey: window.periodKey,
        periodStart: expect.any(String),
        periodEnd: expect.any(String),
        amount: 5,
        lastEventAt: at,
        updatedAt: expect.any(String),
        dimensions: null,
      },
    ]);
    const plainSeries = await read(`timeseries?feature=${calls.lookupKey}&${range}`);
    expect(Object.keys(plainSeries)).toEqual(["data"]);
    expect(total(plainSeries.data)).toBe(5);
    // Every feature of the tenant at once: each window as when read alone.
    const all = await read("aggregates");
    expect(all.data.map((row: Json) => [row.feature, row.amount])).toEqual(
      [
        [calls.lookupKey, 5],
        [llm.lookupKey, 5500],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );

    // What cannot be split: a 422 in the service's error shape.
    const refused = (path: string) => call(`/api/v1/usage/${path}`, { token: key });
    expectError(
      await refused("aggregates?groupBy=model"),
      422,
      "groupBy requires feature: name the feature to split",
    );
    expectError(
      await refused(`aggregates?feature=${llm.lookupKey}&groupBy=region`),
      422,
      `groupBy: "region" is not a property feature "${llm.lookupKey}" is split by (its meter groups by: model, direction)`,
    );
    expectError(
      await refused(`aggregates?feature=${calls.lookupKey}&groupBy=region`),
      422,
      `groupBy: "region" is not a property feature "${calls.lookupKey}" is split by (its meter has no groupBy)`,
    );
    expectError(
      await refused(`timeseries?feature=${llm.lookupKey}&${range}&groupBy=model,model`),
      422,
      'groupBy lists "model" twice',
    );
    expectError(
      await refused(`timeseries?feature=${llm.lookupKey}&${range}&groupBy=`),
      422,
      "groupBy must name 1 to 3 properties separated by commas",
    );
  });
});

/** Summary columns of a stored group or hour, as the flush writes them. */
interface Summary {
  dimensions: Record<string, string | number | null>;
  groupKey?: string;
  events?: number;
  sum?: number;
  min?: number;
  max?: number;
  latest?: { value: number; at: string; id: string };
  weightedMs?: number;
  distinct?: number;
}

function summaryValues(summary: Summary) {
  return [
    summary.groupKey ?? groupKeyOf(summary.dimensions),
    JSON.stringify(summary.dimensions),
    summary.events ?? 1,
    summary.sum ?? 0,
    summary.min ?? null,
    summary.max ?? null,
    summary.latest?.value ?? null,
    summary.latest?.at ?? null,
    summary.latest?.id ?? null,
    summary.weightedMs ?? 0,
    summary.distinct ?? 0,
  ];
}

const SUMMARY_COLUMNS =
  "group_key, dimensions, events, value_sum, value_min, value_max, latest_value, latest_at, latest_id, weighted_ms, distinct_values";

/** A window's aggregate row and its groups, as the counter's flush leaves them. */
async function storeWindow(
  fixture: SubscriptionFixture,
  feature: string,
  window: { periodKey: string; periodStart: string; periodEnd: string | null },
  groups: Summary[],
  amount = 0,
) {
  const statements = [
    db()
      .prepare(
        `INSERT INTO usage_aggregates (id, tenant_id, subscription_id, feature_lookup_key, period_key, period_start, period_end, amount)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .bind(
        crypto.randomUUID(),
        fixture.tenantId,
        fixture.subscriptionId,
        feature,
        window.periodKey,
        window.periodStart,
        window.periodEnd,
        amount,
      ),
    ...groups.map((group) =>
      db()
        .prepare(
          `INSERT INTO usage_meter_groups (tenant_id, subscription_id, feature_lookup_key, period_key, period_start, period_end, ${SUMMARY_COLUMNS})
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .bind(
          fixture.tenantId,
          fixture.subscriptionId,
          feature,
          window.periodKey,
          window.periodStart,
          window.periodEnd,
          ...summaryValues(group),
        ),
    ),
  ];
  await db().batch(statements);
}

async function storeHours(
  fixture: SubscriptionFixture,
  feature: string,
  hours: (Summary & { hourStart: string })[],
) {
  await db().batch(
    hours.map((hour) =>
      db()
        .prepare(
          `INSERT INTO usage_meter_hourly (tenant_id, subscription_id, feature_lookup_key, hour_start, ${SUMMARY_COLUMNS})
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .bind(
          fixture.tenantId,
          fixture.subscriptionId,
          feature,
          hour.hourStart,
          ...summaryValues(hour),
        ),
    ),
  );
}

/** A catalog feature with `meter`, and a tenant subscribed to it since `startedAt` (snapshot carries the meter). */
async function meteredTenant(meter: Partial<Meter>, startedAt = new Date("2026-01-01T00:00:00Z")) {
  const feature = await createFeature(admin, "METERED", { meter });
  const owner = await register();
  const fixture = await insertSubscription({
    tenantId: owner.tenant.id,
    snapshots: [{ ...snapshot.metered(feature.lookupKey, 0), meter: feature.meter }],
    startedAt,
  });
  const read = async (path: string) => {
    const result = await call(`/api/v1/usage/${path}`, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    return result.body;
  };
  return { feature: feature.lookupKey as string, owner, fixture, read };
}

const DAY = 24 * HOUR;
const JANUARY = {
  periodKey: "2026-01-01T00:00:00.000Z",
  periodStart: "2026-01-01T00:00:00.000Z",
  periodEnd: "2026-02-01T00:00:00.000Z",
};
const FEBRUARY = {
  periodKey: "2026-02-01T00:00:00.000Z",
  periodStart: "2026-02-01T00:00:00.000Z",
  periodEnd: "2026-03-01T00:00:00.000Z",
};

describe("usage reads by dimension, from stored summaries", () => {
  it("WEIGHTED_SUM: the window's quantity with the level carried in; the series as the level at each bucket's end", async () => {
    const { feature, fixture, read } = await meteredTenant({
      aggregation: "WEIGHTED_SUM",
      property: "gb",
      groupBy: ["region"],
    });
    // January: eu +100 held from the 16th (16 of 31 days), us +40 from the start.
    await storeWindow(fixture, feature, JANUARY, [
      { dimensions: { region: "eu" }, sum: 100, weightedMs: 100 * 16 * DAY },
      { dimensions: { region: "us" }, sum: 40, weightedMs: 40 * 31 * DAY },
    ]);
    // February: eu -30 from the 15th (14 of 28 days), us +10 from the start.
    await storeWindow(fixture, feature, FEBRUARY, [
      { dimensions: { region: "eu" }, sum: -30, weightedMs: -30 * 14 * DAY },
      { dimensions: { region: "us" }, sum: 10, weightedMs: 10 * 28 * DAY },
    ]);
    await storeHours(fixture, feature, [
      { hourStart: "2026-01-01T00:00:00.000Z", dimensions: { region: "us" }, sum: 40 },
      { hourStart: "2026-01-16T00:00:00.000Z", dimensions: { region: "eu" }, sum: 100 },
      { hourStart: "2026-02-01T00:00:00.000Z", dimensions: { region: "us" }, sum: 10 },
      { hourStart: "2026-02-15T00:00:00.000Z", dimensions: { region: "eu" }, sum: -30 },
    ]);

    const whole = await read(`aggregates?feature=${feature}`);
    const amounts = whole.data.map((row: Json) => [row.periodKey, row.amount]);
    expect(amounts[0]).toEqual([FEBRUARY.periodKey, 135]);
    expect(amounts[1]?.[0]).toBe(JANUARY.periodKey);
    expect(amounts[1]?.[1]).toBeCloseTo((100 * 16) / 31 + 40, 9);
    const split = await read(
      `aggregates?feature=${feature}&groupBy=region&periodKey=${FEBRUARY.periodKey}`,
    );
    expect(split.data.map((row: Json) => [row.dimensions, row.amount])).toEqual([
      [{ region: "eu" }, 85],
      [{ region: "us" }, 50],
    ]);

    const days = await read(
      `timeseries?feature=${feature}&from=2026-02-13T00:00:00Z&to=2026-02-17T00:00:00Z&granularity=day&groupBy=region`,
    );
    expect(values(days.data)).toEqual([150, 150, 120, 120]);
    expect(days.series.map((s: Json) => [s.dimensions, values(s.data)])).toEqual([
      [{ region: "eu" }, [100, 100, 70, 70]],
      [{ region: "us" }, [50, 50, 50, 50]],
    ]);
  });

  it("AVG and LATEST merge groups into a coarser split; the overflow group and windows without groups have their rows", async () => {
    const { feature, fixture, read } = await meteredTenant({
      aggregation: "AVG",
      property: "latency",
      groupBy: ["model", "region"],
    });
    const at = (day: number) => `2026-01-0${day}T10:00:00.000Z`;
    await storeWindow(fixture, feature, JANUARY, [
      { dimensions: { model: "large", region: "eu" }, events: 2, sum: 30, max: 20 },
      { dimensions: { model: "large", region: "us" }, events: 1, sum: 60, max: 60 },
      { dimensions: { model: "small", region: "eu" }, events: 1, sum: 10, max: 10 },
      { dimensions: {}, groupKey: OVERFLOW_GROUP_KEY, events: 4, sum: 4, max: 1 },
    ]);
    const whole = await read(`aggregates?feature=${feature}`);
    expect(whole.data.map((row: Json) => row.amount)).toEqual([104 / 8]);
    const byModel = await read(`aggregates?feature=${feature}&groupBy=model`);
    expect(byModel.data.map((row: Json) => [row.dimensions, row.overflow, row.amount])).toEqual([
      [{ model: "large" }, false, 30],
      [{ model: "small" }, false, 10],
      [{}, true, 1],
    ]);

    // An earlier subscription that counted the feature before it had a
    // meter: one row, its properties unknown.
    const earlier = await insertSubscription({
      tenantId: fixture.tenantId,
      snapshots: [snapshot.metered(feature, 0)],
      startedAt: new Date("2025-12-01T00:00:00Z"),
      status: "CANCELLED",
    });
    const december = {
      periodKey: "2025-12-01T00:00:00.000Z",
      periodStart: "2025-12-01T00:00:00.000Z",
      periodEnd: JANUARY.periodStart,
    };
    await storeWindow(earlier, feature, december, [], 7);
    const withEarlier = await read(`aggregates?feature=${feature}&groupBy=model`);
    expect(withEarlier.data.at(-1)).toMatchObject({
      subscriptionId: earlier.subscriptionId,
      dimensions: { model: null },
      overflow: false,
      amount: 7,
    });

    // LATEST, exactly as stored, whichever group the latest event is in.
    const latest = await meteredTenant({
      aggregation: "LATEST",
      property: "seats",
      groupBy: ["team"],
    });
    await storeWindow(latest.fixture, latest.feature, JANUARY, [
      { dimensions: { team: "a" }, latest: { value: 0.1 + 0.2, at: at(3), id: "2" } },
      { dimensions: { team: "b" }, latest: { value: 12, at: at(2), id: "9" } },
    ]);
    expect((await latest.read(`aggregates?feature=${latest.feature}`)).data[0].amount).toBe(
      0.1 + 0.2,
    );
    const teams = await latest.read(`aggregates?feature=${latest.feature}&groupBy=team`);
    expect(
      teams.data.map((row: Json) => [row.dimensions.team, row.amount, row.lastEventAt]),
    ).toEqual([
      ["a", 0.1 + 0.2, at(3)],
      ["b", 12, at(2)],
    ]);
  });

  it("UNIQUE_COUNT and MAX per bucket; another tenant's summaries are not read", async () => {
    const { feature, fixture, read } = await meteredTenant({
      aggregation: "UNIQUE_COUNT",
      property: "user_id",
      groupBy: ["plan"],
    });
    await storeHours(fixture, feature, [
      {
        hourStart: "2026-01-05T10:00:00.000Z",
        dimensions: { plan: "pro" },
        events: 5,
        distinct: 3,
      },
      {
        hourStart: "2026-01-05T10:00:00.000Z",
        dimensions: { plan: "free" },
        events: 2,
        distinct: 2,
      },
      {
        hourStart: "2026-01-05T12:00:00.000Z",
        dimensions: { plan: "pro" },
        events: 4,
        distinct: 1,
      },
    ]);
    const other = await insertTenant();
    const intruder = await insertSubscription({ tenantId: other, snapshots: [] });
    await storeHours(intruder, feature, [
      {
        hourStart: "2026-01-05T10:00:00.000Z",
        dimensions: { plan: "pro" },
        events: 9,
        distinct: 9,
      },
    ]);
    const range = "from=2026-01-05T10:00:00Z&to=2026-01-05T13:00:00Z&granularity=hour";
    const hours = await read(`timeseries?feature=${feature}&${range}&groupBy=plan`);
    expect(values(hours.data)).toEqual([5, 0, 1]);
    expect(hours.series.map((s: Json) => [s.dimensions.plan, values(s.data)])).toEqual([
      ["free", [2, 0, 0]],
      ["pro", [3, 0, 1]],
    ]);

    const peak = await meteredTenant({ aggregation: "MAX", property: "gpus", groupBy: ["zone"] });
    await storeHours(peak.fixture, peak.feature, [
      { hourStart: "2026-01-05T10:00:00.000Z", dimensions: { zone: "a" }, max: 8, min: 2 },
      { hourStart: "2026-01-05T11:00:00.000Z", dimensions: { zone: "b" }, max: 3, min: 3 },
      { hourStart: "2026-01-05T11:00:00.000Z", dimensions: { zone: "a" }, max: 5, min: 1 },
    ]);
    const maxima = await peak.read(`timeseries?feature=${peak.feature}&${range}`);
    expect(values(maxima.data)).toEqual([8, 5, 0]);
  });
});
