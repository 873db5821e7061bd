import { allowanceOf, isCounted } from "@edge-platform/shared/billing/entitlement-decision";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import type { FeatureType } from "@edge-platform/shared/db/schema/catalog";
import type { UsageAlertThresholdType } from "@edge-platform/shared/db/schema/usage-alerts";
import type { NewTenantEvent } from "./tenant-events.ts";

// Usage alerts and the quota.exhausted event: when a threshold counts as
// reached, and what the events say. The tenant's EntitlementCounter applies
// these rules in the same synchronous step as the count it decides on.
//
// A threshold is reached when the tenant's units in the feature's reset
// window are at least its units: `units` thresholds are those units;
// `percent` thresholds are ceil(allowance x percent / 100) of the limit
// (QUOTA, HARD or SOFT) or the included amount (METERED) of the tenant's
// current plan, so "80%" of 7 is 6 (5.6 rounded up: the first count at or
// above 80%). An alert fires once per (alert, window); an alert created
// after its threshold was passed fires at the next count in that window.

/** Alerts a tenant may define (they are checked on every count of the feature). */
export const MAX_ALERTS_PER_TENANT = 100;
/** Percent thresholds: 1 to 1,000 (above 100 warns of overage on SOFT and METERED features). */
export const PERCENT_RANGE = { min: 1, max: 1000 } as const;
/** Units thresholds: 1 to a trillion. */
export const UNITS_RANGE = { min: 1, max: 1_000_000_000_000 } as const;

export interface UsageThreshold {
  type: UsageAlertThresholdType;
  value: number;
}

export interface UsageAlertTerms {
  id: string;
  featureLookupKey: string;
  threshold: UsageThreshold;
}

/** What a percent threshold is a percentage of, on the plan's terms; null when there is nothing. */
export function alertAllowance(
  snapshot: SnapshotTerms,
): { kind: "limit" | "included"; amount: number } | null {
  if (!isCounted(snapshot)) return null;
  const amount = allowanceOf(snapshot);
  if (amount <= 0) return null;
  return { kind: snapshot.featureType === "METERED" ? "included" : "limit", amount };
}

/** The units at which the threshold is reached under `snapshot`; null when it cannot be. */
export function thresholdUnits(threshold: UsageThreshold, snapshot: SnapshotTerms): number | null {
  if (!isCounted(snapshot)) return null;
  if (threshold.type === "units") return threshold.value;
  const allowance = alertAllowance(snapshot);
  if (!allowance) return null;
  // Exact integer ceiling: no float error on large allowances.
  return Number((BigInt(allowance.amount) * BigInt(threshold.value) + 99n) / 100n);
}

/**
 * Why an alert cannot be defined for a feature, or null. `snapshot` is the
 * tenant's current plan's terms for it (undefined: not on the plan, or no
 * subscription), which percent thresholds need.
 */
export function alertDefinitionProblem(
  feature: { lookupKey: string; type: FeatureType },
  threshold: UsageThreshold,
  snapshot: SnapshotTerms | undefined,
): string | null {
  if (feature.type === "BOOLEAN") {
    return `Feature "${feature.lookupKey}" is BOOLEAN: it has no usage to alert on`;
  }
  if (threshold.type === "units") return null;
  if (!snapshot) {
    return `A percent threshold needs the feature on the tenant's current plan; "${feature.lookupKey}" is not on it (use a units threshold)`;
  }
  if (!alertAllowance(snapshot)) {
    return `A percent threshold needs a limit or an included amount; "${feature.lookupKey}" has none on the current plan (use a units threshold)`;
  }
  if (
    snapshot.featureType === "QUOTA" &&
    snapshot.limitBehavior !== "SOFT" &&
    threshold.value > 100
  ) {
    return `"${feature.lookupKey}" has a HARD limit: usage never passes 100% of it`;
  }
  return null;
}

export interface CountedWindow {
  featureKey: string;
  /** The reset window's key: its start, or `lifetime`. */
  windowKey: string;
  windowStart: string;
  windowEnd: string | null;
}

/** `evt_` ids derived from what the event is about, so a repeat after a crash dedups at the receiver. */
export function thresholdEventId(alertId: string, windowKey: string): string {
  return `evt_threshold_${alertId}_${windowKey}`;
}

export function quotaExhaustedEventId(tenantId: string, featureKey: string, windowKey: string) {
  return `evt_quota_${tenantId}_${featureKey}_${windowKey}`;
}

/** The alerts of the window's feature that `used` reaches, each as its event. */
export function reachedAlertEvents(
  tenantId: string,
  alerts: readonly UsageAlertTerms[],
  snapshot: SnapshotTerms,
  window: CountedWindow,
  used: number,
  now: Date,
): (NewTenantEvent & { id: string })[] {
  const events: (NewTenantEvent & { id: string })[] = [];
  const allowance = alertAllowance(snapshot);
  for (const alert of alerts) {
    if (alert.featureLookupKey !== window.featureKey) continue;
    const units = thresholdUnits(alert.threshold, snapshot);
    if (units === null || used < units) continue;
    events.push({
      id: thresholdEventId(alert.id, window.windowKey),
      type: "usage.threshold_reached",
      tenantId,
      createdAt: now,
      data: {
        featureKey: window.featureKey,
        alertId: alert.id,
        threshold: { type: alert.threshold.type, value: alert.threshold.value },
        thresholdUnits: units,
        used,
        ...(allowance?.kind === "included"
          ? { included: allowance.amount }
          : { limit: allowance?.amount ?? null }),
        windowStart: window.windowStart,
        windowEnd: window.windowEnd,
      },
    });
  }
  return events;
}

/** The event of a HARD limit's first refusal in a window. */
export function quotaExhaustedEvent(
  tenantId: string,
  window: CountedWindow,
  refusal: { limit: number; used: number; requested: number },
  now: Date,
): NewTenantEvent & { id: string } {
  return {
    id: quotaExhaustedEventId(tenantId, window.featureKey, window.windowKey),
    type: "quota.exhausted",
    tenantId,
    createdAt: now,
    data: {
      featureKey: window.featureKey,
      limit: refusal.limit,
      used: refusal.used,
      requested: refusal.requested,
      windowStart: window.windowStart,
      windowEnd: window.windowEnd,
    },
  };
}
