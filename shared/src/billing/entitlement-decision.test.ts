import { describe, expect, it } from "vitest";
import {
  checkOutcome,
  consumeDecision,
  DENIAL_REASONS,
  lookupEntitlement,
  MAX_COUNTER_VALUE,
  quotaExceededMessage,
  subscriptionAccess,
} from "./entitlement-decision.ts";
import type { SnapshotTerms } from "./entitlement-snapshot.ts";

const base = {
  value: null,
  limit: null,
  limitBehavior: null,
  overagePrice: null,
  includedAmount: null,
  resetPeriod: null,
  pricing: null,
} as const;
const flag = (value: boolean): SnapshotTerms => ({
  ...base,
  featureLookupKey: "sso",
  featureType: "BOOLEAN",
  value,
});
const hard = (limit: number): SnapshotTerms => ({
  ...base,
  featureLookupKey: "projects",
  featureType: "QUOTA",
  limit,
  limitBehavior: "HARD",
  resetPeriod: "MONTHLY",
});
const soft = (limit: number): SnapshotTerms => ({
  ...hard(limit),
  featureLookupKey: "seats",
  limitBehavior: "SOFT",
  overagePrice: 500,
});
const metered = (included: number): SnapshotTerms => ({
  ...base,
  featureLookupKey: "api_calls",
  featureType: "METERED",
  includedAmount: included,
  overagePrice: 10,
  resetPeriod: "MONTHLY",
});

describe("subscriptionAccess", () => {
  const end = new Date("2026-02-01T00:00:00.000Z");
  const before = new Date("2026-01-15T00:00:00.000Z");
  it.each([
    ["ACTIVE", "granted"],
    ["TRIALING", "granted"],
    ["PAST_DUE", "granted"],
    ["PAUSED", "paused"],
    ["CANCELLED", "none"],
  ] as const)("%s -> %s", (status, expected) => {
    expect(
      subscriptionAccess({ status, cancelAtPeriodEnd: false, currentPeriodEnd: end }, before),
    ).toBe(expected);
  });

  it("ends a cancel-at-period-end subscription exactly at the period end", () => {
    const sub = { status: "ACTIVE" as const, cancelAtPeriodEnd: true, currentPeriodEnd: end };
    expect(subscriptionAccess(sub, before)).toBe("granted");
    expect(subscriptionAccess(sub, end)).toBe("none");
  });

  it("is none without a subscription", () => {
    expect(subscriptionAccess(null, before)).toBe("none");
  });
});

describe("lookupEntitlement", () => {
  const snapshots = new Map([["projects", hard(5)]]);
  it("explains every denial", () => {
    expect(lookupEntitlement("none", snapshots, "projects")).toEqual({
      kind: "denied",
      reason: DENIAL_REASONS.noSubscription,
    });
    expect(lookupEntitlement("paused", snapshots, "projects")).toEqual({
      kind: "denied",
      reason: DENIAL_REASONS.paused,
    });
    expect(lookupEntitlement("granted", snapshots, "nope")).toEqual({
      kind: "denied",
      reason: 'Feature "nope" is not included in your plan',
    });
    expect(lookupEntitlement("granted", snapshots, "projects").kind).toBe("entitled");
  });
});

describe("checkOutcome", () => {
  it("BOOLEAN: allowed is the value", () => {
    expect(checkOutcome(flag(true), 0, null)).toMatchObject({
      allowed: true,
      type: "BOOLEAN",
      reason: null,
    });
    expect(checkOutcome(flag(false), 0, null)).toMatchObject({
      allowed: false,
      reason: 'Feature "sso" is not enabled on your plan',
    });
  });

  it("HARD quota: allowed while below the limit", () => {
    expect(checkOutcome(hard(5), 4, "2026-02-01T00:00:00.000Z")).toEqual({
      allowed: true,
      feature: "projects",
      type: "QUOTA",
      limit: 5,
      used: 4,
      remaining: 1,
      overage: 0,
      resetAt: "2026-02-01T00:00:00.000Z",
      reason: null,
    });
    expect(checkOutcome(hard(5), 5, null)).toMatchObject({
      allowed: false,
      remaining: 0,
      reason: "Quota exceeded",
    });
    expect(checkOutcome(hard(0), 0, null).allowed).toBe(false);
  });

  it("SOFT quota and METERED: always allowed, overage counted", () => {
    expect(checkOutcome(soft(3), 7, null)).toMatchObject({
      allowed: true,
      remaining: 0,
      overage: 4,
    });
    expect(checkOutcome(metered(100), 130, null)).toMatchObject({
      allowed: true,
      limit: 100,
      remaining: 0,
      overage: 30,
    });
  });
});

describe("consumeDecision", () => {
  it("refuses BOOLEAN features", () => {
    expect(consumeDecision(flag(true), 0, 1)).toEqual({ kind: "not_consumable" });
  });

  it("HARD: all or nothing at the limit", () => {
    expect(consumeDecision(hard(5), 4, 1)).toEqual({
      kind: "consumed",
      used: 5,
      limit: 5,
      remaining: 0,
      overage: false,
    });
    expect(consumeDecision(hard(5), 4, 2)).toEqual({ kind: "quota_exceeded", limit: 5, used: 4 });
    expect(consumeDecision(hard(5), 5, 1).kind).toBe("quota_exceeded");
  });

  it("SOFT and METERED: take the units and flag overage beyond the allowance", () => {
    expect(consumeDecision(soft(3), 3, 1)).toMatchObject({ used: 4, overage: true, remaining: 0 });
    expect(consumeDecision(soft(3), 1, 2)).toMatchObject({ used: 3, overage: false });
    expect(consumeDecision(metered(10), 9, 5)).toMatchObject({
      used: 14,
      overage: true,
      limit: 10,
    });
  });

  it("never lets a counter pass the exact-integer range", () => {
    expect(consumeDecision(metered(0), MAX_COUNTER_VALUE, 1)).toEqual({
      kind: "counter_overflow",
      used: MAX_COUNTER_VALUE,
    });
  });
});

describe("quotaExceededMessage", () => {
  it("names the key, the limit and the usage", () => {
    expect(quotaExceededMessage("projects", 50, 50, 1)).toBe(
      'Quota exceeded for "projects": limit is 50, used 50, requested 1',
    );
  });
});
