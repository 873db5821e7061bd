import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import { describe, expect, it } from "vitest";
import {
  applicableBalance,
  burnDownOrder,
  creditsForPaidCents,
  displayedStatus,
  type GrantBalance,
  includedFor,
  isPricedUsage,
  paidCentsForCredits,
  planDraw,
  usageCostCents,
} from "./credits.ts";

const NOW = new Date("2026-12-10T00:00:00.000Z");
const context = { featureKey: "calls", currency: "usd", now: NOW };

const grant = (overrides: Partial<GrantBalance> & { id: string }): GrantBalance => ({
  currency: "usd",
  priority: 50,
  expiresAt: null,
  createdAt: "2026-12-01T00:00:00.000Z",
  features: null,
  status: "ACTIVE",
  remaining: 1000,
  ...overrides,
});

const metered = (terms: Partial<SnapshotTerms> = {}): SnapshotTerms =>
  ({
    featureLookupKey: "calls",
    featureType: "METERED",
    includedAmount: 0,
    overagePrice: 10_000,
    resetPeriod: "MONTHLY",
    ...terms,
  }) as SnapshotTerms;

describe("burn-down order", () => {
  it("draws lowest priority first, then soonest expiry (none last), then oldest", () => {
    const grants = [
      grant({ id: "d", priority: 50, createdAt: "2026-11-01T00:00:00.000Z" }),
      grant({ id: "c", priority: 50, expiresAt: "2027-01-01T00:00:00.000Z" }),
      grant({ id: "b", priority: 50, expiresAt: "2026-12-20T00:00:00.000Z" }),
      grant({ id: "a", priority: 10 }),
      grant({ id: "e", priority: 50, createdAt: "2026-11-02T00:00:00.000Z" }),
    ];
    expect([...grants].sort(burnDownOrder).map((g) => g.id)).toEqual(["a", "b", "c", "d", "e"]);
  });

  it("splits a cost across grants in that order and reports the shortfall", () => {
    const grants = [
      grant({ id: "paid", priority: 50, remaining: 10_000 }),
      grant({ id: "promo", priority: 10, remaining: 5_000 }),
    ];
    // 120 units at 100 cents: 5,000 from the promotional grant, 7,000 from the paid one.
    expect(planDraw(grants, 12_000, context)).toEqual({
      draws: [
        { grantId: "promo", amount: 5_000 },
        { grantId: "paid", amount: 7_000 },
      ],
      covered: 12_000,
      shortfall: 0,
    });
    expect(planDraw(grants, 16_000, context)).toMatchObject({ covered: 15_000, shortfall: 1_000 });
  });

  it("leaves out grants that do not apply: other currency, expired, other feature, not ACTIVE, empty", () => {
    const grants = [
      grant({ id: "eur", currency: "eur" }),
      grant({ id: "expired", expiresAt: NOW.toISOString() }),
      grant({ id: "other", features: ["storage"] }),
      grant({ id: "pending", status: "PENDING" }),
      grant({ id: "empty", remaining: 0 }),
      grant({ id: "mine", features: ["calls"], remaining: 250 }),
    ];
    expect(applicableBalance(grants, context)).toBe(250);
    expect(planDraw(grants, 400, context).draws).toEqual([{ grantId: "mine", amount: 250 }]);
  });
});

describe("usage cost", () => {
  it("prices only units beyond the included amount", () => {
    const snapshot = metered({ includedAmount: 100 });
    expect(usageCostCents(snapshot, 0, 100)).toBe(0);
    expect(usageCostCents(snapshot, 90, 20)).toBe(1_000);
    expect(usageCostCents(snapshot, 150, 1)).toBe(100);
  });

  it("counts the subscription's share of the included amount in the window, as the invoice does", () => {
    const snapshot = metered({ includedAmount: 100 });
    // Billable from 16 January in the window [1 January, 1 February): 16 of 31 days.
    const window = {
      windowKey: "2032-01-01T00:00:00.000Z",
      windowEnd: new Date("2032-02-01T00:00:00.000Z"),
      billableFrom: new Date("2032-01-16T00:00:00.000Z"),
    };
    expect(includedFor(snapshot, window)).toBe(52);
    expect(usageCostCents(snapshot, 0, 80, window)).toBe(2_800);
    expect(usageCostCents(snapshot, 0, 80)).toBe(0);
    expect(includedFor(snapshot, { ...window, billableFrom: new Date("2031-12-01") })).toBe(100);
    expect(includedFor(snapshot, { ...window, windowEnd: null })).toBe(100);
  });

  it("rounds the cumulative charge once, so the costs of a window add up to its charge", () => {
    // 15 micro-cents a unit: one unit is 0.15 cents.
    const snapshot = metered({ overagePrice: 15 });
    let drawn = 0;
    for (let used = 0; used < 350; used++) drawn += usageCostCents(snapshot, used, 1);
    // 350 x 15 = 5,250 micro-cents = 52.5 cents -> 53 (half up), as the invoice line.
    expect(drawn).toBe(53);
  });

  it("uses the feature's charge model", () => {
    const snapshot = metered({
      overagePrice: null,
      pricing: {
        model: "graduated",
        tiers: [
          { upTo: 10, unitPrice: 200 },
          { upTo: null, unitPrice: 100 },
        ],
      },
    });
    // Units 9-12: 2 x 2 cents + 2 x 1 cent.
    expect(usageCostCents(snapshot, 8, 4)).toBe(6);
  });

  it("knows which usage is priced", () => {
    expect(isPricedUsage(metered())).toBe(true);
    expect(isPricedUsage(metered({ overagePrice: 0 }))).toBe(false);
    expect(
      isPricedUsage({
        featureLookupKey: "seats",
        featureType: "QUOTA",
        limit: 5,
        limitBehavior: "HARD",
      } as SnapshotTerms),
    ).toBe(false);
  });

  it("shows an ACTIVE grant with nothing left as EXHAUSTED", () => {
    expect(displayedStatus("ACTIVE", 0)).toBe("EXHAUSTED");
    expect(displayedStatus("ACTIVE", 1)).toBe("ACTIVE");
    expect(displayedStatus("VOIDED", 0)).toBe("VOIDED");
  });
});

describe("paid cents and the credits they bought", () => {
  it("converts paid cents at the grant's price, rounding half up", () => {
    // 10,000 credits for 8,000 cents: 1.25 credits a cent.
    expect(creditsForPaidCents(4_000, 10_000, 8_000)).toBe(5_000);
    expect(creditsForPaidCents(1, 10_000, 8_000)).toBe(1);
    expect(creditsForPaidCents(2, 10_000, 8_000)).toBe(3);
    expect(creditsForPaidCents(3, 10_000, 8_000)).toBe(4);
    // 3 credits for 2 cents: 1 cent is 1.5 credits, half up to 2; 5 credits for 10 cents: 0.5 to 1.
    expect(creditsForPaidCents(1, 3, 2)).toBe(2);
    expect(creditsForPaidCents(1, 5, 10)).toBe(1);
    expect(creditsForPaidCents(1, 4, 10)).toBe(0);
    expect(creditsForPaidCents(0, 10_000, 8_000)).toBe(0);
  });

  it("is exact at the largest amounts, beyond what a double multiplies exactly", () => {
    expect(creditsForPaidCents(999_999_999, 1_000_000_000, 999_999_999)).toBe(1_000_000_000);
    expect(creditsForPaidCents(333_333_333, 1_000_000_000, 999_999_999)).toBe(333_333_333);
    expect(paidCentsForCredits(1_000_000_000, 1_000_000_000, 999_999_997)).toBe(999_999_997);
  });

  it("values unspent credits in paid cents rounded down, so taking them back always fits", () => {
    expect(paidCentsForCredits(2_000, 10_000, 8_000)).toBe(1_600);
    expect(paidCentsForCredits(1, 3, 2)).toBe(0);
    expect(paidCentsForCredits(7, 3, 2)).toBe(4);
    for (const [amount, paidAmount] of [
      [10_000, 8_000],
      [3, 2],
      [7, 1_000],
      [1_000, 7],
    ] as const) {
      for (let unspent = 0; unspent <= 50; unspent++) {
        const paid = paidCentsForCredits(unspent, amount, paidAmount);
        expect(creditsForPaidCents(paid, amount, paidAmount)).toBeLessThanOrEqual(unspent);
      }
    }
  });

  it("refuses amounts that are not whole cents", () => {
    expect(() => creditsForPaidCents(1.5, 10, 10)).toThrow(RangeError);
    expect(() => creditsForPaidCents(-1, 10, 10)).toThrow(RangeError);
    expect(() => creditsForPaidCents(1, 10, 0)).toThrow(RangeError);
    expect(() => paidCentsForCredits(-1, 10, 10)).toThrow(RangeError);
  });
});
