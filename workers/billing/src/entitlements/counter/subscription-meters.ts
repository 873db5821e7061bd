import type { UsageEntry } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import { isPlainMeter, type Meter } from "@edge-platform/shared/billing/meter";
import type { CounterTenant } from "./tenant-state.ts";

/*
 * The meters of the subscriptions a record batch counts for. An event is
 * counted under the meter frozen in its own subscription's snapshot (a
 * late event of a subscription that has since changed keeps the old
 * meter): the current subscription's come with the tenant's state, an
 * earlier one's are read once from D1. Snapshots never change, so what was
 * read stays right; the cache is only bounded.
 */

const MAX_CACHED_SUBSCRIPTIONS = 64;

export class SubscriptionMeters {
  /** Per subscription, the features with a meter other than the plain one. */
  private readonly bySubscription = new Map<string, Map<string, Meter>>();

  constructor(
    private readonly db: () => D1Database,
    private readonly tenant: CounterTenant,
  ) {}

  /** Loads what the entries' subscriptions need; call before the synchronous step. */
  async ready(entries: readonly UsageEntry[]): Promise<void> {
    const missing = [...new Set(entries.map((entry) => entry.subscriptionId))].filter(
      (id) => !this.bySubscription.has(id),
    );
    if (missing.length === 0) return;
    if (this.bySubscription.size + missing.length > MAX_CACHED_SUBSCRIPTIONS) {
      this.bySubscription.clear();
    }
    const state = await this.tenant.entitlements();
    for (const subscriptionId of missing) {
      if (state.subscription?.id === subscriptionId) {
        const meters = new Map<string, Meter>();
        for (const snapshot of state.snapshots.values()) {
          if (snapshot.meter && !isPlainMeter(snapshot.meter)) {
            meters.set(snapshot.featureLookupKey, snapshot.meter);
          }
        }
        this.bySubscription.set(subscriptionId, meters);
      } else {
        this.bySubscription.set(subscriptionId, await this.load(subscriptionId));
      }
    }
  }

  /** The meter an entry counts under, or null for a feature measured by `amount`. */
  meterOf(entry: Pick<UsageEntry, "subscriptionId" | "featureKey">): Meter | null {
    return this.bySubscription.get(entry.subscriptionId)?.get(entry.featureKey) ?? null;
  }

  private async load(subscriptionId: string): Promise<Map<string, Meter>> {
    const { results } = await this.db()
      .prepare(
        "SELECT feature_lookup_key AS feature, meter FROM entitlement_snapshots WHERE subscription_id = ? AND meter IS NOT NULL",
      )
      .bind(subscriptionId)
      .all<{ feature: string; meter: string }>();
    const meters = new Map<string, Meter>();
    for (const row of results) {
      const meter = JSON.parse(row.meter) as Meter;
      if (!isPlainMeter(meter)) meters.set(row.feature, meter);
    }
    return meters;
  }
}
