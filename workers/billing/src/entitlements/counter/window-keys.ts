import { type ResetWindow, resetWindowAt } from "@edge-platform/shared/billing/billing-period";
import type { UsageEntry } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import type { TenantEntitlementState } from "@edge-platform/shared/db/entitlement-state";
import type { CountedWindow } from "../../notifications/index.ts";
import type { DrawTarget } from "./credit-balance.ts";

/*
 * How the counter names its windows. Limits are decided on the tenant's
 * window of a feature (`window_totals`, keyed by windowId); units are
 * attributed to the subscription that was current when they were used
 * (`counters`, keyed by attributionId).
 */

/** A subscription's reset window of a feature. */
export interface WindowKey {
  subscriptionId: string;
  featureKey: string;
  window: ResetWindow;
}

/** The window the current subscription counts a feature's usage in at `now`. */
export function windowKeyAt(
  state: TenantEntitlementState,
  snapshot: SnapshotTerms,
  now: Date,
): WindowKey {
  const subscription = state.subscription;
  if (!subscription) throw new Error("windowKey needs a subscription");
  return {
    subscriptionId: subscription.id,
    featureKey: snapshot.featureLookupKey,
    window: resetWindowAt(subscription, snapshot.resetPeriod ?? "NEVER", now),
  };
}

/** The window a usage entry names (the pipeline computed it from the event's time). */
export function entryWindowKey(
  entry: Pick<
    UsageEntry,
    "subscriptionId" | "featureKey" | "periodKey" | "periodStart" | "periodEnd"
  >,
): WindowKey {
  return {
    subscriptionId: entry.subscriptionId,
    featureKey: entry.featureKey,
    window: {
      key: entry.periodKey,
      start: new Date(entry.periodStart),
      end: entry.periodEnd ? new Date(entry.periodEnd) : null,
    },
  };
}

/** The subscription's attribution row of a window (a `counters` row). */
export function attributionId(key: WindowKey): string {
  return attributionIdOf(key.subscriptionId, key.featureKey, key.window.key);
}

export function attributionIdOf(
  subscriptionId: string,
  featureKey: string,
  periodKey: string,
): string {
  return `${subscriptionId}\u0000${featureKey}\u0000${periodKey}`;
}

/** A window of the tenant's usage of a feature (what limits are decided on). */
export function windowId(key: WindowKey): string {
  return windowIdOf(key.featureKey, key.window.key);
}

export function windowIdOf(featureKey: string, periodKey: string): string {
  return `${featureKey}\u0000${periodKey}`;
}

/**
 * The tenant's whole window: a cycle window's key is its whole start,
 * while the subscription's part of it may start later.
 */
export function countedWindow(key: WindowKey): CountedWindow {
  return {
    featureKey: key.featureKey,
    windowKey: key.window.key,
    windowStart: key.window.end ? key.window.key : key.window.start.toISOString(),
    windowEnd: key.window.end?.toISOString() ?? null,
  };
}

/** Where a draw for the window's usage is recorded. */
export function drawTarget(key: WindowKey): DrawTarget {
  return {
    subscriptionId: key.subscriptionId,
    featureKey: key.featureKey,
    periodKey: key.window.key,
    periodStart: key.window.start.toISOString(),
    periodEnd: key.window.end?.toISOString() ?? null,
  };
}
