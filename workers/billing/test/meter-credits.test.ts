import { beforeAll, describe, expect, it } from "vitest";
import { asTenant } from "./billing-helpers.ts";
import {
  createFeature,
  createPlan,
  createPrice,
  grant,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { type Account, type Json, register } from "./helpers.ts";
import { pipelineEvent, recordThroughPipeline } from "./meter-helpers.ts";
import { progressiveInvoices } from "./progressive-helpers.ts";

// Prepaid credit pays for a grouped feature's usage at each group's price:
// what the counter draws for a group's events is what the group's USAGE
// line charges, so the invoice's CREDITS lines take off exactly the usage.

let admin: Account;
beforeAll(async () => {
  admin = await platformAdmin();
});

describe("prepaid credit and meter groups", () => {
  it("draws each group's events at the group's price and included amount, and the invoice credits exactly the usage lines", async () => {
    const tokens = await createFeature(admin, "METERED", {
      meter: { aggregation: "SUM", property: "tokens", groupBy: ["model"] },
    });
    const plan = await createPlan(admin);
    await grant(admin, plan.id, tokens.id, {
      resetPeriod: "MONTHLY",
      overagePrice: 100,
      dimensions: [{ match: { model: "large" }, includedAmount: 10, overagePrice: 1_000 }],
    });
    const price = await createPrice(admin, plan.id, { amount: 0, prepaid: true });
    const owner = await register();
    const tenantId = owner.tenant.id as string;
    const subscription = await subscribe(owner, plan.id, price.id);
    const granted = await asTenant(admin, tenantId)("/api/v1/credit-grants", {
      body: { currency: "usd", amount: 5_000, category: "promotional" },
    });
    expect(granted.status, JSON.stringify(granted.body)).toBe(201);

    const fixture = {
      tenantId,
      subscriptionId: subscription.id,
      startedAt: new Date(subscription.startedAt),
    };
    const at = new Date(Date.parse(subscription.currentPeriodStart) + 60_000).toISOString();
    await recordThroughPipeline(fixture, [
      // large: 30 tokens, 10 included, 20 x 1,000 micro-cents = 200 cents
      pipelineEvent(tokens.lookupKey, { model: "large", tokens: 5 }, at),
      pipelineEvent(tokens.lookupKey, { model: "large", tokens: 25 }, at),
      // small: 700 tokens at the entitlement's 100 micro-cents, nothing included = 700 cents
      pipelineEvent(tokens.lookupKey, { model: "small", tokens: 700 }, at),
    ]);
    const balance = (await asTenant(admin, tenantId)("/api/v1/credits")).body;
    expect(balance.balance).toBe(5_000 - 200 - 700);

    const upcoming = (await asTenant(owner, tenantId)("/api/v1/invoices/upcoming")).body;
    expect(
      upcoming.lineItems.map((line: Json) => [line.kind, line.dimensions ?? null, line.amount]),
    ).toEqual([
      ["BASE", null, 0],
      ["USAGE", { model: "large" }, 200],
      ["USAGE", { model: "small" }, 700],
      ["CREDITS", null, -900],
    ]);
    expect(upcoming).toMatchObject({ subtotal: 0, total: 0 });
  });

  it("a progressive invoice bills each group on its own line, at the group's price", async () => {
    const tokens = await createFeature(admin, "METERED", {
      meter: { aggregation: "SUM", property: "tokens", groupBy: ["model"] },
    });
    const plan = await createPlan(admin);
    await grant(admin, plan.id, tokens.id, {
      resetPeriod: "MONTHLY",
      overagePrice: 100,
      dimensions: [{ match: { model: "large" }, overagePrice: 1_000 }],
    });
    const price = await createPrice(admin, plan.id, {
      amount: 0,
      usageThresholds: [{ amount: 500 }],
    });
    const owner = await register();
    const subscription = await subscribe(owner, plan.id, price.id);
    const fixture = {
      tenantId: owner.tenant.id as string,
      subscriptionId: subscription.id,
      startedAt: new Date(subscription.startedAt),
    };
    const at = new Date(Date.parse(subscription.currentPeriodStart) + 60_000).toISOString();
    // large: 40 x 1,000 micro-cents = 400 cents; small: 300 x 100 = 300 cents: 700 passes 500.
    await recordThroughPipeline(fixture, [
      pipelineEvent(tokens.lookupKey, { model: "large", tokens: 40 }, at),
      pipelineEvent(tokens.lookupKey, { model: "small", tokens: 300 }, at),
    ]);
    const [progressive] = await progressiveInvoices(owner, 1);
    expect(
      progressive.lineItems.map((line: Json) => [line.kind, line.dimensions, line.amount]),
    ).toEqual([
      ["USAGE", { model: "large" }, 400],
      ["USAGE", { model: "small" }, 300],
    ]);
  });
});
