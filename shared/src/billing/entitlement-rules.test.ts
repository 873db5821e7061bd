import { describe, expect, it } from "vitest";
import {
  DECIMAL_PRICE_PATTERN,
  dimensionsMeterProblem,
  featureUnitProblem,
  ENTITLEMENT_RULE_MESSAGES as M,
  MAX_DIMENSIONS,
  resolveDimensions,
  resolveEntitlementTerms,
} from "./entitlement-rules.ts";
import { DEFAULT_METER } from "./meter.ts";

const terms = (result: ReturnType<typeof resolveEntitlementTerms>) => {
  if (!result.ok) throw new Error(`expected ok, got: ${result.message}`);
  return result.terms;
};
const message = (result: ReturnType<typeof resolveEntitlementTerms>) =>
  result.ok ? "(accepted)" : result.message;

describe("BOOLEAN entitlements", () => {
  it("take only `value`", () => {
    expect(terms(resolveEntitlementTerms("BOOLEAN", { value: true }))).toEqual({
      value: true,
      limit: null,
      limitBehavior: null,
      overagePrice: null,
      includedAmount: null,
      resetPeriod: null,
      pricing: null,
      overagePriceDecimal: null,
      dimensions: null,
    });
    expect(terms(resolveEntitlementTerms("BOOLEAN", { value: false })).value).toBe(false);
  });

  it("require `value`", () => {
    expect(message(resolveEntitlementTerms("BOOLEAN", {}))).toBe(M.booleanMissing);
    expect(message(resolveEntitlementTerms("BOOLEAN", { value: null }))).toBe(M.booleanMissing);
  });

  it.each([
    { limit: 1 },
    { limitBehavior: "HARD" as const },
    { overagePrice: 10 },
    { includedAmount: 5 },
    { resetPeriod: "MONTHLY" as const },
  ])("refuse %o", (extra) => {
    expect(message(resolveEntitlementTerms("BOOLEAN", { value: true, ...extra }))).toBe(
      M.booleanForbidden,
    );
  });
});

describe("QUOTA entitlements", () => {
  it("default to HARD and need no price then", () => {
    expect(
      terms(resolveEntitlementTerms("QUOTA", { limit: 50, resetPeriod: "MONTHLY" })),
    ).toMatchObject({ limit: 50, limitBehavior: "HARD", overagePrice: null });
  });

  it("require `limit` and `resetPeriod`", () => {
    expect(message(resolveEntitlementTerms("QUOTA", { resetPeriod: "MONTHLY" }))).toBe(
      M.quotaMissing,
    );
    expect(message(resolveEntitlementTerms("QUOTA", { limit: 10 }))).toBe(M.quotaMissing);
  });

  it("refuse `value` and `includedAmount`", () => {
    const base = { limit: 10, resetPeriod: "MONTHLY" as const };
    expect(message(resolveEntitlementTerms("QUOTA", { ...base, value: true }))).toBe(
      M.quotaForbidden,
    );
    expect(message(resolveEntitlementTerms("QUOTA", { ...base, includedAmount: 3 }))).toBe(
      M.quotaForbidden,
    );
  });

  it("need an overage price when SOFT and refuse one when HARD", () => {
    const base = { limit: 10, resetPeriod: "MONTHLY" as const };
    expect(message(resolveEntitlementTerms("QUOTA", { ...base, limitBehavior: "SOFT" }))).toBe(
      M.softQuotaMissingPrice,
    );
    expect(
      terms(
        resolveEntitlementTerms("QUOTA", { ...base, limitBehavior: "SOFT", overagePrice: 250 }),
      ),
    ).toMatchObject({ limitBehavior: "SOFT", overagePrice: 250 });
    expect(message(resolveEntitlementTerms("QUOTA", { ...base, overagePrice: 250 }))).toBe(
      M.hardQuotaForbidsPrice,
    );
  });
});

describe("METERED entitlements", () => {
  it("take includedAmount (default 0), overagePrice and resetPeriod", () => {
    expect(
      terms(resolveEntitlementTerms("METERED", { overagePrice: 5, resetPeriod: "MONTHLY" })),
    ).toMatchObject({ includedAmount: 0, overagePrice: 5, resetPeriod: "MONTHLY" });
    expect(
      terms(
        resolveEntitlementTerms("METERED", {
          includedAmount: 1000,
          overagePrice: 5,
          resetPeriod: "ANNUALLY",
        }),
      ).includedAmount,
    ).toBe(1000);
  });

  it("require `overagePrice` and `resetPeriod`", () => {
    expect(message(resolveEntitlementTerms("METERED", { resetPeriod: "MONTHLY" }))).toBe(
      M.meteredMissing,
    );
    expect(message(resolveEntitlementTerms("METERED", { overagePrice: 1 }))).toBe(M.meteredMissing);
  });

  it.each([{ value: true }, { limit: 5 }, { limitBehavior: "SOFT" as const }])(
    "refuse %o",
    (extra) => {
      expect(
        message(
          resolveEntitlementTerms("METERED", { overagePrice: 1, resetPeriod: "MONTHLY", ...extra }),
        ),
      ).toBe(M.meteredForbidden);
    },
  );
});

describe("charge-model pricing", () => {
  const pricing = { model: "package" as const, packageSize: 1000, packagePrice: 700 };

  it("prices METERED and SOFT quota units instead of overagePrice", () => {
    expect(
      terms(resolveEntitlementTerms("METERED", { pricing, resetPeriod: "MONTHLY" })),
    ).toMatchObject({ pricing, overagePrice: null, includedAmount: 0 });
    expect(
      terms(
        resolveEntitlementTerms("QUOTA", {
          limit: 5,
          limitBehavior: "SOFT",
          pricing,
          resetPeriod: "MONTHLY",
        }),
      ),
    ).toMatchObject({ pricing, overagePrice: null });
  });

  it("is refused together with overagePrice, on HARD quotas and on BOOLEAN features", () => {
    expect(
      message(
        resolveEntitlementTerms("METERED", { overagePrice: 5, pricing, resetPeriod: "MONTHLY" }),
      ),
    ).toBe(M.priceTwice);
    expect(
      message(
        resolveEntitlementTerms("QUOTA", {
          limit: 5,
          limitBehavior: "SOFT",
          overagePrice: 5,
          pricing,
          resetPeriod: "MONTHLY",
        }),
      ),
    ).toBe(M.priceTwice);
    expect(
      message(resolveEntitlementTerms("QUOTA", { limit: 5, pricing, resetPeriod: "MONTHLY" })),
    ).toBe(M.hardQuotaForbidsPrice);
    expect(message(resolveEntitlementTerms("BOOLEAN", { value: true, pricing }))).toBe(
      M.booleanForbidden,
    );
  });

  it("replaces overagePrice on update only when overagePrice is cleared in the same change", () => {
    const perUnit = terms(
      resolveEntitlementTerms("METERED", { overagePrice: 5, resetPeriod: "MONTHLY" }),
    );
    expect(message(resolveEntitlementTerms("METERED", { pricing }, perUnit))).toBe(M.priceTwice);
    expect(
      terms(resolveEntitlementTerms("METERED", { pricing, overagePrice: null }, perUnit)),
    ).toMatchObject({ pricing, overagePrice: null });
  });
});

describe("decimal prices", () => {
  it("price METERED and SOFT quota units like overagePrice, and only one price is taken", () => {
    expect(
      terms(
        resolveEntitlementTerms("METERED", { overagePriceDecimal: "0.15", resetPeriod: "MONTHLY" }),
      ),
    ).toMatchObject({ overagePriceDecimal: "0.15", overagePrice: null, includedAmount: 0 });
    expect(
      terms(
        resolveEntitlementTerms("QUOTA", {
          limit: 5,
          limitBehavior: "SOFT",
          overagePriceDecimal: "0.01",
          resetPeriod: "MONTHLY",
        }),
      ).overagePriceDecimal,
    ).toBe("0.01");
    const both = { overagePrice: 1, overagePriceDecimal: "0.5", resetPeriod: "MONTHLY" as const };
    expect(message(resolveEntitlementTerms("METERED", both))).toBe(M.priceTwice);
    expect(M.priceTwice).toMatch(/overagePriceDecimal/);
    expect(
      message(
        resolveEntitlementTerms("QUOTA", {
          limit: 5,
          overagePriceDecimal: "0.5",
          resetPeriod: "MONTHLY",
        }),
      ),
    ).toBe(M.hardQuotaForbidsPrice);
    expect(
      message(resolveEntitlementTerms("BOOLEAN", { value: true, overagePriceDecimal: "1" })),
    ).toBe(M.booleanForbidden);
  });

  it("have up to 15 digits before the point and 10 after, never negative", () => {
    for (const ok of ["0", "12", "0.01", "0.0000000001", "999999999999999.9999999999"]) {
      expect(DECIMAL_PRICE_PATTERN.test(ok), ok).toBe(true);
    }
    for (const bad of ["-1", "1.", ".5", "0.00000000001", "1000000000000000", "1e-5", "01", " 1"]) {
      expect(DECIMAL_PRICE_PATTERN.test(bad), bad).toBe(false);
    }
  });
});

describe("dimensions", () => {
  const metered = { overagePrice: 10, resetPeriod: "MONTHLY" as const };

  it("default each entry's includedAmount to 0 and make its unset prices null", () => {
    const resolved = terms(
      resolveEntitlementTerms("METERED", {
        ...metered,
        dimensions: [
          { match: { model: "large" }, overagePriceDecimal: "0.3" },
          { match: { model: "small", direction: "input" }, includedAmount: 100, overagePrice: 1 },
        ],
      }),
    );
    expect(resolved.dimensions).toEqual([
      {
        match: { model: "large" },
        includedAmount: 0,
        overagePrice: null,
        overagePriceDecimal: "0.3",
        pricing: null,
      },
      {
        match: { model: "small", direction: "input" },
        includedAmount: 100,
        overagePrice: 1,
        overagePriceDecimal: null,
        pricing: null,
      },
    ]);
  });

  it("want exactly one price per entry and no two entries with the same match", () => {
    expect(
      message(
        resolveEntitlementTerms("METERED", { ...metered, dimensions: [{ match: { a: 1 } }] }),
      ),
    ).toBe(
      'dimensions[0] needs exactly one of "overagePrice", "overagePriceDecimal" and "pricing"',
    );
    expect(
      message(
        resolveEntitlementTerms("METERED", {
          ...metered,
          dimensions: [{ match: { a: 1 }, overagePrice: 1, overagePriceDecimal: "1" }],
        }),
      ),
    ).toMatch(/needs exactly one/);
    // 1 and "1" are the same value: groups compare as strings; key order does not matter.
    expect(
      message(
        resolveEntitlementTerms("METERED", {
          ...metered,
          dimensions: [
            { match: { a: 1, b: "x" }, overagePrice: 1 },
            { match: { b: "x", a: "1" }, overagePrice: 2 },
          ],
        }),
      ),
    ).toBe("dimensions[1].match repeats an earlier entry's match");
    expect(resolveDimensions([{ match: {}, overagePrice: 1 }])).toMatchObject({ ok: false });
    expect(
      resolveDimensions([{ match: { a: 1, b: 2, c: 3, d: 4 }, overagePrice: 1 }]),
    ).toMatchObject({ ok: false, message: "dimensions[0].match must name 1 to 3 properties" });
    const many = Array.from({ length: MAX_DIMENSIONS + 1 }, (_, index) => ({
      match: { a: index },
      overagePrice: 1,
    }));
    expect(resolveDimensions(many)).toMatchObject({ ok: false });
    expect(resolveDimensions(many.slice(1))).toMatchObject({ ok: true });
  });

  it("are only for METERED and SOFT quota features", () => {
    const dimensions = [{ match: { a: 1 }, overagePrice: 1 }];
    expect(message(resolveEntitlementTerms("BOOLEAN", { value: true, dimensions }))).toBe(
      M.booleanForbidden,
    );
    expect(
      message(resolveEntitlementTerms("QUOTA", { limit: 5, resetPeriod: "MONTHLY", dimensions })),
    ).toBe(M.hardQuotaForbidsPrice);
    expect(
      terms(
        resolveEntitlementTerms("QUOTA", {
          limit: 5,
          limitBehavior: "SOFT",
          overagePrice: 3,
          resetPeriod: "MONTHLY",
          dimensions,
        }),
      ).dimensions,
    ).toHaveLength(1);
  });

  it("name only properties the feature's meter groups by", () => {
    const meter = { ...DEFAULT_METER, groupBy: ["model", "direction"] };
    expect(dimensionsMeterProblem([{ match: { model: "x", direction: "in" } }], meter)).toBe(
      undefined,
    );
    expect(dimensionsMeterProblem([{ match: { region: "eu" } }], meter)).toBe(
      "dimensions[0].match.region is not in the feature's meter groupBy (model, direction)",
    );
    expect(dimensionsMeterProblem([{ match: { model: "x" } }], null)).toMatch(/has no groupBy/);
    expect(dimensionsMeterProblem(null, null)).toBeUndefined();
  });
});

describe("updates", () => {
  const hardQuota = terms(resolveEntitlementTerms("QUOTA", { limit: 10, resetPeriod: "MONTHLY" }));

  it("merge over the stored terms and keep what was not sent", () => {
    expect(terms(resolveEntitlementTerms("QUOTA", { limit: 20 }, hardQuota))).toMatchObject({
      limit: 20,
      limitBehavior: "HARD",
      resetPeriod: "MONTHLY",
    });
  });

  it("must leave a valid whole: switching to SOFT needs a price, back to HARD must clear it", () => {
    expect(message(resolveEntitlementTerms("QUOTA", { limitBehavior: "SOFT" }, hardQuota))).toBe(
      M.softQuotaMissingPrice,
    );
    const soft = terms(
      resolveEntitlementTerms("QUOTA", { limitBehavior: "SOFT", overagePrice: 100 }, hardQuota),
    );
    expect(message(resolveEntitlementTerms("QUOTA", { limitBehavior: "HARD" }, soft))).toBe(
      M.hardQuotaForbidsPrice,
    );
    expect(
      terms(resolveEntitlementTerms("QUOTA", { limitBehavior: "HARD", overagePrice: null }, soft)),
    ).toMatchObject({ limitBehavior: "HARD", overagePrice: null });
  });

  it("cannot clear a required field", () => {
    expect(message(resolveEntitlementTerms("QUOTA", { limit: null }, hardQuota))).toBe(
      M.quotaMissing,
    );
  });

  it("cannot add a field the type forbids", () => {
    const flag = terms(resolveEntitlementTerms("BOOLEAN", { value: true }));
    expect(message(resolveEntitlementTerms("BOOLEAN", { limit: 3 }, flag))).toBe(
      M.booleanForbidden,
    );
  });

  it("keep only the term fields of a whole stored row", () => {
    const row = { ...hardQuota, id: "row-id", planId: "plan-id", createdAt: "then" };
    expect(Object.keys(terms(resolveEntitlementTerms("QUOTA", {}, row))).sort()).toEqual([
      "dimensions",
      "includedAmount",
      "limit",
      "limitBehavior",
      "overagePrice",
      "overagePriceDecimal",
      "pricing",
      "resetPeriod",
      "value",
    ]);
  });

  it("do not mutate the stored terms", () => {
    const before = { ...hardQuota };
    resolveEntitlementTerms("QUOTA", { limit: 99 }, hardQuota);
    expect(hardQuota).toEqual(before);
  });
});

describe("featureUnitProblem", () => {
  it("refuses a unit on BOOLEAN features only", () => {
    expect(featureUnitProblem("BOOLEAN", "seat")).toMatch(/BOOLEAN features have no "unit"/);
    expect(featureUnitProblem("BOOLEAN", null)).toBeUndefined();
    expect(featureUnitProblem("QUOTA", "seat")).toBeUndefined();
  });
});
