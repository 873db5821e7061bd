import {
  type InvoiceLineBody,
  invoiceContent,
} from "@edge-platform/shared/testing/invoice-content";
import { describe, expect, it } from "vitest";
import {
  createFeature,
  createPlanWithPrice,
  createTenant,
  grantEntitlement,
  loginDevAdmin,
  ok,
  send,
} from "./lib/billing-api.ts";

// Graduated usage pricing, a coupon and a tax rate against the running
// stack: the worked example of the billing docs on the upcoming invoice,
// then the invoice the billing cycle's close issues (the stack's clock
// cannot move: a pause cuts the period, the resume bills it).

const suffix = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

describe("charge models, coupons and tax, end to end", () => {
  it("bills base fee + graduated usage - 20% + 10% tax as derived by hand, and the upcoming invoice equals the issued one", async () => {
    const admin = await loginDevAdmin();
    const platform = { token: admin };
    const feature = await createFeature(platform, {
      name: "Calls",
      lookupKey: `e2e_tiered_${suffix}`,
      type: "METERED",
      unit: "call",
    });
    const { plan, price } = await createPlanWithPrice(
      platform,
      { name: "Tiered", slug: `e2e-tiered-${suffix}` },
      { interval: "MONTHLY", amount: 2900 },
    );
    await grantEntitlement(platform, plan.id, feature.id, {
      includedAmount: 100,
      resetPeriod: "MONTHLY",
      pricing: {
        model: "graduated",
        tiers: [
          { upTo: 1000, unitPrice: 200 },
          { upTo: 5000, unitPrice: 100 },
          { upTo: null, unitPrice: 50 },
        ],
      },
    });
    const coupon = ok(
      await send("/coupons", {
        token: admin,
        body: { code: `E2E${suffix}`.toUpperCase(), percentOff: 20, duration: "once" },
      }),
      201,
      "coupon",
    );
    const tenant = await createTenant(platform, `Pricing ${suffix}`);
    ok(
      await send(`/tenants/${tenant.id}/billing-details`, {
        token: admin,
        method: "PUT",
        body: {
          taxRate: 10,
          legalName: "Pricing Ltd",
          address: { line1: "1 Tier St", city: "Leeds", country: "GB" },
        },
      }),
      200,
      "billing details",
    );
    const own = (path: string, options: Parameters<typeof send>[1] = {}) =>
      send(path, { token: admin, tenant: tenant.id, ...options });
    const subscription = ok(
      await own("/subscriptions", {
        body: { planId: plan.id, priceId: price.id, couponCode: coupon.code },
      }),
      201,
      "subscribe",
    );
    ok(
      await own(`/entitlements/${feature.lookupKey}/consume`, { body: { amount: 6100 } }),
      200,
      "consume",
    );

    const upcoming = ok(await own("/invoices/upcoming"), 200, "upcoming");
    // 2,900 base + (1,000 x 200 + 4,000 x 100 + 1,000 x 50 micro-cents = 6,500) = 9,400;
    // 20% off = 1,880; 10% tax on 7,520 = 752; total 8,272.
    expect(upcoming).toMatchObject({
      subtotal: 9400,
      discount: 1880,
      tax: 752,
      taxRate: 10,
      total: 8272,
    });
    expect(
      upcoming.lineItems.map((line: InvoiceLineBody) => [line.kind, line.quantity, line.amount]),
    ).toEqual([
      ["BASE", 1, 2900],
      ["USAGE", 6000, 6500],
      ["DISCOUNT", 1, -1880],
      ["TAX", 1, 752],
    ]);

    // The pause cuts the period to the seconds it ran, so the base fee of
    // the invoice the resume issues is prorated to (nearly) nothing; the
    // rest follows from it the same way.
    ok(await own(`/subscriptions/${subscription.id}/pause`, { body: {} }), 201, "pause");
    const cut = ok(await own("/invoices/upcoming"), 200, "upcoming while paused");
    const base = cut.lineItems[0].amount;
    const subtotal = base + 6500;
    const discount = Math.floor((subtotal * 20 + 50) / 100);
    const tax = Math.floor(((subtotal - discount) * 10 + 50) / 100);
    expect(cut).toMatchObject({ subtotal, discount, tax, total: subtotal - discount + tax });
    ok(await own(`/subscriptions/${subscription.id}/resume`, { body: {} }), 201, "resume");
    const [closed] = ok(await own("/invoices"), 200, "invoices").data;
    expect(closed).toMatchObject({ status: expect.stringMatching(/OPEN|PAID/) });
    expect(invoiceContent(cut)).toEqual(invoiceContent(closed));
  });
});
