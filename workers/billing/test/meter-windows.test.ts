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
import { monthlyWindowAt } from "./entitlement-fixtures.ts";
import { type Account, register } from "./helpers.ts";
import { pipelineEvent, recordThroughPipeline } from "./meter-helpers.ts";

// Meters at the edges of their windows, billed by the cycle: an event at
// the last millisecond of a window, a late event into a window that ended
// but is not invoiced yet, and a level (WEIGHTED_SUM) carried across
// windows, including one with no event of its own.

let admin: Account;
beforeAll(async () => {
  admin = await platformAdmin();
});

async function meteredSubscriber(meter: Record<string, unknown>, overagePrice: number) {
  const feature = await createFeature(admin, "METERED", { meter });
  const plan = await createPlan(admin);
  await grant(admin, plan.id, feature.id, { resetPeriod: "MONTHLY", overagePrice });
  const price = await createPrice(admin, plan.id, { amount: 0 });
  const owner = await register();
  const subscription = await subscribe(owner, plan.id, price.id);
  const fixture = {
    tenantId: owner.tenant.id,
    subscriptionId: subscription.id,
    startedAt: new Date(subscription.startedAt),
  };
  const windowAt = (at: Date) => monthlyWindowAt(fixture, at);
  const first = windowAt(new Date(subscription.currentPeriodStart));
  const second = windowAt(new Date(first.periodEnd as string));
  const third = windowAt(new Date(second.periodEnd as string));
  return { feature, owner, fixture, windows: [first, second, third] };
}

/** Closes the period that ends at `end` and answers its invoice's USAGE lines as [quantity, amount]. */
async function closeAndRead(owner: Account, end: string, periodStart: string) {
  const report = await runCycle(new Date(Date.parse(end) + 60_000), steerableProvider().provider, [
    owner.tenant.id,
  ]);
  expect(report.closeFailures).toBe(0);
  const list = await asTenant(owner, owner.tenant.id)("/api/v1/invoices?limit=20");
  const invoice = list.body.data.find(
    (row: { kind: string; periodStart: string }) =>
      row.kind === "PERIOD" && row.periodStart === periodStart,
  );
  expect(invoice, `no invoice for the period from ${periodStart}`).toBeDefined();
  return invoice.lineItems
    .filter((line: { kind: string }) => line.kind === "USAGE")
    .map((line: { quantity: number; amount: number }) => [line.quantity, line.amount]);
}

const within = (window: { periodStart: string; periodEnd: string | null }, share: number) => {
  const start = Date.parse(window.periodStart);
  const end = Date.parse(window.periodEnd as string);
  return new Date(start + Math.round((end - start) * share)).toISOString();
};

describe("meters at window edges", () => {
  it("counts an event at the last millisecond in its window, and a late event in the window it happened in when that is not invoiced yet", async () => {
    const { feature, owner, fixture, windows } = await meteredSubscriber(
      { aggregation: "MAX", property: "gpus" },
      50_000,
    );
    const [first, second] = windows as [
      (typeof windows)[number],
      (typeof windows)[number],
      (typeof windows)[number],
    ];
    const lastMs = new Date(Date.parse(first.periodEnd as string) - 1).toISOString();
    const key = feature.lookupKey;
    await recordThroughPipeline(fixture, [
      pipelineEvent(key, { gpus: 7 }, lastMs),
      pipelineEvent(key, { gpus: 3 }, second.periodStart),
    ]);
    // Arrives after the second window's event, about the middle of the first.
    await recordThroughPipeline(fixture, [pipelineEvent(key, { gpus: 9 }, within(first, 0.5))]);
    // The first window's peak is 9 (not the 3 of the window after its end): 9 x 500 cents.
    expect(await closeAndRead(owner, first.periodEnd as string, first.periodStart)).toEqual([
      [9, 4500],
    ]);
    expect(await closeAndRead(owner, second.periodEnd as string, second.periodStart)).toEqual([
      [3, 1500],
    ]);
  });

  it("WEIGHTED_SUM: 100 GB from the middle of a window bills 50, the next window 100 less 40 for its last quarter, and a window with no change the level it holds", async () => {
    const { feature, owner, fixture, windows } = await meteredSubscriber(
      { aggregation: "WEIGHTED_SUM", property: "gb" },
      10_000,
    );
    const [first, second, third] = windows as [
      (typeof windows)[number],
      (typeof windows)[number],
      (typeof windows)[number],
    ];
    const key = feature.lookupKey;
    await recordThroughPipeline(fixture, [
      pipelineEvent(key, { gb: 100 }, within(first, 0.5)),
      pipelineEvent(key, { gb: -40 }, within(second, 0.75)),
    ]);
    // 100 GB held for half the window: 50 GB-months at 100 cents.
    expect(await closeAndRead(owner, first.periodEnd as string, first.periodStart)).toEqual([
      [50, 5000],
    ]);
    // 100 carried in, 40 less for the last quarter: 100 - 40 x 1/4 = 90.
    expect(await closeAndRead(owner, second.periodEnd as string, second.periodStart)).toEqual([
      [90, 9000],
    ]);
    // No change in the third window: the 60 GB it holds, all window long.
    expect(await closeAndRead(owner, third.periodEnd as string, third.periodStart)).toEqual([
      [60, 6000],
    ]);
  });
});
