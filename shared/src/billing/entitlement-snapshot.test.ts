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
      },
      {
        featureLookupKey: "projects",
        featureType: "QUOTA",
        ...terms,
        limit: 5,
        limitBehavior: "HARD",
        resetPeriod: "MONTHLY",
      },
      { featureLookupKey: "sso", featureType: "BOOLEAN", ...terms, value: true },
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
    });
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
