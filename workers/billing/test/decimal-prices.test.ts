import { addMonthsClamped, MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import { invoiceContent } from "@edge-platform/shared/testing/invoice-content";
import { beforeAll, describe, expect, it } from "vitest";
import { asTenant, consumeAt, runCycle, steerableProvider } from "./billing-helpers.ts";
import {
  createFeature,
  createPlan,
  createPrice,
  grant,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { type Account, type Json, register } from "./helpers.ts";

// Prices below one micro-cent, from the catalog to the invoice: the units
// times the decimal price, rounded half up to cents once per line.

let admin: Account;
beforeAll(async () => {
  admin = await platformAdmin();
});

async function decimalPlan(terms: Record<string, unknown>) {
  const plan = await createPlan(admin);
  const price = await createPrice(admin, plan.id, { interval: "MONTHLY", amount: 1000 });
  const tokens = await createFeature(admin, "METERED");
  await grant(admin, plan.id, tokens.id, { includedAmount: 0, resetPeriod: "MONTHLY", ...terms });
  return { planId: plan.id, priceId: price.id, key: tokens.lookupKey };
}

const usageLine = (invoice: Json) => invoice.lineItems.find((line: Json) => line.kind === "USAGE");

describe("decimal prices on the invoice", () => {
  it.each([
    // 333,333 x 0.15 micro-cents = 499.9995 cents
    { terms: { overagePriceDecimal: "0.15" }, units: 333_333, amount: 500 },
    { terms: { overagePriceDecimal: "0.03" }, units: 2_000_000, amount: 600 },
    {
      terms: { pricing: { model: "volume", tiers: [{ upTo: null, unitPriceDecimal: "0.01" }] } },
      units: 3_000_000,
      amount: 300,
    },
  ])("$units units at $terms bill $amount cents", async ({ terms, units, amount }) => {
    const plan = await decimalPlan(terms);
    const owner = await register();
    const subscription = await subscribe(owner, plan.planId, plan.priceId);
    const t0 = new Date(subscription.startedAt);
    await consumeAt(owner.tenant.id, plan.key, units, new Date(t0.getTime() + MS_PER_DAY));

    const upcoming = await asTenant(owner, owner.tenant.id)("/api/v1/invoices/upcoming");
    expect(upcoming.status, JSON.stringify(upcoming.body)).toBe(200);
    expect(usageLine(upcoming.body)).toMatchObject({ quantity: units, amount });
    expect(upcoming.body.total).toBe(1000 + amount);

    const close = new Date(addMonthsClamped(t0, 1).getTime() + 60_000);
    const report = await runCycle(close, steerableProvider("pending").provider, [owner.tenant.id]);
    expect(report).toMatchObject({ closed: 1, closeFailures: 0 });
    const list = await asTenant(owner, owner.tenant.id)("/api/v1/invoices?limit=10");
    const [issued] = list.body.data;
    expect(issued).toMatchObject({ total: 1000 + amount });
    expect(invoiceContent(upcoming.body)).toEqual(invoiceContent(issued));
  });
});
