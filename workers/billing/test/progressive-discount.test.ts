import { env } from "cloudflare:workers";
import { addMonthsClamped, MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import { invoiceContent } from "@edge-platform/shared/testing/invoice-content";
import { beforeAll, describe, expect, it } from "vitest";
import { asTenant, consumeAt, runCycle, steerableProvider } from "./billing-helpers.ts";
import { platformAdmin, subscribe, uniqueKey } from "./catalog-helpers.ts";
import { type Account, call, type Json, register } from "./helpers.ts";
import {
  invoicesOfKind,
  linesOf,
  type ProgressivePlan,
  progressiveInvoices,
  progressivePlan,
} from "./progressive-helpers.ts";

// A coupon discounts usage the same way whether it is billed on a
// progressive invoice or on the period's own invoice: the coupon's discount
// is for the period as a whole, spread over the period's invoices.
//
// Two plans alike but for one threshold: 10.00 a month, 10 cents a unit.
// Each tenant uses 61 units on day 1 and 81 more on day 2, so the period's
// charges are 1,000 + 142 x 10 = 2,420. With the threshold (500 cents) the
// first 61 units (610) are billed on a PROGRESSIVE invoice as they pass it.

const MINUTE = 60_000;
const PER_UNIT = { model: "graduated", tiers: [{ upTo: null, unitPrice: 1000 }] };

let admin: Account;
let withThreshold: ProgressivePlan;
let withoutThreshold: ProgressivePlan;

beforeAll(async () => {
  admin = await platformAdmin();
  withThreshold = await progressivePlan(admin, {
    amount: 1000,
    pricing: PER_UNIT,
    usageThresholds: [{ amount: 500 }],
  });
  withoutThreshold = await progressivePlan(admin, { amount: 1000, pricing: PER_UNIT });
});

async function coupon(body: Record<string, unknown>) {
  const created = await call("/api/v1/coupons", {
    token: admin.accessToken,
    body: { code: uniqueKey("c").toUpperCase().slice(0, 40), ...body },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

const redemptionOf = (tenantId: string) =>
  env.DB.prepare(
    "SELECT invoices_discounted AS used, ended_at AS ended FROM coupon_redemptions WHERE tenant_id = ?",
  )
    .bind(tenantId)
    .first<{ used: number; ended: string | null }>();

async function upcomingOf(owner: Account) {
  const result = await asTenant(owner, owner.tenant.id)("/api/v1/invoices/upcoming");
  expect(result.status, JSON.stringify(result.body)).toBe(200);
  return result.body;
}

/**
 * A tenant on `plan` with the coupon, its 61 + 81 units, and its period
 * closed: the period's invoices (progressive ones first) and the upcoming
 * invoice read just before the close.
 */
async function billedPeriod(plan: ProgressivePlan, couponCode: string) {
  const owner = await register();
  const subscription = await subscribe(owner, plan.planId, plan.priceId, { couponCode });
  const t0 = new Date(subscription.startedAt);
  await consumeAt(owner.tenant.id, plan.key, 61, new Date(t0.getTime() + MS_PER_DAY));
  const progressive = plan === withThreshold ? await progressiveInvoices(owner, 1) : [];
  await consumeAt(owner.tenant.id, plan.key, 81, new Date(t0.getTime() + 2 * MS_PER_DAY));
  const upcoming = await upcomingOf(owner);
  const report = await runCycle(
    new Date(addMonthsClamped(t0, 1).getTime() + MINUTE),
    steerableProvider("pending").provider,
    [owner.tenant.id],
  );
  expect(report).toMatchObject({ closed: 1, closeFailures: 0 });
  const [period] = await invoicesOfKind(owner, "PERIOD");
  return { owner, progressive, period: period as Json, upcoming };
}

const sum = (invoices: Json[], field: string) =>
  invoices.reduce((total, invoice) => total + invoice[field], 0);

describe("a coupon on usage billed progressively", () => {
  it("percentOff: the period's invoices add up to what one period invoice costs, rounded once over the period", async () => {
    const once = await coupon({ percentOff: 25, duration: "once" });
    const plain = await billedPeriod(withoutThreshold, once.code);
    // 25% of 2,420 = 605.
    expect(plain.period).toMatchObject({ subtotal: 2420, discount: 605, total: 1815 });

    const split = await billedPeriod(withThreshold, once.code);
    const [progressive] = split.progressive as [Json];
    // 25% of 610 = 152.5 -> 153.
    expect(linesOf(progressive)).toEqual([
      ["USAGE", 610],
      ["DISCOUNT", -153],
    ]);
    expect(progressive).toMatchObject({ subtotal: 610, discount: 153, total: 457 });
    // The period's discount is 605 on its 2,420 less the 153 already taken, not
    // 25% of its own 1,810 (452.5 -> 453, one cent more in all).
    expect(linesOf(split.period)).toEqual([
      ["BASE", 1000],
      ["USAGE", 1420],
      ["PROGRESSIVE_BILLED", -610],
      ["DISCOUNT", -452],
    ]);
    expect(split.period.lineItems[3].description).toBe(
      `Discount: ${once.code} (25% off) on the whole period, less what its progressive invoices were discounted`,
    );
    expect(split.period).toMatchObject({ subtotal: 1810, discount: 452, total: 1358 });
    const invoices = [progressive, split.period];
    expect(sum(invoices, "total")).toBe(plain.period.total);
    expect(sum(invoices, "discount")).toBe(plain.period.discount);
    expect(invoiceContent(split.upcoming)).toEqual(invoiceContent(split.period));

    // Only the period's own invoice is one of the redemption's periods: the
    // `once` coupon discounted both invoices and ended with the second.
    expect(await redemptionOf(split.owner.tenant.id)).toMatchObject({
      used: 1,
      ended: expect.any(String),
    });
  });

  it("amountOff: the amount is for the period, spread over its invoices, never more in total", async () => {
    const twentyDollars = await coupon({ amountOff: 2000, currency: "usd", duration: "forever" });
    const plain = await billedPeriod(withoutThreshold, twentyDollars.code);
    expect(plain.period).toMatchObject({ subtotal: 2420, discount: 2000, total: 420 });

    const split = await billedPeriod(withThreshold, twentyDollars.code);
    const [progressive] = split.progressive as [Json];
    // 2,000 off covers the whole 610.
    expect(progressive).toMatchObject({ subtotal: 610, discount: 610, total: 0 });
    // What is left of the 2,000 for the period: 1,390, not another 2,000 capped at 1,810.
    expect(split.period).toMatchObject({ subtotal: 1810, discount: 1390, total: 420 });
    expect(sum([progressive, split.period], "discount")).toBe(2000);
    expect(sum([progressive, split.period], "total")).toBe(plain.period.total);
    expect(invoiceContent(split.upcoming)).toEqual(invoiceContent(split.period));
  });

  it("a PROGRESSIVE invoice neither uses a period of the redemption nor, voided, gives one back", async () => {
    const once = await coupon({ percentOff: 25, duration: "once" });
    const owner = await register();
    const tenantId = owner.tenant.id as string;
    const subscription = await subscribe(owner, withThreshold.planId, withThreshold.priceId, {
      couponCode: once.code,
    });
    const t0 = new Date(subscription.startedAt);
    await consumeAt(tenantId, withThreshold.key, 61, new Date(t0.getTime() + MS_PER_DAY));
    const [progressive] = (await progressiveInvoices(owner, 1)) as [Json];
    expect(progressive.discount).toBe(153);
    expect(await redemptionOf(tenantId)).toEqual({ used: 0, ended: null });

    const voided = await asTenant(admin, tenantId)(`/api/v1/invoices/${progressive.id}/void`, {
      method: "POST",
    });
    expect(voided.status, JSON.stringify(voided.body)).toBe(201);
    expect(await redemptionOf(tenantId)).toEqual({ used: 0, ended: null });

    // The voided invoice billed nothing: the period's invoice bills all 61
    // units, discounted on its own as if no threshold had fired.
    await runCycle(
      new Date(addMonthsClamped(t0, 1).getTime() + MINUTE),
      steerableProvider("pending").provider,
      [tenantId],
    );
    const [period] = (await invoicesOfKind(owner, "PERIOD")) as [Json];
    // 25% of 1,000 + 610 = 1,610 is 402.5 -> 403.
    expect(linesOf(period)).toEqual([
      ["BASE", 1000],
      ["USAGE", 610],
      ["DISCOUNT", -403],
    ]);
    expect(await redemptionOf(tenantId)).toMatchObject({ used: 1, ended: expect.any(String) });
  });
});
