import { addMonthsClamped, MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import { invoiceContent } from "@edge-platform/shared/testing/invoice-content";
import { beforeAll, describe, expect, it } from "vitest";
import {
  asTenant,
  atWallClock,
  consumeAt,
  runCycle,
  steerableProvider,
} from "./billing-helpers.ts";
import {
  createFeature,
  createPlan,
  createPrice,
  grant,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { type Account, call, expectError, type Json, register } from "./helpers.ts";

// Graduated, volume and package pricing, from the catalog to the invoice the
// billing cycle issues, with the upcoming invoice equal to it.

const MINUTE = 60_000;
const TIERS = [
  { upTo: 1000, unitPrice: 200 },
  { upTo: 5000, unitPrice: 100 },
  { upTo: null, unitPrice: 50 },
];
const GRADUATED = { model: "graduated", tiers: TIERS };
const VOLUME = { model: "volume", tiers: TIERS };
const PACKAGE = { model: "package", packageSize: 1000, packagePrice: 700 };

let admin: Account;
beforeAll(async () => {
  admin = await platformAdmin();
});

/** A monthly plan at `amount` cents with one METERED feature priced by `pricing`. */
async function pricedPlan(pricing: unknown, includedAmount = 100, amount = 2900) {
  const plan = await createPlan(admin, { name: `Priced ${amount}` });
  const price = await createPrice(admin, plan.id, { interval: "MONTHLY", amount });
  const calls = await createFeature(admin, "METERED");
  const entitlement = await grant(admin, plan.id, calls.id, {
    includedAmount,
    pricing,
    resetPeriod: "MONTHLY",
  });
  return { planId: plan.id, priceId: price.id, key: calls.lookupKey, entitlement };
}

async function upcomingOf(owner: Account) {
  const result = await asTenant(owner, owner.tenant.id)("/api/v1/invoices/upcoming");
  expect(result.status, JSON.stringify(result.body)).toBe(200);
  return result.body;
}

async function invoicesOf(owner: Account): Promise<Json[]> {
  const list = await asTenant(owner, owner.tenant.id)("/api/v1/invoices?limit=100");
  expect(list.status).toBe(200);
  return list.body.data;
}

const usageLines = (invoice: Json) =>
  invoice.lineItems.filter((line: Json) => line.kind === "USAGE");

describe("charge models on the invoice: 6,100 used, 100 included", () => {
  const cases = [
    {
      name: "graduated",
      pricing: GRADUATED,
      // 1,000 x 200 + 4,000 x 100 + 1,000 x 50 = 650,000 micro-cents
      amount: 6500,
      pricingOnLine: {
        model: "graduated",
        tiers: [
          { from: 1, upTo: 1000, units: 1000, unitPrice: 200, flatFee: 0 },
          { from: 1001, upTo: 5000, units: 4000, unitPrice: 100, flatFee: 0 },
          { from: 5001, upTo: null, units: 1000, unitPrice: 50, flatFee: 0 },
        ],
      },
      describes: /graduated: 1,000 x 0\.02 USD \(tier 1-1,000\) \+ 4,000 x 0\.01 USD/,
    },
    {
      name: "volume",
      pricing: VOLUME,
      // 6,000 x 50 = 300,000 micro-cents
      amount: 3000,
      pricingOnLine: {
        model: "volume",
        tiers: [{ from: 5001, upTo: null, units: 6000, unitPrice: 50, flatFee: 0 }],
      },
      describes: /volume: 6,000 x 0\.005 USD \(tier 5,001\+\)/,
    },
    {
      name: "package",
      pricing: PACKAGE,
      // 6 started packages of 1,000 x 700 cents
      amount: 4200,
      pricingOnLine: {
        model: "package",
        packages: { count: 6, packageSize: 1000, packagePrice: 700 },
      },
      describes: /package: 6 x 7\.00 USD per 1,000 units/,
    },
  ];

  for (const example of cases) {
    it(`${example.name}: ${example.amount} cents, the tiers on the line, and the upcoming invoice equals the issued one`, async () => {
      const plan = await pricedPlan(example.pricing);
      expect(plan.entitlement.pricing).toEqual(example.pricing);
      const owner = await register();
      const subscription = await subscribe(owner, plan.planId, plan.priceId);
      expect(subscription.entitlementSnapshots[0].pricing).toEqual(example.pricing);
      const t0 = new Date(subscription.startedAt);
      await consumeAt(owner.tenant.id, plan.key, 6100, new Date(t0.getTime() + MS_PER_DAY));

      const upcoming = await upcomingOf(owner);
      expect(upcoming.subtotal).toBe(2900 + example.amount);
      expect(upcoming.total).toBe(2900 + example.amount);
      const [line] = usageLines(upcoming);
      expect(line).toMatchObject({
        quantity: 6000,
        amount: example.amount,
        pricing: example.pricingOnLine,
      });
      expect(line.description).toMatch(/\(6,100 used, 100 included\)/);
      expect(line.description).toMatch(example.describes);

      const close = new Date(addMonthsClamped(t0, 1).getTime() + MINUTE);
      const report = await runCycle(close, steerableProvider("pending").provider, [
        owner.tenant.id,
      ]);
      expect(report).toMatchObject({ closed: 1, closeFailures: 0 });
      const [issued] = await invoicesOf(owner);
      expect(issued).toMatchObject({ status: "OPEN", total: 2900 + example.amount });
      expect(invoiceContent(upcoming)).toEqual(invoiceContent(issued));
    });
  }

  it("a SOFT quota prices its units beyond the limit by a charge model too", async () => {
    const plan = await createPlan(admin);
    const price = await createPrice(admin, plan.id, { amount: 0 });
    const seats = await createFeature(admin, "QUOTA");
    await grant(admin, plan.id, seats.id, {
      limit: 100,
      limitBehavior: "SOFT",
      pricing: GRADUATED,
      resetPeriod: "MONTHLY",
    });
    const owner = await register();
    const subscription = await subscribe(owner, plan.id, price.id);
    const t0 = new Date(subscription.startedAt);
    await consumeAt(owner.tenant.id, seats.lookupKey, 6100, t0);
    const upcoming = await upcomingOf(owner);
    expect(usageLines(upcoming)).toMatchObject([{ quantity: 6000, amount: 6500 }]);
    await runCycle(
      new Date(addMonthsClamped(t0, 1).getTime() + MINUTE),
      steerableProvider("pending").provider,
      [owner.tenant.id],
    );
    const [issued] = await invoicesOf(owner);
    expect(invoiceContent(upcoming)).toEqual(invoiceContent(issued));
  });
});

describe("a tiered charge across a mid-period plan change", () => {
  it("prices each subscription's own billed units from the first tier, on its own invoice, and the upcoming invoice equals the issued one", async () => {
    // Both plans graduated, nothing included, so every unit is billed.
    const starter = await pricedPlan(GRADUATED, 0, 0);
    const scale = await pricedPlan(
      {
        model: "graduated",
        tiers: [
          { upTo: 2000, unitPrice: 150, flatFee: 1000 },
          { upTo: null, unitPrice: 40 },
        ],
      },
      0,
      0,
    );
    const owner = await register();
    const tenantId = owner.tenant.id;
    const subscribeAt = (plan: { planId: string; priceId: string }, at: Date) =>
      atWallClock(at, owner, (session) =>
        call("/api/v1/subscriptions", {
          token: session.accessToken,
          tenant: tenantId,
          body: { planId: plan.planId, priceId: plan.priceId },
        }),
      );
    const first = await subscribeAt(starter, new Date("2032-03-01T00:00:00.000Z"));
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    await consumeAt(tenantId, starter.key, 1500, new Date("2032-03-05T00:00:00.000Z"));
    const changed = await subscribeAt(scale, new Date("2032-03-16T00:00:00.000Z"));
    expect(changed.status, JSON.stringify(changed.body)).toBe(201);
    await consumeAt(tenantId, scale.key, 3000, new Date("2032-03-20T00:00:00.000Z"));

    const upcoming = await upcomingOf(owner);
    await runCycle(new Date("2032-04-01T00:01:00.000Z"), steerableProvider("pending").provider, [
      tenantId,
    ]);
    const invoices = await invoicesOf(owner);
    const proration = invoices.find((invoice) => invoice.kind === "PRORATION");
    const period = invoices.find((invoice) => invoice.kind === "PERIOD");

    // The old plan's 1,500 units from its first tier:
    // 1,000 x 200 + 500 x 100 = 250,000 micro-cents = 2,500 cents.
    expect(usageLines(proration)).toMatchObject([
      {
        featureLookupKey: starter.key,
        quantity: 1500,
        amount: 2500,
        pricing: {
          model: "graduated",
          tiers: [
            { from: 1, upTo: 1000, units: 1000, unitPrice: 200, flatFee: 0 },
            { from: 1001, upTo: 5000, units: 500, unitPrice: 100, flatFee: 0 },
          ],
        },
      },
    ]);
    // The new plan's 3,000 units from ITS first tier, not from unit 1,501:
    // 2,000 x 150 + 1,000 fee + 1,000 x 40 = 300,000 + 100,000 + 40,000 = 440,000 micro-cents.
    expect(usageLines(period)).toMatchObject([
      { featureLookupKey: scale.key, quantity: 3000, amount: 4400 },
    ]);
    expect(period.total).toBe(4400);
    expect(invoiceContent(upcoming)).toEqual(invoiceContent(period));
  });
});

describe("catalog rules for pricing", () => {
  let featureId: string;
  let planId: string;
  beforeAll(async () => {
    planId = (await createPlan(admin)).id;
    featureId = (await createFeature(admin, "METERED")).id;
  });
  const create = (terms: Record<string, unknown>) =>
    call(`/api/v1/plans/${planId}/entitlements`, {
      token: admin.accessToken,
      body: { featureId, resetPeriod: "MONTHLY", ...terms },
    });

  it("refuses overagePrice together with pricing", async () => {
    expectError(await create({ overagePrice: 10, pricing: GRADUATED }), 400, /cannot both be set/);
  });

  it("refuses tiers that do not strictly increase, a missing or early open tier, more than 20 tiers, and negative or fractional numbers", async () => {
    const tiered = (tiers: unknown) => create({ pricing: { model: "graduated", tiers } });
    const message = (result: Json) => JSON.stringify(result.body.message);
    const decreasing = await tiered([
      { upTo: 5000, unitPrice: 100 },
      { upTo: 1000, unitPrice: 50 },
      { upTo: null, unitPrice: 10 },
    ]);
    expectError(decreasing, 400);
    expect(message(decreasing)).toMatch(/tiers\[1\]\.upTo must be greater than the previous tier/);
    const closed = await tiered([{ upTo: 1000, unitPrice: 100 }]);
    expectError(closed, 400);
    expect(message(closed)).toMatch(/last tier must be open/);
    const twoOpen = await tiered([
      { upTo: null, unitPrice: 100 },
      { upTo: null, unitPrice: 50 },
    ]);
    expect(message(twoOpen)).toMatch(/only the last tier may be open/);
    const many = await tiered(
      Array.from({ length: 21 }, (_, index) => ({
        upTo: index === 20 ? null : index + 1,
        unitPrice: 1,
      })),
    );
    expect(message(many)).toMatch(/at most 20 tiers/);
    const negative = await tiered([{ upTo: null, unitPrice: -1 }]);
    expectError(negative, 400);
    expect(message(negative)).toMatch(/unitPrice must not be negative/);
    const fractional = await tiered([
      { upTo: 10.5, unitPrice: 1 },
      { upTo: null, unitPrice: 1 },
    ]);
    expect(message(fractional)).toMatch(/upTo must be a whole number/);
    const badPackage = await create({
      pricing: { model: "package", packageSize: 0, packagePrice: 700 },
    });
    expect(message(badPackage)).toMatch(/packageSize must be a whole number of units, at least 1/);
    const unknownModel = await create({ pricing: { model: "percentage", rate: 1 } });
    expectError(unknownModel, 400);
    const unknownField = await tiered([{ upTo: null, unitPrice: 1, discount: 5 }]);
    expectError(unknownField, 400);
  });

  it("refuses pricing on a HARD quota; switching a price to pricing means clearing overagePrice", async () => {
    const quota = await createFeature(admin, "QUOTA");
    const hard = await call(`/api/v1/plans/${planId}/entitlements`, {
      token: admin.accessToken,
      body: {
        featureId: quota.id,
        limit: 5,
        limitBehavior: "HARD",
        pricing: PACKAGE,
        resetPeriod: "MONTHLY",
      },
    });
    expectError(hard, 400, /HARD quotas do not accept "overagePrice" or "pricing"/);

    const perUnit = await create({ overagePrice: 10 });
    expect(perUnit.status, JSON.stringify(perUnit.body)).toBe(201);
    const path = `/api/v1/plans/${planId}/entitlements/${perUnit.body.id}`;
    const both = await call(path, {
      token: admin.accessToken,
      method: "PATCH",
      body: { pricing: VOLUME },
    });
    expectError(both, 400, /cannot both be set/);
    const switched = await call(path, {
      token: admin.accessToken,
      method: "PATCH",
      body: { pricing: VOLUME, overagePrice: null },
    });
    expect(switched.status, JSON.stringify(switched.body)).toBe(200);
    expect(switched.body).toMatchObject({ overagePrice: null, pricing: VOLUME });
    const read = await call(path);
    expect(read.body.pricing).toEqual(VOLUME);
  });
});
