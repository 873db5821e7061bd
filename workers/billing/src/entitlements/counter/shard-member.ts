import type { EntitlementCounterClient } from "@edge-platform/shared/billing/entitlement-counter-client";
import type {
  ConsumeResult,
  UsageEntry,
} from "@edge-platform/shared/billing/entitlement-counter-protocol";
import { isHardLimited } from "@edge-platform/shared/billing/entitlement-decision";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import type { Meter } from "@edge-platform/shared/billing/meter";
import { isPlainMeter } from "@edge-platform/shared/billing/meter";
import type { TenantEntitlementState } from "@edge-platform/shared/db/entitlement-state";
import type {
  ConsumeAnswering,
  ConsumeStep,
  CountedConsume,
  SettledConsume,
} from "./consume-step.ts";
import type { CreditBalance } from "./credit-balance.ts";
import { countsOnAnyShard, subscriptionNeedsShardZero } from "./shard-rules.ts";
import { ShardSync } from "./shard-sync.ts";
import type { ShardView } from "./shard-view.ts";
import type { WindowCounts } from "./window-counts.ts";
import type { WindowKey } from "./window-keys.ts";

/*
 * The part of a counter shard other than 0 that talks to shard 0 (README.md,
 * "Counter shards"): whether a call is shard 0's to decide, the window views
 * and their age, and leases for HARD consumes.
 */
export class ShardMember {
  readonly sync: ShardSync;

  constructor(
    private readonly view: ShardView,
    private readonly windows: WindowCounts,
    private readonly creditGrants: CreditBalance,
    private readonly consumeStep: ConsumeStep,
    readonly owner: () => EntitlementCounterClient,
    shard: () => number,
    private readonly tenantId: () => string,
    /** USAGE_COUNTER_LEASE_INTERVAL_MS: how far a check's view may lag the tenant's total. */
    private readonly leaseIntervalMs: number,
  ) {
    this.sync = new ShardSync(view, windows, owner, shard);
  }

  /** Whether a consume or check of the feature is shard 0's (credits, thresholds, meters). */
  needsShardZero(
    state: TenantEntitlementState,
    snapshot: SnapshotTerms,
  ): boolean | Promise<boolean> {
    if (subscriptionNeedsShardZero(state) || !isPlainMeter(snapshot.meter)) return true;
    return this.hasCreditGrants();
  }

  /** Whether a batch of events is shard 0's to count (credits, thresholds, meters). */
  async batchNeedsShardZero(
    state: TenantEntitlementState,
    entries: readonly UsageEntry[],
    meterOf: (entry: UsageEntry) => Meter | null,
  ): Promise<boolean> {
    if (subscriptionNeedsShardZero(state)) return true;
    if (entries.some((entry) => !countsOnAnyShard(meterOf(entry)))) return true;
    return await this.hasCreditGrants();
  }

  /**
   * The window's view: synced first when missing or older than half the
   * lease interval. The other shards report at least every half interval,
   * so the view lags the tenant's total by at most the lease interval.
   */
  async currentView(key: WindowKey): Promise<number> {
    if (
      this.windows.usedIn(key) === undefined ||
      Date.now() - this.view.syncedAtMs(key) > this.leaseIntervalMs / 2
    ) {
      await this.sync.sync([{ key, want: 0 }]);
    }
    const used = this.windows.usedIn(key);
    if (used === undefined) throw new Error("counter shard has no view of the window");
    return used;
  }

  /**
   * Makes sure the shard holds `amount` lease units of the window, asking
   * shard 0 when it does not; answers whether it holds them now (the caller
   * checks again in its synchronous step). A failed ask answers false: the
   * consume then goes to shard 0.
   */
  async lease(key: WindowKey, amount: number): Promise<boolean> {
    if (this.view.available(key) >= amount) return true;
    try {
      await this.sync.sync([{ key, want: amount }]);
    } catch (error) {
      console.error(
        JSON.stringify({ level: "warn", msg: "lease request failed", error: String(error) }),
      );
      return false;
    }
    return this.view.available(key) >= amount;
  }

  /**
   * Decides a consume here: from this shard's lease for a HARD limit, here
   * alone otherwise, or by shard 0 (what is shard 0's, or when the lease
   * runs short: it then decides with every shard's leases in view).
   */
  async settle(
    input: SettledConsume,
    prepared: CountedConsume,
    now: Date,
    answering: ConsumeAnswering,
  ): Promise<ConsumeResult> {
    const { state, snapshot, key } = prepared;
    const hard = isHardLimited(snapshot);
    const local =
      !(await this.needsShardZero(state, snapshot)) &&
      (!hard || this.view.available(key) >= input.amount || (await this.lease(key, input.amount)));
    // No await until the units are taken here, or shard 0 decides.
    const repeated = answering.repeated?.();
    if (repeated) return repeated;
    const result =
      local && (!hard || this.view.available(key) >= input.amount)
        ? this.consumeStep.decide(input, { ...prepared, terms: null }, now, {
            leased: 0,
            fromLease: hard,
          })
        : await this.owner().consume(
            input.featureKey,
            input.amount,
            input.nowMs,
            input.requestId,
            input.properties,
          );
    answering.keep(result);
    return result;
  }

  /** Answers at once while the grants are loaded (most calls), else once they are. */
  private hasCreditGrants(): boolean | Promise<boolean> {
    const loading = this.creditGrants.ready(this.tenantId());
    const any = () => this.creditGrants.grants().length > 0;
    return loading ? loading.then(any) : any();
  }
}
