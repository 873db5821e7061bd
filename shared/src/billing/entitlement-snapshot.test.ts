import { describe, expect, it } from "vitest";
import { buildEntitlementSnapshots } from "./entitlement-snapshot.ts";

const terms = {
  value: null,
  limit: null,
  limitBehavior: null,
  overagePrice: null,
  includedAmount: null,
  resetPeriod: null,
  pricing: null,
  overagePriceDecimal: null,
  dimensions: null,
};

describe("buildEntitlementSnapshots", () => {
  it("copies every active feature's terms, ordered by lookup key, with defaults made explicit", () => {
    const snapshots = buildEntitlementSnapshots([
      {
        feature: { lookupKey: "projects", type: "QUOTA", status: "ACTIVE" },
        // Stored before HARD became the explicit default: the snapshot says HARD.
        terms: { ...terms, limit: 5, resetPeriod: "MONTHLY" },
      },
      {
        feature: { lookupKey: "api_calls", type: "METERED", status: "ACTIVE" },
        terms: { ...terms, overagePrice: 10, resetPeriod: "MONTHLY" },
      },
      {
        feature: { lookupKey: "sso", type: "BOOLEAN", status: "ACTIVE" },
        terms: { ...terms, value: true },
      },
    ]);
    expect(snapshots).toEqual([
      {
        featureLookupKey: "api_calls",
        featureType: "METERED",
        ...terms,
        overagePrice: 10,
        includedAmount: 0,
        resetPeriod: "MONTHLY",
        meter: null,
      },
      {
        featureLookupKey: "projects",
        featureType: "QUOTA",
        ...terms,
        limit: 5,
        limitBehavior: "HARD",
        resetPeriod: "MONTHLY",
        meter: null,
      },
      { featureLookupKey: "sso", featureType: "BOOLEAN", ...terms, value: true, meter: null },
    ]);
  });

  it("copies only the terms of a whole entitlement row (never its id)", () => {
    const row = { ...terms, value: true, id: "entitlement-row-id", planId: "p" };
    const [snapshot] = buildEntitlementSnapshots([
      { feature: { lookupKey: "sso", type: "BOOLEAN", status: "ACTIVE" }, terms: row },
    ]);
    expect(snapshot).toEqual({
      featureLookupKey: "sso",
      featureType: "BOOLEAN",
      ...terms,
      value: true,
      meter: null,
    });
  });

  it("copies the feature's meter and the decimal and per-group prices", () => {
    const meter = {
      aggregation: "SUM" as const,
      property: "tokens",
      filters: { region: ["eu"] },
      groupBy: ["model"],
    };
    const source = {
      feature: { lookupKey: "tokens", type: "METERED" as const, status: "ACTIVE" as const, meter },
      terms: {
        ...terms,
        overagePriceDecimal: "0.15",
        resetPeriod: "MONTHLY" as const,
        dimensions: [
          {
            match: { model: "large" },
            includedAmount: 0,
            overagePrice: 2,
            overagePriceDecimal: null,
            pricing: null,
          },
        ],
      },
    };
    const [snapshot] = buildEntitlementSnapshots([source]);
    expect(snapshot).toEqual({
      featureLookupKey: "tokens",
      featureType: "METERED",
      ...terms,
      includedAmount: 0,
      overagePriceDecimal: "0.15",
      resetPeriod: "MONTHLY",
      dimensions: [
        {
          match: { model: "large" },
          includedAmount: 0,
          overagePrice: 2,
          overagePriceDecimal: null,
          pricing: null,
        },
      ],
      meter,
    });
    // A copy: a later change of the feature's meter does not reach the snapshot.
    meter.groupBy.push("direction");
    expect(snapshot?.meter?.groupBy).toEqual(["model"]);
  });

  it("leaves out archived features", () => {
    expect(
      buildEntitlementSnapshots([
        {
          feature: { lookupKey: "legacy", type: "BOOLEAN", status: "ARCHIVED" },
          terms: { ...terms, value: true },
        },
      ]),
    ).toEqual([]);
  });

  it("returns copies: changing the source afterwards does not change a snapshot", () => {
    const source = {
      feature: { lookupKey: "projects", type: "QUOTA" as const, status: "ACTIVE" as const },
      terms: {
        ...terms,
        limit: 5,
        limitBehavior: "HARD" as const,
        resetPeriod: "MONTHLY" as const,
      },
    };
    const [snapshot] = buildEntitlementSnapshots([source]);
    source.terms.limit = 500;
    expect(snapshot?.limit).toBe(5);
  });

  it("refuses stored terms that break the type rules", () => {
    expect(() =>
      buildEntitlementSnapshots([
        {
          feature: { lookupKey: "sso", type: "BOOLEAN", status: "ACTIVE" },
          terms: { ...terms, value: true, limit: 3 },
        },
      ]),
    ).toThrow(/breaks the BOOLEAN rules/);
  });
});
