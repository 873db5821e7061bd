import type { FeatureType } from "../db/schema/catalog.ts";
import type { SubscriptionStatus } from "../db/schema/subscriptions.ts";
import type { SnapshotTerms } from "./entitlement-snapshot.ts";

// The rules of the entitlement check and consume, given the tenant's
// subscription, the snapshot for the key and the units already used in the
// current reset window. Pure: the EntitlementCounter object supplies the
// counter and applies the decision in the same synchronous step.

export const DENIAL_REASONS = {
  noSubscription: "No active subscription",
  paused: "Subscription is paused",
  notInPlan: (featureKey: string) => `Feature "${featureKey}" is not included in your plan`,
  disabled: (featureKey: string) => `Feature "${featureKey}" is not enabled on your plan`,
  quotaExceeded: "Quota exceeded",
} as const;

/** The largest count a counter may reach (integers stay exact in JSON and SQLite). */
export const MAX_COUNTER_VALUE = Number.MAX_SAFE_INTEGER;

export interface SubscriptionAccessInput {
  status: SubscriptionStatus;
  cancelAtPeriodEnd: boolean;
  currentPeriodEnd: Date;
}

/**
 * Whether a subscription grants its entitlements at `now`. ACTIVE and
 * TRIALING do; PAST_DUE does too (the grace period while payment is
 * retried); PAUSED does not. A subscription cancelled at period end stops
 * granting at that instant even before the scheduled job marks it CANCELLED.
 */
export function subscriptionAccess(
  subscription: SubscriptionAccessInput | null,
  now: Date,
): "granted" | "paused" | "none" {
  if (!subscription || subscription.status === "CANCELLED") return "none";
  if (subscription.cancelAtPeriodEnd && now.getTime() >= subscription.currentPeriodEnd.getTime()) {
    return "none";
  }
  if (subscription.status === "PAUSED") return "paused";
  return "granted";
}

export type EntitlementLookup =
  | { kind: "entitled"; snapshot: SnapshotTerms }
  | { kind: "denied"; reason: string };

export function lookupEntitlement(
  access: "granted" | "paused" | "none",
  snapshots: ReadonlyMap<string, SnapshotTerms>,
  featureKey: string,
): EntitlementLookup {
  if (access === "none") return { kind: "denied", reason: DENIAL_REASONS.noSubscription };
  if (access === "paused") return { kind: "denied", reason: DENIAL_REASONS.paused };
  const snapshot = snapshots.get(featureKey);
  if (!snapshot) return { kind: "denied", reason: DENIAL_REASONS.notInPlan(featureKey) };
  return { kind: "entitled", snapshot };
}

/** Whether the feature is counted (QUOTA, METERED) rather than switched (BOOLEAN). */
export function isCounted(snapshot: SnapshotTerms): boolean {
  return snapshot.featureType !== "BOOLEAN";
}

/** Units usable before overage (SOFT QUOTA, METERED) or refusal (HARD QUOTA). */
export function allowanceOf(snapshot: SnapshotTerms): number {
  if (snapshot.featureType === "QUOTA") return snapshot.limit ?? 0;
  if (snapshot.featureType === "METERED") return snapshot.includedAmount ?? 0;
  return 0;
}

/** A QUOTA is hard unless it says SOFT (the rules default it to HARD). */
export function isHardLimited(snapshot: SnapshotTerms): boolean {
  return snapshot.featureType === "QUOTA" && snapshot.limitBehavior !== "SOFT";
}

export interface CheckOutcome {
  allowed: boolean;
  feature: string;
  type: FeatureType | null;
  /** The QUOTA limit or the METERED included amount; null for BOOLEAN or when denied. */
  limit: number | null;
  used: number | null;
  remaining: number | null;
  /** Units used beyond the limit or included amount (billed as overage). */
  overage: number | null;
  /** End of the current reset window (ISO-8601 UTC); null for NEVER, BOOLEAN or when denied. */
  resetAt: string | null;
  /** Why `allowed` is false; null when allowed. */
  reason: string | null;
  /** CREDITS_EXHAUSTED when a prepaid subscription's credit balance cannot pay for one more unit. */
  code?: "CREDITS_EXHAUSTED";
  /** Cents of credit that apply to the feature (priced features while the tenant has credits). */
  creditBalance?: number;
}

export function deniedCheck(featureKey: string, reason: string): CheckOutcome {
  return {
    allowed: false,
    feature: featureKey,
    type: null,
    limit: null,
    used: null,
    remaining: null,
    overage: null,
    resetAt: null,
    reason,
  };
}

/** The check for an entitled feature, given the units used in the current window. */
export function checkOutcome(
  snapshot: SnapshotTerms,
  used: number,
  resetAt: string | null,
): CheckOutcome {
  const feature = snapshot.featureLookupKey;
  if (snapshot.featureType === "BOOLEAN") {
    const allowed = snapshot.value === true;
    return {
      allowed,
      feature,
      type: "BOOLEAN",
      limit: null,
      used: null,
      remaining: null,
      overage: null,
      resetAt: null,
      reason: allowed ? null : DENIAL_REASONS.disabled(feature),
    };
  }
  const allowance = allowanceOf(snapshot);
  const allowed = !isHardLimited(snapshot) || used < allowance;
  return {
    allowed,
    feature,
    type: snapshot.featureType,
    limit: allowance,
    used,
    remaining: Math.max(0, allowance - used),
    overage: Math.max(0, used - allowance),
    resetAt,
    reason: allowed ? null : DENIAL_REASONS.quotaExceeded,
  };
}

export type ConsumeDecision =
  | {
      kind: "consumed";
      /** The counter after this consume. */
      used: number;
      limit: number;
      remaining: number;
      /** True once the counter is beyond the limit or included amount. */
      overage: boolean;
    }
  | { kind: "quota_exceeded"; limit: number; used: number }
  | { kind: "not_consumable" }
  | { kind: "counter_overflow"; used: number };

/**
 * Whether `amount` more units may be taken given `used`: a HARD quota
 * refuses anything that would pass its limit (all or nothing); SOFT quotas
 * and METERED features always take the units and report overage.
 */
export function consumeDecision(
  snapshot: SnapshotTerms,
  used: number,
  amount: number,
): ConsumeDecision {
  if (!isCounted(snapshot)) return { kind: "not_consumable" };
  const limit = allowanceOf(snapshot);
  if (isHardLimited(snapshot) && used + amount > limit) {
    return { kind: "quota_exceeded", limit, used };
  }
  const after = used + amount;
  if (after > MAX_COUNTER_VALUE) return { kind: "counter_overflow", used };
  return {
    kind: "consumed",
    used: after,
    limit,
    remaining: Math.max(0, limit - after),
    overage: after > limit,
  };
}

export function quotaExceededMessage(
  featureKey: string,
  limit: number,
  used: number,
  requested: number,
) {
  return `Quota exceeded for "${featureKey}": limit is ${limit}, used ${used}, requested ${requested}`;
}
