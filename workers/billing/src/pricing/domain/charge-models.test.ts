import type { ChargePricing } from "@edge-platform/shared/db/schema/catalog";
import { describe, expect, it } from "vitest";
import {
  chargeCents,
  describeCharge,
  formatUnitPrice,
  MAX_PRICING_TIERS,
  pricingProblem,
  usageCharge,
} from "./charge-models.ts";

// The worked example: 6,100 units used with 100 included, so 6,000 billed.
const tiers = [
  { upTo: 1000, unitPrice: 200 },
  { upTo: 5000, unitPrice: 100 },
  { upTo: null, unitPrice: 50 },
];
const graduated: ChargePricing = { model: "graduated", tiers };
const volume: ChargePricing = { model: "volume", tiers };
const packaged: ChargePricing = { model: "package", packageSize: 1000, packagePrice: 700 };
const fresh = { alreadyBilled: 0, alreadyCharged: 0 };

describe("the worked example: 6,000 billed units (6,100 used, 100 included)", () => {
  it("graduated: 1,000 x 200 + 4,000 x 100 + 1,000 x 50 = 650,000 micro-cents = 6,500 cents", () => {
    expect(chargeCents(graduated, 6000)).toBe((1000 * 200 + 4000 * 100 + 1000 * 50) / 100);
    expect(chargeCents(graduated, 6000)).toBe(6500);
    const line = usageCharge(graduated, fresh, 6000);
    expect(line.amount).toBe(6500);
    expect(line.billed).toEqual({
      model: "graduated",
      tiers: [
        { from: 1, upTo: 1000, units: 1000, unitPrice: 200, flatFee: 0 },
        { from: 1001, upTo: 5000, units: 4000, unitPrice: 100, flatFee: 0 },
        { from: 5001, upTo: null, units: 1000, unitPrice: 50, flatFee: 0 },
      ],
    });
    // 6,500 cents over 6,000 units: 108.33 micro-cents a unit on average.
    expect(line.unitPriceMicroCents).toBe(108);
  });

  it("volume: all 6,000 at the tier the total reaches, 6,000 x 50 = 300,000 micro-cents = 3,000 cents", () => {
    expect(chargeCents(volume, 6000)).toBe(3000);
    const line = usageCharge(volume, fresh, 6000);
    expect(line.amount).toBe(3000);
    expect(line.billed).toEqual({
      model: "volume",
      tiers: [{ from: 5001, upTo: null, units: 6000, unitPrice: 50, flatFee: 0 }],
    });
    expect(line.unitPriceMicroCents).toBe(50);
  });

  it("package: 6 started packages of 1,000 x 700 cents = 4,200 cents", () => {
    expect(chargeCents(packaged, 6000)).toBe(4200);
    const line = usageCharge(packaged, fresh, 6000);
    expect(line.amount).toBe(4200);
    expect(line.billed).toEqual({
      model: "package",
      packages: { count: 6, packageSize: 1000, packagePrice: 700 },
    });
    expect(line.unitPriceMicroCents).toBe(70);
  });

  it("per unit (overagePrice) keeps today's rule: quantity x price, rounded half up per line", () => {
    expect(usageCharge({ model: "per_unit", unitPrice: 15 }, fresh, 1010)).toEqual({
      amount: 152, // 15,150 micro-cents = 151.5 cents -> 152
      unitPriceMicroCents: 15,
      billed: null,
    });
  });

  it("describes the tiers on the line", () => {
    const line = usageCharge(graduated, fresh, 6000);
    expect(describeCharge(line.billed ?? { model: "graduated" }, "usd")).toBe(
      "graduated: 1,000 x 0.02 USD (tier 1-1,000) + 4,000 x 0.01 USD (tier 1,001-5,000) + 1,000 x 0.005 USD (tier 5,001+)",
    );
    expect(
      describeCharge(usageCharge(packaged, fresh, 6000).billed ?? { model: "package" }, "eur"),
    ).toBe("package: 6 x 7.00 EUR per 1,000 units");
  });
});

describe("tier boundaries, flat fees and packages", () => {
  it("prices a tier's last unit in that tier and the next unit in the next", () => {
    expect(chargeCents(graduated, 1000)).toBe(2000);
    expect(chargeCents(graduated, 1001)).toBe(2001);
    expect(chargeCents(volume, 1000)).toBe(2000); // 1,000 x 200
    expect(chargeCents(volume, 1001)).toBe(1001); // 1,001 x 100: the cheaper tier for all
    expect(chargeCents(volume, 5000)).toBe(5000);
    expect(chargeCents(volume, 5001)).toBe(2501); // 5,001 x 50 = 250,050 -> 2,500.5 -> 2,501
  });

  it("charges a flat fee once when any unit falls in the tier (graduated) or the total reaches it (volume)", () => {
    const withFees: ChargePricing = {
      model: "graduated",
      tiers: [
        { upTo: 10, unitPrice: 0, flatFee: 500 },
        { upTo: null, unitPrice: 100, flatFee: 250 },
      ],
    };
    expect(chargeCents(withFees, 0)).toBe(0);
    expect(chargeCents(withFees, 1)).toBe(500);
    expect(chargeCents(withFees, 10)).toBe(500);
    expect(chargeCents(withFees, 11)).toBe(500 + 250 + 1);
    expect(chargeCents({ ...withFees, model: "volume" }, 10)).toBe(500);
    expect(chargeCents({ ...withFees, model: "volume" }, 11)).toBe(250 + 11);
  });

  it("bills a started package in full, and nothing for no units", () => {
    expect(chargeCents(packaged, 0)).toBe(0);
    expect(chargeCents(packaged, 1)).toBe(700);
    expect(chargeCents(packaged, 1000)).toBe(700);
    expect(chargeCents(packaged, 1001)).toBe(1400);
  });

  it("rounds the whole charge half up once, not each tier", () => {
    // 50 + 50 micro-cents = 1 cent; rounding each tier would give 0.5 -> 1 twice = 2.
    const fine: ChargePricing = {
      model: "graduated",
      tiers: [
        { upTo: 1, unitPrice: 50 },
        { upTo: null, unitPrice: 50 },
      ],
    };
    expect(chargeCents(fine, 2)).toBe(1);
    expect(chargeCents(fine, 1)).toBe(1); // 0.5 -> 1 (half up)
    expect(chargeCents(fine, 3)).toBe(2); // 1.5 -> 2
  });
});

describe("a window billed over several invoices", () => {
  it("graduated: each invoice bills the units after those already billed, and the lines add up to the whole", () => {
    const first = usageCharge(graduated, fresh, 800);
    expect(first.amount).toBe(1600);
    const second = usageCharge(
      graduated,
      { alreadyBilled: 800, alreadyCharged: first.amount },
      5200,
    );
    // units 801..6,000: 200 x 200 + 4,000 x 100 + 1,000 x 50
    expect(second.amount).toBe(400 + 4000 + 500);
    expect(first.amount + second.amount).toBe(chargeCents(graduated, 6000));
    expect(second.billed?.tiers).toEqual([
      { from: 1, upTo: 1000, units: 200, unitPrice: 200, flatFee: 0 },
      { from: 1001, upTo: 5000, units: 4000, unitPrice: 100, flatFee: 0 },
      { from: 5001, upTo: null, units: 1000, unitPrice: 50, flatFee: 0 },
    ]);
  });

  it("rounds the window once: the lines of split sub-cent charges add up to the whole charge", () => {
    const fine: ChargePricing = { model: "graduated", tiers: [{ upTo: null, unitPrice: 50 }] };
    const first = usageCharge(fine, fresh, 1); // 0.5 -> 1
    const second = usageCharge(fine, { alreadyBilled: 1, alreadyCharged: first.amount }, 1);
    expect(first.amount + second.amount).toBe(chargeCents(fine, 2));
    expect(second.amount).toBe(0);
  });

  it("package: only packages started since the last invoice", () => {
    const first = usageCharge(packaged, fresh, 1500);
    expect(first.amount).toBe(1400);
    const second = usageCharge(packaged, { alreadyBilled: 1500, alreadyCharged: 1400 }, 400);
    expect(second.amount).toBe(0);
    const third = usageCharge(packaged, { alreadyBilled: 1900, alreadyCharged: 1400 }, 200);
    expect(third.amount).toBe(700);
    expect(third.billed?.packages?.count).toBe(1);
  });

  it("volume: the window is brought up to the volume price of all its units, never below what it was charged", () => {
    const first = usageCharge(volume, fresh, 1000); // 1,000 x 200
    expect(first.amount).toBe(2000);
    // 1,500 in all: 1,500 x 100 = 1,500 cents, less than already charged: nothing more, nothing back.
    expect(usageCharge(volume, { alreadyBilled: 1000, alreadyCharged: 2000 }, 500).amount).toBe(0);
    // 3,000 in all: 3,000 x 100 = 3,000 cents, 1,000 more.
    expect(usageCharge(volume, { alreadyBilled: 1000, alreadyCharged: 2000 }, 2000).amount).toBe(
      1000,
    );
  });
});

describe("pricingProblem", () => {
  const problem = (pricing: unknown) => pricingProblem(pricing as ChargePricing);

  it("accepts valid tiers and packages", () => {
    expect(problem(graduated)).toBeUndefined();
    expect(problem(volume)).toBeUndefined();
    expect(problem(packaged)).toBeUndefined();
    expect(
      problem({ model: "volume", tiers: [{ upTo: null, unitPrice: 0, flatFee: 0 }] }),
    ).toBeUndefined();
  });

  it("wants tiers strictly increasing", () => {
    expect(
      problem({
        model: "graduated",
        tiers: [
          { upTo: 1000, unitPrice: 1 },
          { upTo: 1000, unitPrice: 1 },
          { upTo: null, unitPrice: 1 },
        ],
      }),
    ).toBe(
      "pricing.tiers[1].upTo must be greater than the previous tier's upTo (1000): tiers strictly increase",
    );
    expect(
      problem({
        model: "graduated",
        tiers: [
          { upTo: 5000, unitPrice: 1 },
          { upTo: 1000, unitPrice: 1 },
          { upTo: null, unitPrice: 1 },
        ],
      }),
    ).toMatch(/tiers\[1\]\.upTo must be greater/);
    expect(
      problem({
        model: "volume",
        tiers: [
          { upTo: 0, unitPrice: 1 },
          { upTo: null, unitPrice: 1 },
        ],
      }),
    ).toBe("pricing.tiers[0].upTo must be at least 1");
  });

  it("wants exactly one open tier, the last", () => {
    expect(problem({ model: "graduated", tiers: [{ upTo: 10, unitPrice: 1 }] })).toBe(
      "The last tier must be open: give it upTo: null",
    );
    expect(
      problem({
        model: "graduated",
        tiers: [
          { upTo: null, unitPrice: 1 },
          { upTo: null, unitPrice: 1 },
        ],
      }),
    ).toBe("pricing.tiers[0].upTo is null, but only the last tier may be open (upTo: null)");
  });

  it("wants non-negative integers and 1 to 20 tiers", () => {
    expect(problem({ model: "graduated", tiers: [] })).toBe(
      "pricing.tiers must list at least one tier",
    );
    const many = Array.from({ length: MAX_PRICING_TIERS + 1 }, (_, index) => ({
      upTo: index === MAX_PRICING_TIERS ? null : index + 1,
      unitPrice: 1,
    }));
    expect(problem({ model: "graduated", tiers: many })).toBe(
      "pricing.tiers must have at most 20 tiers",
    );
    expect(problem({ model: "graduated", tiers: many.slice(1) })).toBeUndefined();
    expect(problem({ model: "volume", tiers: [{ upTo: null, unitPrice: -1 }] })).toMatch(
      /unitPrice must be a non-negative whole number/,
    );
    expect(problem({ model: "volume", tiers: [{ upTo: null, unitPrice: 1.5 }] })).toMatch(
      /unitPrice/,
    );
    expect(
      problem({
        model: "volume",
        tiers: [
          { upTo: 2.5, unitPrice: 1 },
          { upTo: null, unitPrice: 1 },
        ],
      }),
    ).toMatch(/upTo must be a whole number/);
    expect(
      problem({ model: "volume", tiers: [{ upTo: null, unitPrice: 1, flatFee: -5 }] }),
    ).toMatch(/flatFee/);
    expect(problem({ model: "package", packageSize: 0, packagePrice: 700 })).toMatch(/packageSize/);
    expect(problem({ model: "package", packageSize: 10, packagePrice: -1 })).toMatch(
      /packagePrice/,
    );
  });
});

describe("formatUnitPrice", () => {
  it("shows micro-cents as currency with at least two decimals", () => {
    expect(formatUnitPrice(200, "usd")).toBe("0.02 USD");
    expect(formatUnitPrice(50, "usd")).toBe("0.005 USD");
    expect(formatUnitPrice(5, "usd")).toBe("0.0005 USD");
    expect(formatUnitPrice(70_000, "usd")).toBe("7.00 USD");
    expect(formatUnitPrice(1_234_567, "usd")).toBe("123.4567 USD");
  });
});

describe("decimal prices and fractional quantities", () => {
  const perUnit = (price: string) =>
    ({ model: "per_unit", unitPrice: 1, unitPriceDecimal: price }) as const;

  it("prices a per-unit decimal price exactly, rounded half up to cents once per line", () => {
    // 333,333 x 0.15 micro-cents = 499.9995 cents
    expect(usageCharge(perUnit("0.15"), fresh, 333_333)).toEqual({
      amount: 500,
      unitPriceMicroCents: 0,
      billed: null,
    });
    expect(usageCharge(perUnit("0.03"), fresh, 2_000_000).amount).toBe(600);
    expect(usageCharge(perUnit("0.01"), fresh, 3_000_000).amount).toBe(300);
    expect(usageCharge(perUnit("12"), fresh, 10)).toMatchObject({
      amount: 1,
      unitPriceMicroCents: 12,
    });
  });

  it("prices fractional quantities per unit and by tiers", () => {
    expect(usageCharge({ model: "per_unit", unitPrice: 100 }, fresh, 2.5).amount).toBe(3);
    // graduated: 1,000 x 200 + 0.5 x 100 = 200,050 micro-cents = 2,000.5 -> 2,001 cents
    const line = usageCharge(graduated, fresh, 1000.5);
    expect(line.amount).toBe(2001);
    expect(line.billed?.tiers).toEqual([
      { from: 1, upTo: 1000, units: 1000, unitPrice: 200, flatFee: 0 },
      { from: 1001, upTo: 5000, units: 0.5, unitPrice: 100, flatFee: 0 },
    ]);
    expect(chargeCents(volume, 1000.5)).toBe(1001); // every unit at the 100 tier: 1,000.5 cents
    expect(chargeCents(packaged, 1000.5)).toBe(1400); // two started packages
    // The window so far: 0.25 then 0.25 more of a 100 micro-cent unit, rounded once each time.
    const fine: ChargePricing = { model: "graduated", tiers: [{ upTo: null, unitPrice: 100 }] };
    const first = usageCharge(fine, fresh, 0.25); // 0.25 cent -> 0
    const second = usageCharge(fine, { alreadyBilled: 0.25, alreadyCharged: first.amount }, 0.25);
    expect(first.amount + second.amount).toBe(chargeCents(fine, 0.5)); // 0.5 -> 1
  });

  it("prices tiers with unitPriceDecimal exactly and shows their decimal price", () => {
    const decimalTiers: ChargePricing = {
      model: "graduated",
      tiers: [
        { upTo: 1_000_000, unitPriceDecimal: "0.15" },
        { upTo: null, unitPrice: 1 },
      ],
    };
    // 1,000,000 x 0.15 + 1,000,000 x 1 = 1,150,000 micro-cents = 11,500 cents
    const line = usageCharge(decimalTiers, fresh, 2_000_000);
    expect(line.amount).toBe(11_500);
    expect(line.billed?.tiers?.[0]).toEqual({
      from: 1,
      upTo: 1_000_000,
      units: 1_000_000,
      unitPrice: 0,
      unitPriceDecimal: "0.15",
      flatFee: 0,
    });
    expect(describeCharge(line.billed as NonNullable<typeof line.billed>, "usd")).toBe(
      "graduated: 1,000,000 x 0.000015 USD (tier 1-1,000,000) + 1,000,000 x 0.0001 USD (tier 1,000,001+)",
    );
    expect(
      chargeCents(
        { model: "volume", tiers: [{ upTo: null, unitPriceDecimal: "0.01" }] },
        3_000_000,
      ),
    ).toBe(300);
  });

  it("wants exactly one of unitPrice and unitPriceDecimal per tier, in the decimal format", () => {
    const tiered = (tier: object) =>
      pricingProblem({ model: "volume", tiers: [{ upTo: null, ...tier }] } as ChargePricing);
    expect(tiered({ unitPriceDecimal: "0.0000000001" })).toBeUndefined();
    expect(tiered({ unitPrice: 1, unitPriceDecimal: "1" })).toBe(
      "pricing.tiers[0] takes one of unitPrice and unitPriceDecimal, not both",
    );
    expect(tiered({})).toBe(
      "pricing.tiers[0] needs unitPrice (whole micro-cents) or unitPriceDecimal (decimal micro-cents)",
    );
    expect(tiered({ unitPriceDecimal: "-0.5" })).toMatch(
      /^pricing\.tiers\[0\]\.unitPriceDecimal must be a non-negative decimal string/,
    );
    expect(tiered({ unitPriceDecimal: "0.00000000001" })).toMatch(/unitPriceDecimal must be/);
  });

  it("formats decimal micro-cents as currency", () => {
    expect(formatUnitPrice("0.15", "usd")).toBe("0.000015 USD");
    expect(formatUnitPrice("200", "usd")).toBe(formatUnitPrice(200, "usd"));
    expect(formatUnitPrice("0.0000000001", "usd")).toBe("0.00000000000001 USD");
    expect(formatUnitPrice(-50, "usd")).toBe("-0.005 USD");
  });
});
