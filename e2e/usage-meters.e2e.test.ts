import {
  type InvoiceLineBody,
  invoiceContent,
} from "@edge-platform/shared/testing/invoice-content";
import { describe, expect, inject, it } from "vitest";
import {
  type Caller,
  createApiKey,
  createPlanWithPrice,
  createTenant,
  grantEntitlement,
  loginDevAdmin,
  ok,
  send,
  subscribe,
} from "./lib/billing-api.ts";
import { queryParquet } from "./lib/duckdb.ts";
import { eventually } from "./lib/eventually.ts";
import { readLocalR2Objects } from "./lib/local-r2.ts";

// The meters' worked example (docs/billing.md, "Meters") against the
// running stack: features with meters and an entitlement priced per group
// at fractions of a micro-cent, created through the API; the events sent
// with the tenant's API key to POST /usage/events and counted by the
// pipeline; the upcoming invoice's six lines (6,200 cents), equal to the
// invoice the period's close issues; and DuckDB over the tenant's Parquet
// files in the stack's local R2 bucket, whose token sums per model and
// direction are the invoice lines' quantities. The suite's stack archives
// in files of 200 events once they have settled, so the example's 19
// events are padded with events of a feature the plan does not grant
// (rejected, and archived like any finished event).

const suffix = crypto.randomUUID().slice(0, 8);
const key = (feature: string) => `${feature}_${suffix}`;

const FILE_EVENTS = 200;
const WORKED_EVENTS = 19;
const PADDING = FILE_EVENTS - WORKED_EVENTS;
const ARCHIVE_BOUND_MS = 180_000;

const METERS = {
  tokens: { aggregation: "SUM", property: "tokens", groupBy: ["model", "direction"] },
  active_users: { aggregation: "UNIQUE_COUNT", property: "user_id" },
  peak_gpus: { aggregation: "MAX", property: "gpus" },
  seats: { aggregation: "LATEST", property: "seats" },
} as const;
type FeatureName = keyof typeof METERS;

const TERMS: Record<FeatureName, Record<string, unknown>> = {
  tokens: {
    overagePriceDecimal: "0.01",
    dimensions: [
      { match: { model: "large", direction: "input" }, overagePriceDecimal: "0.03" },
      { match: { model: "large", direction: "output" }, overagePriceDecimal: "0.15" },
    ],
  },
  active_users: { includedAmount: 2, overagePrice: 10_000 },
  peak_gpus: { overagePrice: 50_000 },
  seats: { includedAmount: 10, overagePrice: 30_000 },
};

type Properties = Record<string, string | number>;
interface UsageEvent {
  eventId: string;
  feature: string;
  timestamp: string;
  properties?: Properties;
}

/** The catalog of the example, a tenant subscribed to it, and the tenant's API key. */
async function workedExampleTenant() {
  const admin: Caller = { token: await loginDevAdmin() };
  const { plan, price } = await createPlanWithPrice(
    admin,
    { name: `Meters ${suffix}`, slug: `meters-${suffix}` },
    { interval: "MONTHLY", amount: 0, currency: "usd" },
  );
  for (const name of Object.keys(METERS) as FeatureName[]) {
    const meter = METERS[name];
    const created = await send("/features", {
      token: admin.token,
      body: { name: `Meters ${name} ${suffix}`, lookupKey: key(name), type: "METERED", meter },
    });
    const feature = ok(created, 201, "POST /features");
    expect(feature.meter).toEqual({ filters: {}, groupBy: [], ...meter });
    await grantEntitlement(admin, plan.id, feature.id, { resetPeriod: "MONTHLY", ...TERMS[name] });
  }
  const tenant = await createTenant(admin, `Meters ${suffix}`);
  const owner: Caller = { ...admin, tenantId: tenant.id };
  const subscription = await subscribe(owner, { planId: plan.id, priceId: price.id });
  const apiKey = await createApiKey(owner, "meters e2e");
  return { admin: admin.token, tenantId: tenant.id as string, subscription, apiKey };
}

/**
 * The example's events, 100 ms apart from just after the period's start,
 * in the batches they are sent in: the seats of t1 and t3 with the rest,
 * the seats of t2 last.
 */
function workedExampleEvents(periodStart: string) {
  const start = Date.parse(periodStart);
  let tick = 0;
  const event = (feature: FeatureName, properties: Properties): UsageEvent => {
    tick += 1;
    return {
      eventId: crypto.randomUUID(),
      feature: key(feature),
      timestamp: new Date(start + tick * 100).toISOString(),
      properties,
    };
  };
  const tokens = (model: string, direction: string, count: number) =>
    event("tokens", { model, direction, tokens: count });
  const rest = [
    ...[500_000, 700_000, 300_000, 500_000].map((count) => tokens("large", "input", count)),
    tokens("large", "output", 333_333),
    tokens("small", "input", 3_000_000),
    ...["u1", "u2", "u3", "u1", "u2", "u4", "u1"].map((user) =>
      event("active_users", { user_id: user }),
    ),
    ...[3, 8, 5].map((gpus) => event("peak_gpus", { gpus })),
  ];
  const [t1, t2, t3] = [10, 15, 12].map((seats) => event("seats", { seats })) as [
    UsageEvent,
    UsageEvent,
    UsageEvent,
  ];
  return { first: [...rest, t1, t3], last: [t2], latestAt: start + tick * 100 };
}

function padding(): UsageEvent[] {
  const now = new Date().toISOString();
  return Array.from({ length: PADDING }, () => ({
    eventId: crypto.randomUUID(),
    feature: key("not_granted"),
    timestamp: now,
  }));
}

async function sendEvents(apiKey: string, events: UsageEvent[]) {
  const sent = ok(await send("/usage/events", { token: apiKey, body: { events } }), 202, "ingest");
  expect(sent).toMatchObject({ accepted: events.length, rejected: 0 });
}

/** The tenant's events of a status (at most 1,000). */
async function eventsWith(apiKey: string, status: string) {
  const listed = await send(`/usage/events?status=${status}&limit=1000`, { token: apiKey });
  return ok(listed, 200, "GET /usage/events").data as { eventId: string; reason: string | null }[];
}

const usageLines = (invoice: { lineItems: InvoiceLineBody[] }) =>
  invoice.lineItems
    .filter((line) => line.kind === "USAGE")
    .map((line) => [line.featureLookupKey, line.dimensions, line.quantity, line.amount]);

const EXPECTED_LINES = [
  [key("active_users"), null, 2, 200],
  [key("peak_gpus"), null, 8, 4000],
  [key("seats"), null, 2, 600],
  [key("tokens"), { model: "large", direction: "input" }, 2_000_000, 600],
  [key("tokens"), { model: "small", direction: "input" }, 3_000_000, 300],
  [key("tokens"), { model: "large", direction: "output" }, 333_333, 500],
];

async function expectBadPropertyRefusesTheBatch(apiKey: string) {
  const good: UsageEvent = {
    eventId: crypto.randomUUID(),
    feature: key("tokens"),
    timestamp: new Date().toISOString(),
    properties: { model: "large", direction: "input", tokens: 1 },
  };
  const bad: UsageEvent = { ...good, eventId: crypto.randomUUID(), properties: { Model: "x" } };
  const refused = await send("/usage/events", { token: apiKey, body: { events: [good, bad] } });
  expect(refused.status, JSON.stringify(refused.body)).toBe(422);
  expect(refused.body.message).toBe(
    `Invalid properties in event "${bad.eventId}" (index 1): property key "Model" must match [a-z0-9_]{1,64}`,
  );
  // Nothing of the batch was stored.
  expect((await send(`/usage/events/${good.eventId}`, { token: apiKey })).status).toBe(404);
}

/** The invoice issued by the period's close (pause, then resume), with the upcoming invoice of the paused period. */
async function closePeriod(admin: string, tenantId: string, subscriptionId: string) {
  const own = (path: string, body?: unknown) =>
    send(path, { token: admin, tenant: tenantId, ...(body ? { body } : {}) });
  ok(await own(`/subscriptions/${subscriptionId}/pause`, {}), 201, "pause");
  const upcoming = ok(await own("/invoices/upcoming"), 200, "upcoming while paused");
  ok(await own(`/subscriptions/${subscriptionId}/resume`, {}), 201, "resume");
  const [issued] = ok(await own("/invoices"), 200, "invoices").data;
  return { upcoming, issued };
}

/** The tenant's archive files once they hold `count` events. */
async function archivedFiles(tenantId: string, count: number) {
  const prefix = `usage/tenant=${tenantId}/`;
  const persistTo = inject("stack").billingPersistTo;
  return eventually(
    async () => {
      const files = await readLocalR2Objects(persistTo, "usage-archive", prefix);
      if (files.length === 0) return undefined;
      const [row] = await queryParquet(files, "select count(*) as n from usage_events");
      return Number(row?.n) >= count ? files : undefined;
    },
    `${count} events of tenant ${tenantId} archived`,
    ARCHIVE_BOUND_MS,
  );
}

/** The upcoming invoice's lines and total, and the token groups' aggregates, while the period runs. */
async function expectUpcomingInvoice(admin: string, tenantId: string, apiKey: string) {
  const upcoming = ok(
    await send("/invoices/upcoming", { token: admin, tenant: tenantId }),
    200,
    "upcoming",
  );
  expect(usageLines(upcoming)).toEqual(EXPECTED_LINES);
  expect(upcoming).toMatchObject({ subtotal: 6200, total: 6200 });
  expect(
    upcoming.lineItems
      .filter((line: InvoiceLineBody) => line.featureLookupKey === key("tokens"))
      .map((line: InvoiceLineBody) => line.unitPriceDecimal),
  ).toEqual(["0.03", "0.01", "0.15"]);

  const grouped = await send(`/usage/aggregates?feature=${key("tokens")}&groupBy=model,direction`, {
    token: apiKey,
  });
  const rows = ok(grouped, 200, "aggregates by model and direction").data as {
    dimensions: unknown;
    amount: number;
  }[];
  expect(rows.map((row) => [row.dimensions, row.amount])).toEqual([
    [{ model: "large", direction: "input" }, 2_000_000],
    [{ model: "small", direction: "input" }, 3_000_000],
    [{ model: "large", direction: "output" }, 333_333],
  ]);
}

/** DuckDB over the tenant's archive files: the quantities the invoice lines billed. */
async function expectArchiveReadsBack(tenantId: string) {
  const files = await archivedFiles(tenantId, FILE_EVENTS);
  const archive = `read_parquet('usage/tenant=${tenantId}/*/*.parquet', union_by_name = true)`;
  const tokens = await queryParquet(
    files,
    `select json_extract_string(properties, '$.model') as model,
            json_extract_string(properties, '$.direction') as direction,
            sum(cast(json_extract(properties, '$.tokens') as bigint)) as tokens,
            count(*) as events
       from ${archive}
      where feature = '${key("tokens")}' and status = 'AGGREGATED'
      group by all order by all`,
  );
  expect(tokens).toEqual([
    { model: "large", direction: "input", tokens: 2_000_000, events: 4 },
    { model: "large", direction: "output", tokens: 333_333, events: 1 },
    { model: "small", direction: "input", tokens: 3_000_000, events: 1 },
  ]);
  const [others] = await queryParquet(
    files,
    `select count(distinct json_extract_string(properties, '$.user_id'))
              filter (where feature = '${key("active_users")}') as users,
            max(cast(json_extract(properties, '$.gpus') as integer))
              filter (where feature = '${key("peak_gpus")}') as peak_gpus,
            arg_max(cast(json_extract(properties, '$.seats') as integer), timestamp)
              filter (where feature = '${key("seats")}') as seats,
            count(*) as events
       from ${archive}`,
  );
  expect(others).toEqual({ users: 4, peak_gpus: 8, seats: 12, events: FILE_EVENTS });
}

describe("meters: the worked example, end to end", () => {
  it(
    "bills 6,200 cents in six lines, the upcoming invoice as issued, and DuckDB reads the token groups back",
    async () => {
      const { admin, tenantId, subscription, apiKey } = await workedExampleTenant();
      await expectBadPropertyRefusesTheBatch(apiKey);

      const { first, last, latestAt } = workedExampleEvents(subscription.currentPeriodStart);
      // No timestamp ahead of the clock.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, latestAt - Date.now() + 10)));
      await sendEvents(apiKey, first);
      await sendEvents(apiKey, padding());
      await sendEvents(apiKey, last);
      await eventually(
        async () =>
          (await eventsWith(apiKey, "AGGREGATED")).length === WORKED_EVENTS ? true : undefined,
        "the example's events counted",
        60_000,
      );
      await expectUpcomingInvoice(admin, tenantId, apiKey);

      const { upcoming, issued } = await closePeriod(admin, tenantId, subscription.id);
      expect(usageLines(upcoming)).toEqual(EXPECTED_LINES);
      expect(issued).toMatchObject({ kind: "PERIOD", subtotal: 6200, total: 6200 });
      expect(invoiceContent(issued)).toEqual(invoiceContent(upcoming));

      const rejected = await eventsWith(apiKey, "REJECTED");
      expect(rejected).toHaveLength(PADDING);
      expect(new Set(rejected.map((event) => event.reason))).toEqual(
        new Set(["FEATURE_NOT_ENTITLED"]),
      );
      await expectArchiveReadsBack(tenantId);
    },
    ARCHIVE_BOUND_MS + 90_000,
  );
});
