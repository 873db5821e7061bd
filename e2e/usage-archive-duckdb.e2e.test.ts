import { describe, expect, inject, it } from "vitest";
import {
  type Caller,
  createApiKey,
  createFeature,
  createPlanWithPrice,
  createTenant,
  grantEntitlement,
  loginDevAdmin,
  sendTo,
  subscribe,
} from "./lib/billing-api.ts";
import { queryParquet } from "./lib/duckdb.ts";
import { readLocalR2Objects } from "./lib/local-r2.ts";

// The usage archive read by another engine: a tenant's events go through
// the running stack (ingestion, validation, counter flush into
// usage_aggregates, then the usage log's Parquet files in R2), and DuckDB
// reading the tenant's files out of the stack's local R2 bucket sums
// exactly what usage_aggregates holds. The suite's stack archives in files
// of exactly 200 events once they have settled for 5 s, so a few hundred events
// make whole files within seconds of being aggregated.

const FILE_EVENTS = 200;
const VALID = 580;
const REJECTED = 20;
const ARCHIVE_BOUND_MS = 180_000;

const stack = () => inject("stack");

const apiUrl = () => `${stack().billingUrl}/api/v1`;

async function archivedTenant() {
  const suffix = crypto.randomUUID().slice(0, 8);
  const admin: Caller = { token: await loginDevAdmin(apiUrl()), apiUrl: apiUrl() };
  const features = await Promise.all(
    ["calls", "bytes"].map((name) =>
      createFeature(admin, {
        name: `Archive ${name} ${suffix}`,
        lookupKey: `archive_${name}_${suffix}`,
        type: "METERED",
        unit: name,
      }),
    ),
  );
  const { plan, price } = await createPlanWithPrice(
    admin,
    { name: `Archive ${suffix}`, slug: `archive-${suffix}` },
    { interval: "MONTHLY", amount: 0, currency: "usd" },
  );
  for (const feature of features) {
    await grantEntitlement(admin, plan.id, feature.id, {
      includedAmount: 0,
      overagePrice: 1,
      resetPeriod: "MONTHLY",
    });
  }
  const tenant = await createTenant(admin, `Archive ${suffix}`);
  const asTenant: Caller = { ...admin, tenantId: tenant.id };
  await subscribe(asTenant, { planId: plan.id, priceId: price.id });
  const apiKey = await createApiKey(asTenant, "archive e2e");
  return { tenantId: tenant.id as string, apiKey, features: features.map((f) => f.lookupKey) };
}

describe("usage archive read back with DuckDB", () => {
  it(
    "a tenant's Parquet files in R2 give exactly its usage_aggregates",
    async () => {
      const { tenantId, apiKey, features } = await archivedTenant();
      const now = Date.now();
      const events = [
        ...Array.from({ length: VALID }, (_, index) => ({
          eventId: crypto.randomUUID(),
          feature: features[index % features.length],
          amount: 1 + Math.floor(Math.random() * 1_000),
          timestamp: new Date(now - Math.floor(Math.random() * 3_600_000)).toISOString(),
          metadata: { index },
        })),
        ...Array.from({ length: REJECTED }, () => ({
          eventId: crypto.randomUUID(),
          feature: "not_in_the_plan",
          amount: 1,
          timestamp: new Date(now).toISOString(),
        })),
      ];
      const ingested = await sendTo(apiUrl(), "/usage/events", {
        token: apiKey,
        body: { events },
      });
      expect(ingested.status).toBe(202);
      expect(ingested.body.accepted).toBe(VALID + REJECTED);

      const expectedUnits = events.slice(0, VALID).reduce((sum, event) => sum + event.amount, 0);
      const aggregates = async () =>
        (await sendTo(apiUrl(), "/usage/aggregates", { token: apiKey })).body.data as {
          subscriptionId: string;
          feature: string;
          periodKey: string;
          amount: number;
        }[];
      const deadline = Date.now() + ARCHIVE_BOUND_MS;
      let rows = await aggregates();
      while (rows.reduce((sum, row) => sum + row.amount, 0) !== expectedUnits) {
        if (Date.now() > deadline) throw new Error("events not aggregated in time");
        await new Promise((resolve) => setTimeout(resolve, 500));
        rows = await aggregates();
      }

      // Every event finished: the files come once they have settled.
      const prefix = `usage/tenant=${tenantId}/`;
      let files = await readLocalR2Objects(stack().billingPersistTo, "usage-archive", prefix);
      const archivedCount = async () =>
        files.length === 0
          ? 0
          : Number((await queryParquet(files, "select count(*) as n from usage_events"))[0]?.n);
      while ((await archivedCount()) < VALID + REJECTED) {
        if (Date.now() > deadline) {
          throw new Error(`only ${await archivedCount()} events archived in time`);
        }
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        files = await readLocalR2Objects(stack().billingPersistTo, "usage-archive", prefix);
      }
      expect(files.length).toBe((VALID + REJECTED) / FILE_EVENTS);
      expect(files.every((file) => /\/date=\d{4}-\d{2}-\d{2}\/.+\.parquet$/.test(file.key))).toBe(
        true,
      );

      const fromDuckDb = await queryParquet(
        files,
        `select subscription_id, feature, period_key, sum(amount) as amount
           from usage_events where status = 'AGGREGATED'
          group by all order by all`,
      );
      const fromAggregates = rows
        .map((row) => ({
          subscription_id: row.subscriptionId,
          feature: row.feature,
          period_key: row.periodKey,
          amount: row.amount,
        }))
        .sort((a, b) =>
          `${a.subscription_id}|${a.feature}|${a.period_key}` <
          `${b.subscription_id}|${b.feature}|${b.period_key}`
            ? -1
            : 1,
        );
      expect(fromDuckDb).toEqual(fromAggregates);

      const [summary] = await queryParquet(
        files,
        `select count(distinct event_id) as ids, count(*) filter (where status = 'REJECTED') as rejected,
                count(distinct tenant_id) as tenants, any_value(tenant_id) as tenant
           from usage_events`,
      );
      expect(summary).toEqual({
        ids: VALID + REJECTED,
        rejected: REJECTED,
        tenants: 1,
        tenant: tenantId,
      });
      const ids = await queryParquet(files, "select event_id from usage_events");
      expect(new Set(ids.map((row) => row.event_id))).toEqual(
        new Set(events.map((event) => event.eventId)),
      );
    },
    ARCHIVE_BOUND_MS + 60_000,
  );
});
