import { MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  allowanceShare,
  baseFeeLine,
  buildInvoiceDraft,
  canTransition,
  featureDisplayName,
  formatInvoiceNumber,
  transitionError,
  withCreditBalance,
  withDiscount,
  withTax,
} from "./invoice.ts";

const none = {
  value: null,
  limit: null,
  limitBehavior: null,
  overagePrice: null,
  includedAmount: null,
  resetPeriod: null,
  pricing: null,
};
const snapshots: SnapshotTerms[] = [
  {
    ...none,
    featureLookupKey: "api_calls",
    featureType: "METERED",
    includedAmount: 50_000,
    overagePrice: 10,
    resetPeriod: "MONTHLY",
  },
  {
    ...none,
    featureLookupKey: "seats",
    featureType: "QUOTA",
    limit: 5,
    limitBehavior: "SOFT",
    overagePrice: 50_000,
    resetPeriod: "MONTHLY",
  },
  {
    ...none,
    featureLookupKey: "projects",
    featureType: "QUOTA",
    limit: 3,
    limitBehavior: "HARD",
    resetPeriod: "NEVER",
  },
  { ...none, featureLookupKey: "sso", featureType: "BOOLEAN", value: true },
];
const start = new Date("2026-01-31T10:00:00.000Z");
const end = new Date("2026-02-28T10:00:00.000Z");
const price = { interval: "MONTHLY" as const, amount: 2900, currency: "usd" };
const reading = (key: string, used: number, alreadyBilled = 0, windowStart = start) => ({
  featureLookupKey: key,
  windowKey: windowStart.toISOString(),
  windowStart,
  used,
  alreadyBilled,
});

describe("buildInvoiceDraft", () => {
  it("bills the base fee and overage beyond the included amount or SOFT limit, never HARD or BOOLEAN", () => {
    const draft = buildInvoiceDraft({
      kind: "PERIOD",
      planName: "Pro",
      price,
      period: { start, end },
      snapshots,
      usage: [reading("seats", 7), reading("api_calls", 55_000), reading("projects", 99)],
    });
    expect(
      draft.lines.map((line) => [
        line.kind,
        line.featureLookupKey,
        line.quantity,
        line.amount,
        line.sortOrder,
      ]),
    ).toEqual([
      ["BASE", null, 1, 2900, 0],
      ["USAGE", "api_calls", 5000, 500, 1], // the contract's worked example: $5.00
      ["USAGE", "seats", 2, 1000, 2],
    ]);
    expect(draft.lines[1]?.description).toBe("Api Calls (55,000 used, 50,000 included)");
    expect(draft.lines[2]?.description).toBe("Seats overage (7 used, 5 limit)");
    expect(draft.total).toBe(4400);
    expect(draft.periodEnd).toEqual(end);
  });

  it("bills only what earlier invoices did not, and only windows that started in time", () => {
    const draft = buildInvoiceDraft({
      kind: "PERIOD",
      planName: "Pro",
      price,
      period: { start, end },
      snapshots,
      usage: [reading("seats", 9, 3), reading("seats", 8, 0, end), reading("api_calls", 40_000)],
    });
    expect(draft.lines.map((line) => line.amount)).toEqual([2900, 500]);
    expect(draft.lines[1]?.description).toMatch(/3 billed earlier$/);
  });

  it("a PRORATION invoice credits the unused part of the period", () => {
    const endedAt = new Date(start.getTime() + (end.getTime() - start.getTime()) / 4);
    const draft = buildInvoiceDraft({
      kind: "PRORATION",
      planName: "Pro",
      price,
      period: { start, end },
      endedAt,
      snapshots,
      usage: [],
    });
    expect(draft.lines.map((line) => [line.kind, line.amount])).toEqual([
      ["BASE", 2900],
      ["PRORATION_CREDIT", -2175], // 3/4 of 2,900
    ]);
    expect(draft.total).toBe(725);
    expect(draft.periodEnd).toEqual(endedAt);
    expect(() =>
      buildInvoiceDraft({
        kind: "PRORATION",
        planName: "Pro",
        price,
        period: { start, end },
        snapshots,
        usage: [],
      }),
    ).toThrow();
  });
});

describe("proration on a plan change that keeps the cycle", () => {
  // Cycle period [31 Jan 10:00, 28 Feb 10:00): 28 days = 2,419,200,000 ms.
  // The change on 10 Feb 00:00 leaves 18 days 10 hours = 1,591,200,000 ms.
  const change = new Date("2026-02-10T00:00:00.000Z");
  const cycle = { start, end };
  const tail = { start: change, end };

  it("the old plan's final invoice credits the unused part of the cycle period", () => {
    const draft = buildInvoiceDraft({
      kind: "PRORATION",
      planName: "Starter",
      price,
      period: cycle,
      endedAt: change,
      snapshots,
      usage: [],
    });
    expect(draft.lines.map((line) => [line.kind, line.unitPriceMicroCents, line.amount])).toEqual([
      ["BASE", 290_000, 2900],
      // 2,900 x 1,591,200,000 / 2,419,200,000 = 1,907.44 -> 1,907
      ["PRORATION_CREDIT", -190_700, -1907],
    ]);
    expect(draft.total).toBe(993);
    expect(draft.lines[1]?.description).toBe(
      "Unused time on Starter plan after 2026-02-10 (18 of 28 days)",
    );
    expect(draft.notes).toBe(
      "Prorated: the subscription ended on 2026-02-10T00:00:00.000Z, 10 of 28 days used",
    );
  });

  it("the new plan's first invoice charges the rest of the cycle period, prorated", () => {
    const draft = buildInvoiceDraft({
      kind: "PERIOD",
      planName: "Pro",
      price: { ...price, amount: 9900 },
      period: tail,
      cycle,
      snapshots,
      usage: [reading("api_calls", 60_000, 0, change)],
    });
    expect(
      draft.lines.map((line) => [line.kind, line.quantity, line.unitPriceMicroCents, line.amount]),
    ).toEqual([
      // 9,900 x 1,591,200,000 / 2,419,200,000 = 6,511.61 -> 6,512
      ["BASE", 1, 651_200, 6512],
      // usage is not prorated: 10,000 x 10 micro-cents = 1,000 cents
      ["USAGE", 10_000, 10, 1000],
    ]);
    expect(draft.lines[0]?.description).toBe("Pro plan - monthly (prorated: 18/28 days)");
    expect(draft.lines[1]?.description).toBe("Api Calls (60,000 used, 50,000 included)");
    expect(draft.total).toBe(7512);
    expect([draft.periodStart, draft.periodEnd]).toEqual([change, end]);
    expect(draft.notes).toBe(
      "Prorated first period after a plan change: 2026-02-10 to 2026-02-28, 18 of 28 days",
    );
    // A whole period is not prorated, with or without its cycle given.
    const whole = buildInvoiceDraft({
      kind: "PERIOD",
      planName: "Pro",
      price: { ...price, amount: 9900 },
      period: cycle,
      cycle,
      snapshots,
      usage: [],
    });
    expect(whole.lines[0]?.amount).toBe(9900);
    expect(whole.notes).toBeNull();
  });

  it("rounds both sides half up: exact halves of a 999 price give 500 each", () => {
    const half = new Date(start.getTime() + 14 * MS_PER_DAY);
    const credit = buildInvoiceDraft({
      kind: "PRORATION",
      planName: "Odd",
      price: { ...price, amount: 999 },
      period: cycle,
      endedAt: half,
      snapshots: [],
      usage: [],
    });
    const rest = baseFeeLine("Odd", { ...price, amount: 999 }, { start: half, end }, cycle);
    // 999 x 14 / 28 = 499.5 -> 500 on both lines
    expect(credit.lines.map((line) => line.amount)).toEqual([999, -500]);
    expect(rest.amount).toBe(500);
    expect(rest.description).toBe("Odd plan - monthly (prorated: 14/28 days)");
  });

  it("a second change inside the short first period bills only the days between the two changes", () => {
    const second = new Date(change.getTime() + 5 * MS_PER_DAY);
    const draft = buildInvoiceDraft({
      kind: "PRORATION",
      planName: "Pro",
      price: { ...price, amount: 9900 },
      period: tail,
      cycle,
      endedAt: second,
      snapshots,
      usage: [],
    });
    // base 6,512 (as above); credit 9,900 x (1,591,200,000 - 432,000,000) / 2,419,200,000
    // = 4,744.20 -> 4,744; net 1,768, i.e. 9,900 x 5/28 = 1,767.86 within one cent
    expect(draft.lines.map((line) => line.amount)).toEqual([6512, -4744]);
    expect(draft.total).toBe(1768);
  });

  it("refuses a period outside its cycle period", () => {
    expect(() =>
      baseFeeLine("Pro", price, { start, end: new Date(end.getTime() + 1) }, cycle),
    ).toThrow(RangeError);
  });

  it("property: old plan used + new plan rest is the exact split within a cent each, and a change to the same price costs nothing extra", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.integer({ min: 28, max: 366 }),
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        (oldPrice, newPrice, days, offset) => {
          const cycleMs = days * MS_PER_DAY;
          const cycleEnd = new Date(start.getTime() + cycleMs);
          // Strictly inside the cycle period: 1 ms .. cycleMs - 1 ms after its start.
          const changeAt = new Date(start.getTime() + 1 + (offset % (cycleMs - 1)));
          const full = { start, end: cycleEnd };
          const old = buildInvoiceDraft({
            kind: "PRORATION",
            planName: "Old",
            price: { ...price, amount: oldPrice },
            period: full,
            endedAt: changeAt,
            snapshots: [],
            usage: [],
          });
          const rest = baseFeeLine(
            "New",
            { ...price, amount: newPrice },
            { start: changeAt, end: cycleEnd },
            full,
          );
          const usedMs = BigInt(changeAt.getTime() - start.getTime());
          const restMs = BigInt(cycleEnd.getTime() - changeAt.getTime());
          const whole = BigInt(cycleMs);
          // Compare in exact rationals: |2 x (amount x whole - price x part)| <= whole.
          const within = (amount: number, priceCents: number, part: bigint) => {
            const diff = BigInt(amount) * whole - BigInt(priceCents) * part;
            return (diff < 0n ? -diff : diff) * 2n <= whole;
          };
          expect(within(old.total, oldPrice, usedMs)).toBe(true);
          expect(within(rest.amount, newPrice, restMs)).toBe(true);
          if (oldPrice === newPrice) expect(old.total + rest.amount).toBe(oldPrice);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("the invoice state machine and numbers", () => {
  it("allows only the documented transitions", () => {
    expect(canTransition("finalize", "DRAFT")).toBe(true);
    expect(canTransition("finalize", "OPEN")).toBe(false);
    expect(canTransition("pay", "OPEN")).toBe(true);
    expect(canTransition("pay", "UNCOLLECTIBLE")).toBe(true);
    expect(canTransition("pay", "DRAFT")).toBe(false);
    expect(canTransition("void", "PAID")).toBe(false);
    expect(canTransition("markUncollectible", "OPEN")).toBe(true);
    expect(transitionError("void", "PAID")).toBe("Cannot transition invoice from PAID to VOID");
    expect(formatInvoiceNumber(2026, 1)).toBe("INV-2026-000001");
    expect(featureDisplayName("api_calls_v2")).toBe("Api Calls V2");
  });
});

describe("allowances across plan changes (allowanceShare)", () => {
  // The window [31 Jan 10:00, 28 Feb 10:00): 28 days.
  const window = { windowKey: start.toISOString(), windowEnd: end };
  const change = new Date(start.getTime() + 7 * MS_PER_DAY);

  it("gives a subscription covering the whole window all of it", () => {
    expect(allowanceShare(1000, window, { from: start, until: null })).toBe(1000);
    expect(
      allowanceShare(1000, window, { from: new Date(start.getTime() - MS_PER_DAY), until: null }),
    ).toBe(1000);
  });

  it("prorates by the time each subscription had in the window, so a change never hands out a second allowance", () => {
    const before = allowanceShare(1000, window, { from: start, until: change });
    const after = allowanceShare(1000, window, { from: change, until: null });
    // 7 of 28 days and 21 of 28 days.
    expect([before, after]).toEqual([250, 750]);
    // A -> B -> A: three parts, still one allowance.
    const back = new Date(change.getTime() + 7 * MS_PER_DAY);
    const parts = [
      allowanceShare(1000, window, { from: start, until: change }),
      allowanceShare(1000, window, { from: change, until: back }),
      allowanceShare(1000, window, { from: back, until: null }),
    ];
    expect(parts).toEqual([250, 250, 500]);
  });

  it("is bounded by one allowance whatever the split (to a unit of rounding)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.integer({ min: 1, max: 28 * 24 - 1 }),
        (allowance, hours) => {
          const at = new Date(start.getTime() + hours * 3_600_000);
          const sum =
            allowanceShare(allowance, window, { from: start, until: at }) +
            allowanceShare(allowance, window, { from: at, until: null });
          expect(Math.abs(sum - allowance)).toBeLessThanOrEqual(1);
        },
      ),
    );
  });

  it("in the lifetime window, what earlier subscriptions used of it is gone", () => {
    const lifetime = { windowKey: "lifetime", windowEnd: null };
    expect(allowanceShare(100, { ...lifetime, priorUsage: 0 }, { from: start, until: null })).toBe(
      100,
    );
    expect(allowanceShare(100, { ...lifetime, priorUsage: 60 }, { from: start, until: null })).toBe(
      40,
    );
    expect(
      allowanceShare(100, { ...lifetime, priorUsage: 160 }, { from: start, until: null }),
    ).toBe(0);
  });

  it("bills the old plan's units over its share and the new plan's over its own: every unit once", () => {
    const old = buildInvoiceDraft({
      kind: "PRORATION",
      planName: "Old",
      price,
      period: { start, end },
      endedAt: change,
      snapshots,
      usage: [{ ...reading("api_calls", 40_000), windowEnd: end }],
      active: { from: start, until: change },
    });
    const next = buildInvoiceDraft({
      kind: "PERIOD",
      planName: "New",
      price,
      period: { start: change, end },
      cycle: { start, end },
      snapshots,
      usage: [
        {
          ...reading("api_calls", 50_000, 0, change),
          windowKey: start.toISOString(),
          windowEnd: end,
        },
      ],
      active: { from: change, until: null },
    });
    const usage = (draft: typeof old) =>
      draft.lines.filter((line) => line.kind === "USAGE").map((line) => line.quantity);
    // 50,000 included: 12,500 for the old plan's 7 days, 37,500 for the new plan's 21.
    expect(usage(old)).toEqual([40_000 - 12_500]);
    expect(usage(next)).toEqual([50_000 - 37_500]);
    // 90,000 used, 50,000 included in the window: 40,000 billed in all.
    expect(usage(old)[0]! + usage(next)[0]!).toBe(40_000);
  });
});

describe("withCreditBalance", () => {
  const draft = (total: number) =>
    buildInvoiceDraft({
      kind: "PERIOD",
      planName: "Growth",
      price: { interval: "MONTHLY", amount: total, currency: "usd" },
      period: { start: new Date("2031-01-01T00:00:00Z"), end: new Date("2031-02-01T00:00:00Z") },
      snapshots: [],
      usage: [],
    });

  it("applies min(total, balance) as a last CREDIT_APPLIED line and lowers the total, not the subtotal", () => {
    const applied = withCreditBalance(draft(2900), 500);
    expect(applied.subtotal).toBe(2900);
    expect(applied.total).toBe(2400);
    expect(applied.lines.at(-1)).toMatchObject({
      kind: "CREDIT_APPLIED",
      description: "Credit balance applied",
      quantity: 1,
      unitPriceMicroCents: -50_000,
      amount: -500,
      sortOrder: 1,
    });
    expect(withCreditBalance(draft(2900), 10_000).total).toBe(0);
  });

  it("leaves a draft alone without a balance or without anything to pay", () => {
    expect(withCreditBalance(draft(2900), 0)).toEqual(draft(2900));
    expect(withCreditBalance(draft(0), 500)).toEqual(draft(0));
  });
});

describe("discount, tax and credit at finalize", () => {
  const draft = buildInvoiceDraft({
    kind: "PERIOD",
    planName: "Growth",
    price: { interval: "MONTHLY", amount: 9400, currency: "usd" },
    period: { start: new Date("2031-01-01T00:00:00Z"), end: new Date("2031-02-01T00:00:00Z") },
    snapshots: [],
    usage: [],
  });
  const twenty = {
    invoicesDiscounted: 0,
    coupon: {
      code: "SAVE20",
      label: "SAVE20 (20% off)",
      percentOff: 20,
      amountOff: null,
      currency: null,
      duration: "forever" as const,
      durationInPeriods: null,
    },
  };

  it("discounts the subtotal, taxes the discounted amount, then applies credit, in that line order", () => {
    const finalized = withCreditBalance(withTax(withDiscount(draft, twenty), 100_000), 1000);
    // 9,400 - 1,880 = 7,520; tax 752; 8,272 less 1,000 credit = 7,272.
    expect(finalized).toMatchObject({
      subtotal: 9400,
      discount: 1880,
      tax: 752,
      taxRatePpm: 100_000,
      total: 7272,
    });
    expect(finalized.lines.map((line) => [line.kind, line.amount, line.sortOrder])).toEqual([
      ["BASE", 9400, 0],
      ["DISCOUNT", -1880, 1],
      ["TAX", 752, 2],
      ["CREDIT_APPLIED", -1000, 3],
    ]);
    expect(finalized.lines[1]?.description).toBe("Discount: SAVE20 (20% off)");
    expect(finalized.lines[2]?.description).toBe("Tax (10%)");
  });

  it("adds nothing without a coupon or billing details; a 0% rate stays on the invoice without a line", () => {
    expect(withTax(withDiscount(draft, null), null)).toEqual(draft);
    expect(withTax(draft, 0)).toEqual({ ...draft, taxRatePpm: 0 });
  });
});

describe("a period billed in part on progressive invoices", () => {
  const period = {
    start: new Date("2031-01-01T00:00:00Z"),
    end: new Date("2031-02-01T00:00:00Z"),
  };
  const metered: SnapshotTerms = {
    ...none,
    featureLookupKey: "calls",
    featureType: "METERED",
    includedAmount: 0,
    overagePrice: 1000,
    resetPeriod: "MONTHLY",
  };
  const draftWith = (amount: number, used: number, progressiveBilled: number) =>
    buildInvoiceDraft({
      kind: "PERIOD",
      planName: "Growth",
      price: { interval: "MONTHLY", amount, currency: "usd" },
      period,
      snapshots: [metered],
      usage: [reading("calls", used, 0, period.start)],
      progressiveBilled,
    });
  const quarterOff = {
    invoicesDiscounted: 0,
    coupon: {
      code: "SAVE25",
      label: "SAVE25 (25% off)",
      percentOff: 25,
      amountOff: null,
      currency: null,
      duration: "once" as const,
      durationInPeriods: null,
    },
  };

  it("discounts the whole period's charges less what the progressive invoices took", () => {
    // 1,000 + 142 x 10 = 2,420, of which 610 billed progressively and discounted 153.
    const discounted = withDiscount(draftWith(1000, 142, 610), quarterOff, 153);
    expect(discounted).toMatchObject({ subtotal: 1810, discount: 452, total: 1358 });
    expect(discounted.lines.at(-1)?.description).toBe(
      "Discount: SAVE25 (25% off) on the whole period, less what its progressive invoices were discounted",
    );
  });

  it("floors the subtotal at 0 with a line for what was billed beyond the period's charges", () => {
    // 75 units at 10 cents = 750, after 800 billed progressively.
    const draft = draftWith(0, 75, 800);
    expect(draft.lines.map((line) => [line.kind, line.amount])).toEqual([
      ["BASE", 0],
      ["USAGE", 750],
      ["PROGRESSIVE_BILLED", -800],
      ["PROGRESSIVE_BILLED", 50],
    ]);
    expect(draft).toMatchObject({ subtotal: 0, total: 0 });
    // Nothing left to discount or tax, however much the progressive invoices took.
    expect(withTax(withDiscount(draft, quarterOff, 200), 100_000)).toMatchObject({
      discount: 0,
      tax: 0,
      total: 0,
    });
    expect(draftWith(0, 80, 800).lines.map((line) => line.kind)).toEqual([
      "BASE",
      "USAGE",
      "PROGRESSIVE_BILLED",
    ]);
  });
});
