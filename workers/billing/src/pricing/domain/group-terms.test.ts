import type { ChargePricing, EntitlementDimension } from "@edge-platform/shared/db/schema/catalog";
import { describe, expect, it } from "vitest";
import { dimensionMatches, groupTerms, usagePricingOfTerms } from "./group-terms.ts";

const entry = (
  match: EntitlementDimension["match"],
  price: Partial<EntitlementDimension>,
): EntitlementDimension => ({
  match,
  includedAmount: 0,
  overagePrice: null,
  overagePriceDecimal: null,
  pricing: null,
  ...price,
});

const packaged: ChargePricing = { model: "package", packageSize: 1000, packagePrice: 700 };

const terms = {
  featureType: "METERED" as const,
  limit: null,
  includedAmount: 5000,
  overagePrice: 10,
  overagePriceDecimal: null,
  pricing: null,
  dimensions: [
    entry({ model: "large", direction: "input" }, { overagePriceDecimal: "0.3" }),
    entry({ model: "large" }, { includedAmount: 1000, overagePrice: 2 }),
    entry({ tier: 1 }, { pricing: packaged }),
  ],
};

describe("usagePricingOfTerms", () => {
  it("takes the charge model, else the decimal price, else the whole price", () => {
    expect(usagePricingOfTerms({ overagePrice: 5, pricing: packaged })).toBe(packaged);
    expect(
      usagePricingOfTerms({ overagePrice: null, overagePriceDecimal: "0.15", pricing: null }),
    ).toEqual({ model: "per_unit", unitPrice: 1, unitPriceDecimal: "0.15" });
    expect(usagePricingOfTerms({ overagePrice: 7, pricing: null })).toEqual({
      model: "per_unit",
      unitPrice: 7,
    });
    expect(usagePricingOfTerms({ overagePrice: null, pricing: null })).toEqual({
      model: "per_unit",
      unitPrice: 0,
    });
  });
});

describe("groupTerms", () => {
  it("takes the first entry whose every match pair equals the group's value", () => {
    expect(groupTerms(terms, { model: "large", direction: "input" })).toEqual({
      included: 0,
      pricing: { model: "per_unit", unitPrice: 1, unitPriceDecimal: "0.3" },
    });
    expect(groupTerms(terms, { model: "large", direction: "output" })).toEqual({
      included: 1000,
      pricing: { model: "per_unit", unitPrice: 2 },
    });
  });

  it("compares values as strings", () => {
    expect(groupTerms(terms, { tier: "1" }).pricing).toBe(packaged);
    expect(dimensionMatches({ tier: "1" }, { tier: 1 })).toBe(true);
    expect(dimensionMatches({ tier: 1 }, { tier: null })).toBe(false);
    expect(dimensionMatches({ tier: 1 }, {})).toBe(false);
  });

  it("falls back to the entitlement's own allowance and price", () => {
    expect(groupTerms(terms, { model: "small", direction: "input" })).toEqual({
      included: 5000,
      pricing: { model: "per_unit", unitPrice: 10 },
    });
    expect(groupTerms({ ...terms, dimensions: null }, {})).toEqual({
      included: 5000,
      pricing: { model: "per_unit", unitPrice: 10 },
    });
    const soft = { ...terms, featureType: "QUOTA" as const, limit: 50, includedAmount: null };
    expect(groupTerms(soft, { model: "small" }).included).toBe(50);
  });
});
