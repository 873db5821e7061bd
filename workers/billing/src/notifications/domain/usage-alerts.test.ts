import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  alertAllowance,
  alertDefinitionProblem,
  quotaExhaustedEvent,
  reachedAlertEvents,
  thresholdUnits,
} from "./usage-alerts.ts";

const none = {
  value: null,
  limit: null,
  limitBehavior: null,
  overagePrice: null,
  includedAmount: null,
  resetPeriod: "MONTHLY",
  pricing: null,
} as const;
const hard = (limit: number): SnapshotTerms => ({
  ...none,
  featureLookupKey: "projects",
  featureType: "QUOTA",
  limit,
  limitBehavior: "HARD",
});
const soft = (limit: number): SnapshotTerms => ({ ...hard(limit), limitBehavior: "SOFT" });
const metered = (includedAmount: number | null): SnapshotTerms => ({
  ...none,
  featureLookupKey: "api_calls",
  featureType: "METERED",
  includedAmount,
});
const flag: SnapshotTerms = {
  ...none,
  featureLookupKey: "sso",
  featureType: "BOOLEAN",
  value: true,
};

const window = {
  featureKey: "projects",
  windowKey: "2031-01-31T10:00:00.000Z",
  windowStart: "2031-01-31T10:00:00.000Z",
  windowEnd: "2031-02-28T10:00:00.000Z",
};
const now = new Date("2031-02-10T00:00:00.000Z");

describe("thresholdUnits", () => {
  it("rounds a percentage of the limit or included amount up to the first unit at or above it", () => {
    expect(thresholdUnits({ type: "percent", value: 80 }, hard(10))).toBe(8);
    expect(thresholdUnits({ type: "percent", value: 80 }, hard(7))).toBe(6); // 5.6
    expect(thresholdUnits({ type: "percent", value: 1 }, hard(1))).toBe(1); // 0.01
    expect(thresholdUnits({ type: "percent", value: 100 }, hard(3))).toBe(3);
    expect(thresholdUnits({ type: "percent", value: 150 }, metered(1000))).toBe(1500);
    expect(thresholdUnits({ type: "units", value: 42 }, metered(null))).toBe(42);
  });

  it("is exact for large allowances and never below the percentage", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 40 }),
        fc.integer({ min: 1, max: 1000 }),
        (limit, percent) => {
          const units = thresholdUnits({ type: "percent", value: percent }, soft(limit));
          if (units === null) return false;
          const exact = BigInt(limit) * BigInt(percent);
          // units x 100 >= limit x percent > (units - 1) x 100
          return BigInt(units) * 100n >= exact && BigInt(units - 1) * 100n < exact;
        },
      ),
    );
  });

  it("has no percentage of nothing, and nothing to count on a BOOLEAN feature", () => {
    expect(thresholdUnits({ type: "percent", value: 50 }, metered(null))).toBeNull();
    expect(thresholdUnits({ type: "percent", value: 50 }, metered(0))).toBeNull();
    expect(thresholdUnits({ type: "units", value: 1 }, flag)).toBeNull();
    expect(alertAllowance(metered(500))).toEqual({ kind: "included", amount: 500 });
    expect(alertAllowance(soft(5))).toEqual({ kind: "limit", amount: 5 });
  });
});

describe("alertDefinitionProblem", () => {
  const quota = { lookupKey: "projects", type: "QUOTA" as const };
  it("accepts units on any counted feature, plan or not", () => {
    expect(alertDefinitionProblem(quota, { type: "units", value: 5 }, undefined)).toBeNull();
  });
  it("refuses BOOLEAN features, percent without the feature on the plan or without an allowance, and HARD beyond 100%", () => {
    expect(
      alertDefinitionProblem(
        { lookupKey: "sso", type: "BOOLEAN" },
        { type: "units", value: 1 },
        flag,
      ),
    ).toMatch(/BOOLEAN/);
    expect(alertDefinitionProblem(quota, { type: "percent", value: 80 }, undefined)).toMatch(
      /not on it/,
    );
    expect(
      alertDefinitionProblem(
        { lookupKey: "api_calls", type: "METERED" },
        { type: "percent", value: 80 },
        metered(0),
      ),
    ).toMatch(/limit or an included amount/);
    expect(alertDefinitionProblem(quota, { type: "percent", value: 120 }, hard(10))).toMatch(
      /HARD/,
    );
    expect(alertDefinitionProblem(quota, { type: "percent", value: 120 }, soft(10))).toBeNull();
  });
});

describe("reachedAlertEvents", () => {
  const alerts = [
    { id: "a1", featureLookupKey: "projects", threshold: { type: "percent" as const, value: 80 } },
    { id: "a2", featureLookupKey: "projects", threshold: { type: "units" as const, value: 9 } },
    { id: "a3", featureLookupKey: "other", threshold: { type: "units" as const, value: 1 } },
  ];

  it("lists the window feature's alerts the total reaches, with ids per alert and window", () => {
    expect(reachedAlertEvents("t1", alerts, hard(10), window, 7, now)).toEqual([]);
    const events = reachedAlertEvents("t1", alerts, hard(10), window, 8, now);
    expect(events).toEqual([
      {
        id: "evt_threshold_a1_2031-01-31T10:00:00.000Z",
        type: "usage.threshold_reached",
        tenantId: "t1",
        createdAt: now,
        data: {
          featureKey: "projects",
          alertId: "a1",
          threshold: { type: "percent", value: 80 },
          thresholdUnits: 8,
          used: 8,
          limit: 10,
          windowStart: window.windowStart,
          windowEnd: window.windowEnd,
        },
      },
    ]);
    expect(reachedAlertEvents("t1", alerts, hard(10), window, 12, now).map((e) => e.id)).toEqual([
      "evt_threshold_a1_2031-01-31T10:00:00.000Z",
      "evt_threshold_a2_2031-01-31T10:00:00.000Z",
    ]);
    // Another window, another id.
    const next = { ...window, windowKey: "2031-02-28T10:00:00.000Z" };
    expect(reachedAlertEvents("t1", alerts, hard(10), next, 8, now)[0]?.id).toBe(
      "evt_threshold_a1_2031-02-28T10:00:00.000Z",
    );
  });

  it("names the included amount of a METERED feature", () => {
    const calls = [{ ...alerts[0], featureLookupKey: "api_calls" }] as typeof alerts;
    const events = reachedAlertEvents(
      "t1",
      calls,
      metered(100),
      { ...window, featureKey: "api_calls" },
      90,
      now,
    );
    expect(events[0]?.data).toMatchObject({ included: 100, thresholdUnits: 80 });
    expect(events[0]?.data).not.toHaveProperty("limit");
  });
});

describe("quotaExhaustedEvent", () => {
  it("is one id per tenant, feature and window", () => {
    const event = quotaExhaustedEvent("t1", window, { limit: 5, used: 5, requested: 2 }, now);
    expect(event).toMatchObject({
      id: "evt_quota_t1_projects_2031-01-31T10:00:00.000Z",
      type: "quota.exhausted",
      data: { featureKey: "projects", limit: 5, used: 5, requested: 2 },
    });
  });
});
