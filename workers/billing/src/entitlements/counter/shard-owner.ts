import type { EntitlementCounterClient } from "@edge-platform/shared/billing/entitlement-counter-client";
import type {
  ConsumeResult,
  ShardReport,
  ShardSyncResult,
} from "@edge-platform/shared/billing/entitlement-counter-protocol";
import {
  allowanceOf,
  isHardLimited,
  lookupEntitlement,
  subscriptionAccess,
} from "@edge-platform/shared/billing/entitlement-decision";
import type { TenantEntitlementState } from "@edge-platform/shared/db/entitlement-state";
import {
  type ConsumeAnswering,
  type ConsumeStep,
  type CountedConsume,
  type SettledConsume,
  spokenFor,
} from "./consume-step.ts";
import type { ShardLeases } from "./shard-leases.ts";
import type { UsageNotices } from "./usage-notices.ts";
import type { WindowCounts } from "./window-counts.ts";
import { entryWindowKey, type WindowKey, windowKeyAt } from "./window-keys.ts";

/** Before it refuses, shard 0 asks the shards holding leases to give them back this many times at most. */
const RECLAIM_ROUNDS = 2;

/** The counter's parts shard 0's side of the shards uses. */
export interface ShardOwnerParts {
  leases: ShardLeases;
  windows: WindowCounts;
  notices: UsageNotices;
  consumeStep: ConsumeStep;
  /** Creates the window's total from D1 (cold start; entitlement-counter.ts). */
  seed: (key: WindowKey) => Promise<number>;
  shardClient: (shard: number) => EntitlementCounterClient;
}

/*
 * Shard 0's side of the counter shards (README.md, "Counter shards"): the
 * other shards' reports and lease requests, HARD decisions that count their
 * leases as used, and taking leases back before a refusal.
 */
export class ShardOwner {
  constructor(private readonly parts: ShardOwnerParts) {}

  /** Applies a shard's reports and grants leases in one synchronous step; usage alerts fire on the new totals. */
  async sync(
    input: { tenantId: string; shard: number; windows: ShardReport[] },
    state: TenantEntitlementState,
  ): Promise<ShardSyncResult> {
    const { leases, windows, notices } = this.parts;
    const keys = input.windows.map(entryWindowKey);
    await Promise.all(
      keys.filter((key) => windows.usedIn(key) === undefined).map((key) => this.parts.seed(key)),
    );
    const watchedTerms = await notices.watchedTerms(input.tenantId, keys);
    const now = new Date();
    const answered = input.windows.map((report, index) => {
      const delta = leases.apply(input.shard, report, true);
      if (delta !== 0) windows.adjustTotal(report.featureKey, report.periodKey, delta);
      const total = windows.usedIn(keys[index] as WindowKey) ?? 0;
      const limit = hardLimitOf(state, report, now);
      const free = limit - total - leases.outstanding(report.featureKey, report.periodKey);
      const granted = limit < 0 ? 0 : leases.grant(report, input.shard, limit, free);
      return { featureKey: report.featureKey, periodKey: report.periodKey, total, granted };
    });
    notices.recorded(watchedTerms, keys);
    return { windows: answered };
  }

  /**
   * Decides a consume on shard 0: when the leases other shards hold stand
   * between it and the limit, takes them back first, then decides in one
   * synchronous step counting what is still leased as used.
   */
  async settle(
    input: SettledConsume,
    prepared: CountedConsume,
    now: Date,
    answering: ConsumeAnswering,
  ): Promise<ConsumeResult> {
    const { key, snapshot } = prepared;
    const { leases, windows } = this.parts;
    for (let round = 0; ; round++) {
      const leased = leases.outstanding(key.featureKey, key.window.key);
      const blocked = spokenFor(snapshot, windows.usedIn(key) ?? 0, input.amount, leased) > 0;
      if (blocked && round < RECLAIM_ROUNDS) {
        await this.reclaim(key);
        continue;
      }
      // From here to the return: no await. Read, decide and write are one step.
      const repeated = answering.repeated?.();
      if (repeated) return repeated;
      const result = this.parts.consumeStep.decide(input, prepared, now, {
        leased,
        fromLease: false,
      });
      answering.keep(result);
      return result;
    }
  }

  /** Runs `call` on each other shard that ever reported (a shard reports before it counts anything). */
  async onOtherShards(call: (shard: EntitlementCounterClient) => Promise<void>): Promise<void> {
    await Promise.all(
      this.parts.leases.shards().map((shard) => call(this.parts.shardClient(shard))),
    );
  }

  /**
   * Takes lease units back from the shards that hold some of the window:
   * their answers are reports, applied like a sync's. A shard that cannot
   * be reached keeps its lease counted.
   */
  private async reclaim(key: WindowKey): Promise<void> {
    const { leases, windows } = this.parts;
    const holders = leases.holders(key.featureKey, key.window.key);
    await Promise.all(
      holders.map(async ({ shard }) => {
        let reports: ShardReport[];
        try {
          reports = await this.parts.shardClient(shard).returnLeases({
            shard,
            windows: [{ featureKey: key.featureKey, periodKey: key.window.key }],
          });
        } catch (error) {
          console.error(
            JSON.stringify({
              level: "warn",
              msg: "counter shard did not give back its lease",
              shard,
              error: String(error),
            }),
          );
          return;
        }
        for (const report of reports) {
          const delta = leases.apply(shard, report, false);
          if (delta !== 0) windows.adjustTotal(report.featureKey, report.periodKey, delta);
        }
      }),
    );
  }
}

/** The HARD limit a lease of the reported window comes out of; -1 when it has none now. */
function hardLimitOf(state: TenantEntitlementState, report: ShardReport, now: Date): number {
  const found = lookupEntitlement(
    subscriptionAccess(state.subscription, now),
    state.snapshots,
    report.featureKey,
  );
  if (found.kind === "denied" || !isHardLimited(found.snapshot) || !state.subscription) return -1;
  const current = windowKeyAt(state, found.snapshot, now);
  return current.window.key === report.periodKey ? allowanceOf(found.snapshot) : -1;
}
