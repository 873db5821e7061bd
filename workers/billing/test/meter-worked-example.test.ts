import { addMonthsClamped } from "@edge-platform/shared/billing/billing-period";
import {
  type InvoiceLineBody,
  invoiceContent,
} from "@edge-platform/shared/testing/invoice-content";
import { beforeAll, describe, expect, it } from "vitest";
import { asTenant, runCycle, steerableProvider } from "./billing-helpers.ts";
import {
  createFeature,
  createPlan,
  createPrice,
  grant,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { type Account, register } from "./helpers.ts";
import { pipelineEvent, recordThroughPipeline } from "./meter-helpers.ts";

// The meters' worked example, every amount derived by hand: an AI API with
// tokens priced per model and direction at fractions of a cent, monthly
// active users, peak GPUs and seats by their latest value, on a plan with
// no base fee. The upcoming invoice equals the invoice the cycle issues.

let admin: Account;
beforeAll(async () => {
  admin = await platformAdmin();
});

async function workedExamplePlan() {
  const feature = (name: string, meter: Record<string, unknown>) =>
    createFeature(admin, "METERED", { name, meter });
  const tokens = await feature("Tokens", {
    aggregation: "SUM",
    property: "tokens",
    groupBy: ["model", "direction"],
  });
  const users = await feature("Active users", { aggregation: "UNIQUE_COUNT", property: "user_id" });
  const gpus = await feature("Peak GPUs", { aggregation: "MAX", property: "gpus" });
  const seats = await feature("Seats", { aggregation: "LATEST", property: "seats" });
  const plan = await createPlan(admin);
  const monthly = { resetPeriod: "MONTHLY" };
  await grant(admin, plan.id, tokens.id, {
    ...monthly,
    overagePriceDecimal: "0.01",
    dimensions: [
      { match: { model: "large", direction: "input" }, overagePriceDecimal: "0.03" },
      { match: { model: "large", direction: "output" }, overagePriceDecimal: "0.15" },
    ],
  });
  await grant(admin, plan.id, users.id, { ...monthly, includedAmount: 2, overagePrice: 10_000 });
  await grant(admin, plan.id, gpus.id, { ...monthly, overagePrice: 50_000 });
  await grant(admin, plan.id, seats.id, { ...monthly, includedAmount: 10, overagePrice: 30_000 });
  const price = await createPrice(admin, plan.id, { amount: 0 });
  return { plan, price, keys: { tokens, users, gpus, seats } };
}

describe("meters: the worked example", () => {
  it("bills 600 + 500 + 300 (tokens) + 200 (users) + 4,000 (peak GPUs) + 600 (seats) = 6,200 cents, the upcoming invoice as issued", async () => {
    const { plan, price, keys } = await workedExamplePlan();
    const owner = await register();
    const subscription = await subscribe(owner, plan.id, price.id);
    const fixture = {
      tenantId: owner.tenant.id,
      subscriptionId: subscription.id,
      startedAt: new Date(subscription.startedAt),
    };
    const start = Date.parse(subscription.currentPeriodStart);
    const at = (minutes: number) => new Date(start + minutes * 60_000).toISOString();
    const token = (model: string, direction: string, tokens: number, minute: number) =>
      pipelineEvent(keys.tokens.lookupKey, { model, direction, tokens }, at(minute));
    await recordThroughPipeline(fixture, [
      token("large", "input", 500_000, 1),
      token("large", "input", 700_000, 2),
      token("large", "input", 300_000, 3),
      token("large", "input", 500_000, 4),
      token("large", "output", 333_333, 5),
      token("small", "input", 3_000_000, 6),
      ...["u1", "u2", "u3", "u1", "u2", "u4", "u1"].map((user, index) =>
        pipelineEvent(keys.users.lookupKey, { user_id: user }, at(10 + index)),
      ),
      ...[3, 8, 5].map((gpus, index) =>
        pipelineEvent(keys.gpus.lookupKey, { gpus }, at(20 + index)),
      ),
    ]);
    // Seats: 10 at t1, 15 at t2, 12 at t3, sent in the order t1, t3, t2.
    await recordThroughPipeline(fixture, [
      pipelineEvent(keys.seats.lookupKey, { seats: 10 }, at(30)),
      pipelineEvent(keys.seats.lookupKey, { seats: 12 }, at(32)),
    ]);
    await recordThroughPipeline(fixture, [
      pipelineEvent(keys.seats.lookupKey, { seats: 15 }, at(31)),
    ]);

    const upcoming = await asTenant(owner, owner.tenant.id)("/api/v1/invoices/upcoming");
    expect(upcoming.status, JSON.stringify(upcoming.body)).toBe(200);
    const usage = upcoming.body.lineItems
      .filter((line: InvoiceLineBody) => line.kind === "USAGE")
      .map((line: InvoiceLineBody & { dimensions: unknown }) => [
        line.featureLookupKey,
        line.dimensions,
        line.quantity,
        line.amount,
      ]);
    expect(usage).toEqual(
      expect.arrayContaining([
        // 2,000,000 x 0.03 micro-cents = 60,000 micro-cents
        [keys.tokens.lookupKey, { model: "large", direction: "input" }, 2_000_000, 600],
        // 333,333 x 0.15 = 49,999.95 micro-cents = 499.9995 cents, rounded half up once
        [keys.tokens.lookupKey, { model: "large", direction: "output" }, 333_333, 500],
        // 3,000,000 x 0.01 (no entry matches: the entitlement's own price)
        [keys.tokens.lookupKey, { model: "small", direction: "input" }, 3_000_000, 300],
        // 4 distinct users, 2 included, 100 cents each beyond
        [keys.users.lookupKey, null, 2, 200],
        // peak of 3, 8, 5 at 500 cents each
        [keys.gpus.lookupKey, null, 8, 4000],
        // the latest by timestamp is 12 (not 15, the last to arrive): 2 beyond 10 at 300 cents
        [keys.seats.lookupKey, null, 2, 600],
      ]),
    );
    expect(usage).toHaveLength(6);
    expect(upcoming.body).toMatchObject({ subtotal: 6200, total: 6200 });

    const close = new Date(addMonthsClamped(new Date(start), 1).getTime() + 60_000);
    const report = await runCycle(close, steerableProvider("pending").provider, [owner.tenant.id]);
    expect(report).toMatchObject({ closed: 1, closeFailures: 0 });
    const list = await asTenant(owner, owner.tenant.id)("/api/v1/invoices?limit=10");
    const closed = list.body.data.find(
      (invoice: { kind: string; periodStart: string }) =>
        invoice.kind === "PERIOD" && invoice.periodStart === subscription.currentPeriodStart,
    );
    expect(closed).toMatchObject({ total: 6200 });
    expect(invoiceContent(upcoming.body)).toEqual(invoiceContent(closed));
  });
});
