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
  subscribe,
} from "./lib/billing-api.ts";

// GET /api/v1/invoices/upcoming against the running stack: the invoice the
// current period would produce if it closed now equals the invoice issued
// when it does close. The stack's clock cannot be moved, so the period is
// closed the way a client can close it: a pause cuts it at the pause, and
// the resume bills it through the billing cycle's own close.

const suffix = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

describe("the upcoming invoice, end to end", () => {
  it("equals the invoice the period's close issues, and is never stored", async () => {
    const admin = await loginDevAdmin();
    const platform = { token: admin };
    const feature = await createFeature(platform, {
      name: "Calls",
      lookupKey: `e2e_upcoming_${suffix}`,
      type: "METERED",
      unit: "call",
    });
    const { plan, price } = await createPlanWithPrice(
      platform,
      { name: "Up", slug: `e2e-up-${suffix}` },
      { interval: "MONTHLY", amount: 2900 },
    );
    await grantEntitlement(platform, plan.id, feature.id, {
      includedAmount: 1000,
      overagePrice: 15,
      resetPeriod: "MONTHLY",
    });
    const tenant = await createTenant(platform, `Upcoming ${suffix}`);
    const own = (path: string, options: Parameters<typeof send>[1] = {}) =>
      send(path, { token: admin, tenant: tenant.id, ...options });
    const subscription = await subscribe(
      { token: admin, tenantId: tenant.id },
      { planId: plan.id, priceId: price.id },
    );
    ok(
      await own(`/entitlements/${feature.lookupKey}/consume`, { body: { amount: 1234 } }),
      200,
      "consume",
    );

    const running = ok(await own("/invoices/upcoming"), 200, "upcoming");
    expect(running).toMatchObject({
      subscriptionId: subscription.id,
      periodStart: subscription.currentPeriodStart,
      periodEnd: subscription.currentPeriodEnd,
      // 2,900 + 234 calls x 15 micro-cents (35.1 -> 35)
      total: 2935,
    });
    expect(ok(await own("/invoices"), 200, "invoices").data).toEqual([]);

    const paused = ok(
      await own(`/subscriptions/${subscription.id}/pause`, { body: {} }),
      201,
      "pause",
    );
    const upcoming = ok(await own("/invoices/upcoming"), 200, "upcoming while paused");
    expect(upcoming.periodEnd).toBe(paused.currentPeriodEnd);
    expect(upcoming.lineItems.map((line: InvoiceLineBody) => line.kind)).toEqual(["BASE", "USAGE"]);
    expect(ok(await own("/invoices"), 200, "invoices").data).toEqual([]);

    ok(await own(`/subscriptions/${subscription.id}/resume`, { body: {} }), 201, "resume");
    const [closed] = ok(await own("/invoices"), 200, "invoices").data;
    expect(closed).toMatchObject({ status: expect.stringMatching(/OPEN|PAID/) });
    expect(invoiceContent(upcoming)).toEqual(invoiceContent(closed));
    console.log(
      JSON.stringify({
        upcomingInvoice: {
          beforePause: { subtotal: running.subtotal, total: running.total },
          closed: { number: closed.invoiceNumber, subtotal: closed.subtotal, total: closed.total },
          lines: closed.lineItems.map((line: InvoiceLineBody) => [
            line.kind,
            line.quantity,
            line.amount,
          ]),
        },
      }),
    );
  });
});
