import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import {
  MAX_GROUP_COMBINATIONS,
  type Meter,
  meterQuantity,
  OVERFLOW_GROUP_KEY,
  stateOfRow,
} from "@edge-platform/shared/billing/meter";
import { withShard } from "@edge-platform/shared/usage-log/client";
import { describe, expect, it } from "vitest";
import {
  insertSubscription,
  insertTenant,
  monthlyWindowAt,
  snapshot,
} from "./entitlement-fixtures.ts";
import { recordThroughPipeline } from "./meter-helpers.ts";

// Meters through the counter: each logged event's reading is placed in its
// group (distinct values decided by the counter), and the flush folds the
// events it claims into usage_meter_groups, from which billing reads the
// quantity of each aggregation.

type Properties = Record<string, string | number>;
interface SentEvent {
  id: string;
  properties: Properties;
  timestamp: string;
  amount?: number;
}

async function meteredTenant(meter: Meter) {
  const tenantId = await insertTenant();
  const fixture = await insertSubscription({
    tenantId,
    snapshots: [{ ...snapshot.metered("usage", 0), meter }],
  });
  const now = new Date();
  const window = monthlyWindowAt(fixture, now);
  return { tenantId, fixture, window, now };
}

async function send(setup: Awaited<ReturnType<typeof meteredTenant>>, events: SentEvent[]) {
  return recordThroughPipeline(
    setup.fixture,
    events.map((event) => ({ ...event, feature: "usage" })),
  );
}

async function groups(setup: Awaited<ReturnType<typeof meteredTenant>>) {
  const { results } = await env.DB.prepare(
    "SELECT *, NULL AS carried FROM usage_meter_groups WHERE subscription_id = ? ORDER BY period_start, group_key",
  )
    .bind(setup.fixture.subscriptionId)
    .all<
      Parameters<typeof stateOfRow>[0] & {
        group_key: string;
        dimensions: string;
        period_start: string;
        period_end: string | null;
      }
    >();
  return results;
}

function quantityOf(
  meter: Meter,
  row: Parameters<typeof stateOfRow>[0],
  window: { periodStart: string; periodEnd: string | null },
) {
  return meterQuantity(meter.aggregation, stateOfRow(row), {
    start: window.periodStart,
    end: window.periodEnd,
  });
}

const event = (properties: Properties, timestamp: string, amount?: number): SentEvent => ({
  id: withShard(crypto.randomUUID(), 0),
  properties,
  timestamp,
  ...(amount === undefined ? {} : { amount }),
});

describe("meters through the counter and its flush", () => {
  it("SUM by groupBy: one group per combination, each summed once even when resent", async () => {
    const meter: Meter = {
      aggregation: "SUM",
      property: "tokens",
      filters: {},
      groupBy: ["model", "direction"],
    };
    const setup = await meteredTenant(meter);
    const at = setup.now.toISOString();
    const events = [
      event({ model: "large", direction: "input", tokens: 500_000 }, at),
      event({ model: "large", direction: "input", tokens: 1_500_000 }, at),
      event({ model: "large", direction: "output", tokens: 333_333 }, at),
      event({ model: "small", direction: "input", tokens: 3_000_000 }, at),
    ];
    expect(await send(setup, events)).toEqual({ recorded: 4, duplicates: 0 });
    expect(await send(setup, events.slice(0, 2))).toEqual({ recorded: 0, duplicates: 2 });
    const rows = await groups(setup);
    expect(
      rows.map((row) => [JSON.parse(row.dimensions), quantityOf(meter, row, setup.window)]),
    ).toEqual([
      [{ direction: "input", model: "large" }, 2_000_000],
      [{ direction: "input", model: "small" }, 3_000_000],
      [{ direction: "output", model: "large" }, 333_333],
    ]);
    expect(
      (await entitlementCounter(env.ENTITLEMENT_COUNTER, setup.tenantId).check("usage")).used,
    ).toBe(5_333_333);
  });

  it("UNIQUE_COUNT counts each distinct value once, across batches and resends", async () => {
    const meter: Meter = {
      aggregation: "UNIQUE_COUNT",
      property: "user_id",
      filters: {},
      groupBy: [],
    };
    const setup = await meteredTenant(meter);
    const at = setup.now.toISOString();
    const users = ["u1", "u2", "u3", "u1", "u2", "u4", "u1"];
    await send(
      setup,
      users.slice(0, 4).map((user) => event({ user_id: user }, at)),
    );
    await send(
      setup,
      users.slice(4).map((user) => event({ user_id: user }, at)),
    );
    const [row] = await groups(setup);
    expect(row && quantityOf(meter, row, setup.window)).toBe(4);
    expect(row?.events).toBe(7);
    expect(
      (await entitlementCounter(env.ENTITLEMENT_COUNTER, setup.tenantId).check("usage")).used,
    ).toBe(4);
  });

  it("MAX, MIN and AVG of a property; a filter leaves other events out", async () => {
    const filters = { region: ["eu"] };
    const meter: Meter = { aggregation: "MAX", property: "gpus", filters, groupBy: [] };
    const setup = await meteredTenant(meter);
    const at = setup.now.toISOString();
    const events = [
      event({ gpus: 3, region: "eu" }, at),
      event({ gpus: 8, region: "eu" }, at),
      event({ gpus: 5, region: "eu" }, at),
      event({ gpus: 40, region: "us" }, at),
    ];
    await send(setup, events);
    const [row] = await groups(setup);
    expect(row?.events).toBe(3);
    expect(row && quantityOf(meter, row, setup.window)).toBe(8);
    expect(row && quantityOf({ ...meter, aggregation: "MIN" }, row, setup.window)).toBe(3);
    expect(row && quantityOf({ ...meter, aggregation: "AVG" }, row, setup.window)).toBeCloseTo(
      16 / 3,
      12,
    );
    // The filtered event adds no units anywhere: the window's counted units agree with the counter.
    const counted = await env.DB.prepare(
      "SELECT coalesce(sum(amount), 0) AS units FROM usage_aggregates WHERE subscription_id = ?",
    )
      .bind(setup.fixture.subscriptionId)
      .first<{ units: number }>();
    expect(counted?.units).toBe(0);
  });

  it("LATEST is the value of the latest timestamp, not of the latest to arrive", async () => {
    const meter: Meter = { aggregation: "LATEST", property: "seats", filters: {}, groupBy: [] };
    const setup = await meteredTenant(meter);
    const { periodStart } = setup.window;
    const t = (hours: number) =>
      new Date(Date.parse(periodStart) + hours * 3_600_000).toISOString();
    await send(setup, [event({ seats: 10 }, t(1)), event({ seats: 12 }, t(3))]);
    await send(setup, [event({ seats: 15 }, t(2))]);
    const [row] = await groups(setup);
    expect(row && quantityOf(meter, row, setup.window)).toBe(12);
  });

  it("WEIGHTED_SUM integrates the level over the window: 100 held for half of it bills 50", async () => {
    const meter: Meter = { aggregation: "WEIGHTED_SUM", property: "gb", filters: {}, groupBy: [] };
    const setup = await meteredTenant(meter);
    const { periodStart, periodEnd } = setup.window;
    const start = Date.parse(periodStart);
    const end = Date.parse(periodEnd as string);
    const half = new Date(start + (end - start) / 2).toISOString();
    await send(setup, [event({ gb: 100 }, half)]);
    const [row] = await groups(setup);
    expect(row && quantityOf(meter, row, setup.window)).toBeCloseTo(50, 9);
    // The level it reached carries into the next window in full.
    expect(
      row &&
        meterQuantity(
          "WEIGHTED_SUM",
          stateOfRow({ ...row, value_sum: 0, weighted_ms: 0 }),
          {
            start: periodEnd as string,
            end: new Date(end + (end - start)).toISOString(),
          },
          row.value_sum,
        ),
    ).toBe(100);
  });

  it("keeps at most MAX_GROUP_COMBINATIONS groups per window; further events count in the overflow group", async () => {
    const meter: Meter = {
      aggregation: "COUNT",
      property: null,
      filters: {},
      groupBy: ["customer"],
    };
    const setup = await meteredTenant(meter);
    const at = setup.now.toISOString();
    const events = Array.from({ length: MAX_GROUP_COMBINATIONS + 5 }, (_, index) =>
      event({ customer: `c${index}` }, at),
    );
    await send(setup, events.slice(0, 1000));
    await send(setup, events.slice(1000));
    const rows = await groups(setup);
    expect(rows.length).toBe(MAX_GROUP_COMBINATIONS + 1);
    const overflow = rows.find((row) => row.group_key === OVERFLOW_GROUP_KEY);
    expect(overflow?.events).toBe(5);
    expect(rows.reduce((sum, row) => sum + row.events, 0)).toBe(MAX_GROUP_COMBINATIONS + 5);
  });

  it.each(["SUM", "COUNT", "UNIQUE_COUNT", "MAX", "MIN", "AVG", "LATEST", "WEIGHTED_SUM"] as const)(
    "%s counts a resent event once",
    async (aggregation) => {
      const meter: Meter = {
        aggregation,
        property: aggregation === "COUNT" ? null : "v",
        filters: {},
        groupBy: [],
      };
      const setup = await meteredTenant(meter);
      const { periodStart } = setup.window;
      const t = (minutes: number) =>
        new Date(Date.parse(periodStart) + minutes * 60_000).toISOString();
      const events = [event({ v: 4 }, t(1)), event({ v: 9 }, t(3)), event({ v: 4 }, t(2))];
      await send(setup, events);
      const [once] = await groups(setup);
      // Resent: the whole batch, and one event again inside a batch with a new one.
      expect(await send(setup, events)).toEqual({ recorded: 0, duplicates: 3 });
      const late = event({ v: 1 }, t(0));
      expect(await send(setup, [events[1] as SentEvent, late])).toEqual({
        recorded: 1,
        duplicates: 1,
      });
      const withLate = await groups(setup);
      const expected = {
        SUM: [17, 18],
        COUNT: [3, 4],
        UNIQUE_COUNT: [2, 3],
        MAX: [9, 9],
        MIN: [4, 1],
        AVG: [17 / 3, 18 / 4],
        LATEST: [9, 9],
      } as const;
      if (aggregation === "WEIGHTED_SUM") {
        expect(once?.value_sum).toBe(17);
        expect(withLate[0]?.value_sum).toBe(18);
        return;
      }
      const [before, after] = expected[aggregation];
      expect(once && quantityOf(meter, once, setup.window)).toBeCloseTo(before, 12);
      expect(withLate[0] && quantityOf(meter, withLate[0], setup.window)).toBeCloseTo(after, 12);
      expect(withLate[0]?.events).toBe(4);
    },
  );

  it.each(["SUM", "COUNT", "UNIQUE_COUNT", "MAX", "MIN", "AVG", "LATEST", "WEIGHTED_SUM"] as const)(
    "%s keeps an event of a window's last millisecond in that window",
    async (aggregation) => {
      const meter: Meter = {
        aggregation,
        property: aggregation === "COUNT" ? null : "v",
        filters: {},
        groupBy: [],
      };
      const setup = await meteredTenant(meter);
      const end = setup.window.periodEnd as string;
      const lastMs = new Date(Date.parse(end) - 1).toISOString();
      await send(setup, [event({ v: 6 }, lastMs), event({ v: 2 }, end)]);
      const rows = await groups(setup);
      expect(rows.map((row) => [row.period_start, row.events])).toEqual([
        [setup.window.periodStart, 1],
        [end, 1],
      ]);
      const [first, second] = rows as [(typeof rows)[number], (typeof rows)[number]];
      const next = { periodStart: end, periodEnd: second.period_end };
      const expected = {
        SUM: [6, 2],
        COUNT: [1, 1],
        UNIQUE_COUNT: [1, 1],
        MAX: [6, 2],
        MIN: [6, 2],
        AVG: [6, 2],
        LATEST: [6, 2],
        // Held for 1 ms of the first window; the second carries 6 in and adds 2 for all of it.
        WEIGHTED_SUM: [6 / (Date.parse(end) - Date.parse(setup.window.periodStart)), 8],
      }[aggregation];
      expect(quantityOf(meter, first, setup.window)).toBeCloseTo(expected[0] as number, 12);
      const carried = aggregation === "WEIGHTED_SUM" ? first.value_sum : 0;
      expect(
        meterQuantity(
          aggregation,
          stateOfRow(second),
          { start: end, end: next.periodEnd },
          carried,
        ),
      ).toBeCloseTo(expected[1] as number, 9);
    },
  );
});
