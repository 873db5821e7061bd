import type { Meter } from "@edge-platform/shared/billing/meter";
import type { TenantEntitlementState } from "@edge-platform/shared/db/entitlement-state";

/*
 * What a counter shard other than 0 may count itself (README.md, "Counter
 * shards"). Its units are summed with the other shards' in D1, so only
 * meters whose units add up across shards qualify: a sum or a count with no
 * groups. A distinct value, a peak or an average needs every event in one
 * place, and so do group combinations (capped per window). Prepaid credits,
 * progressive thresholds and usage alerts are decided by shard 0 alone.
 */

/** Whether events of a feature with this meter (null: none) may be counted on any shard. */
export function countsOnAnyShard(meter: Meter | null | undefined): boolean {
  if (!meter) return true;
  return (
    (meter.aggregation === "SUM" || meter.aggregation === "COUNT") && meter.groupBy.length === 0
  );
}

/** Whether the tenant's subscription has terms only shard 0 applies (prepaid credits, usage thresholds). */
export function subscriptionNeedsShardZero(state: TenantEntitlementState): boolean {
  const subscription = state.subscription;
  return Boolean(subscription?.prepaid) || (subscription?.usageThresholds?.length ?? 0) > 0;
}
