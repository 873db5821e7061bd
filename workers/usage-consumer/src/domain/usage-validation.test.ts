import type { Meter } from "@edge-platform/shared/billing/meter";
import type { TenantEntitlementState } from "@edge-platform/shared/db/entitlement-state";
import { describe, expect, it } from "vitest";
import { judgeRawMessage, type ValidationLookups } from "./usage-validation.ts";

const received = "2026-11-10T12:00:00.000Z";
const message = {
  id: "11111111-1111-4111-8111-111111111111",
  tenantId: "22222222-2222-4222-8222-222222222222",
  eventId: "33333333-3333-4333-8333-333333333333",
  feature: "api_calls",
  amount: 5,
  timestamp: "2026-11-10T11:00:00.000Z",
  receivedAt: received,
};
const terms = {
  value: null,
  limit: null,
  limitBehavior: null,
  overagePrice: null,
  includedAmount: 0,
  pricing: null,
};
const entitlements: TenantEntitlementState = {
  subscription: {
    id: "44444444-4444-4444-8444-444444444444",
    status: "ACTIVE",
    interval: "MONTHLY",
    startedAt: new Date("2026-10-05T08:00:00Z"),
    trialEndsAt: null,
    currentPeriodEnd: new Date("2026-12-05T08:00:00Z"),
    cancelAtPeriodEnd: false,
  },
  snapshots: new Map([
    [
      "api_calls",
      { ...terms, featureLookupKey: "api_calls", featureType: "METERED", resetPeriod: "MONTHLY" },
    ],
    [
      "sso",
      { ...terms, featureLookupKey: "sso", featureType: "BOOLEAN", value: true, resetPeriod: null },
    ],
  ]),
};
const lookups =
  (overrides: Partial<ValidationLookups> = {}) =>
  () => ({
    row: {
      id: message.id,
      tenantId: message.tenantId,
      status: "PENDING" as const,
      receivedAt: received,
    },
    tenant: { status: "ACTIVE" as const },
    entitlements,
    // Processing long after receipt: the age check must not care.
    now: new Date("2026-11-30T00:00:00Z"),
    ...overrides,
  });
const codeOf = (body: unknown, overrides: Partial<ValidationLookups> = {}) => {
  const verdict = judgeRawMessage(body, lookups(overrides));
  return verdict.kind === "rejected" ? verdict.code : verdict.kind;
};

describe("the nine validation checks", () => {
  it("passes a good event into the subscription's own monthly window (UTC)", () => {
    const verdict = judgeRawMessage(message, lookups());
    expect(verdict).toMatchObject({
      kind: "valid",
      subscriptionId: entitlements.subscription?.id,
      window: {
        key: "2026-11-05T08:00:00.000Z",
        start: "2026-11-05T08:00:00.000Z",
        end: "2026-12-05T08:00:00.000Z",
      },
    });
  });

  it("gives each failure its stable code, first failing check first", () => {
    expect(codeOf({ ...message, amount: undefined })).toBe("MISSING_REQUIRED_FIELDS");
    expect(codeOf("garbage")).toBe("MISSING_REQUIRED_FIELDS");
    expect(codeOf({ ...message, eventId: "evt-1", feature: "nope" })).toBe("INVALID_EVENT_ID");
    expect(codeOf(message, { tenant: undefined })).toBe("TENANT_NOT_FOUND");
    expect(codeOf({ ...message, timestamp: "soon" }, { tenant: { status: "SUSPENDED" } })).toBe(
      "TENANT_NOT_ACTIVE",
    );
    expect(codeOf({ ...message, timestamp: "soon" })).toBe("INVALID_TIMESTAMP");
    expect(codeOf({ ...message, timestamp: "2026-11-10T12:05:01.000Z" })).toBe(
      "TIMESTAMP_IN_FUTURE",
    );
    expect(codeOf({ ...message, timestamp: "2026-11-03T11:59:59.000Z" })).toBe("TIMESTAMP_TOO_OLD");
    expect(codeOf({ ...message, timestamp: "2026-11-03T12:00:00.000Z" })).toBe("valid");
    expect(
      codeOf(
        { ...message, feature: "nope" },
        { entitlements: { subscription: null, snapshots: new Map() } },
      ),
    ).toBe("NO_ACTIVE_SUBSCRIPTION");
    expect(codeOf({ ...message, feature: "nope", amount: 0 })).toBe("FEATURE_NOT_ENTITLED");
    expect(codeOf({ ...message, feature: "sso", amount: 0 })).toBe("BOOLEAN_FEATURE");
    expect(codeOf({ ...message, amount: 1.5 })).toBe("INVALID_AMOUNT");
  });

  it("rejects an event its feature's meter cannot read, and passes one its filters leave out", () => {
    const metered = (meter: Meter | null) => ({
      entitlements: {
        ...entitlements,
        snapshots: new Map([
          [
            "api_calls",
            {
              ...terms,
              featureLookupKey: "api_calls",
              featureType: "METERED" as const,
              resetPeriod: "MONTHLY" as const,
              meter,
            },
          ],
        ]),
      },
    });
    const maxTokens = metered({ aggregation: "MAX", property: "tokens", filters: {}, groupBy: [] });
    const missing = judgeRawMessage(
      { ...message, properties: { region: "eu" } },
      lookups(maxTokens),
    );
    expect(missing).toMatchObject({
      kind: "rejected",
      code: "PROPERTY_MISSING",
      reason:
        'Feature "api_calls": the MAX meter reads property "tokens", which the event does not have',
      hasRow: true,
    });
    expect(codeOf(message, maxTokens)).toBe("PROPERTY_MISSING");
    expect(codeOf({ ...message, properties: { tokens: "many" } }, maxTokens)).toBe(
      "PROPERTY_NOT_NUMERIC",
    );
    expect(codeOf({ ...message, properties: { tokens: "12.5" } }, maxTokens)).toBe("valid");
    expect(codeOf({ ...message, properties: { tokens: 3 } }, maxTokens)).toBe("valid");
    // Earlier checks come first.
    expect(codeOf({ ...message, amount: 0 }, maxTokens)).toBe("INVALID_AMOUNT");
    const euOnly = metered({
      aggregation: "MAX",
      property: "tokens",
      filters: { region: ["eu"] },
      groupBy: [],
    });
    expect(codeOf({ ...message, properties: { region: "us" } }, euOnly)).toBe("valid");
    expect(codeOf({ ...message, properties: { region: "eu" } }, euOnly)).toBe("PROPERTY_MISSING");
    // No meter, or the plain one: amount alone, whatever the properties.
    expect(codeOf(message, metered(null))).toBe("valid");
    expect(codeOf({ ...message, properties: { x: 1 } })).toBe("valid");
  });

  it("treats an event that was already judged as a duplicate, before any check", () => {
    for (const status of ["VALIDATED", "AGGREGATED", "REJECTED"] as const) {
      const row = { id: message.id, tenantId: message.tenantId, status, receivedAt: received };
      expect(codeOf({ ...message, eventId: "not-a-uuid" }, { row })).toBe("duplicate");
    }
    expect(codeOf(message, { row: undefined })).toBe("EVENT_NOT_FOUND");
  });
});
