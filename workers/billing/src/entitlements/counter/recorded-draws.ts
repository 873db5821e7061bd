import type { TenantEntitlementState } from "@edge-platform/shared/db/entitlement-state";
import { type CreditBalance, creditTermsOf } from "./credit-balance.ts";
import { groupPricedSnapshot } from "./meter-contribution.ts";
import type { ProgressiveWatch } from "./progressive-watch.ts";
import type { LoggedEntry } from "./record-batch.ts";
import type { CounterTenant } from "./tenant-state.ts";
import type { WindowCounts } from "./window-counts.ts";
import { drawTarget, type WindowKey } from "./window-keys.ts";

/*
 * What usage recorded by the pipeline draws on the credit balance (rules in
 * credits/domain/credits.ts). Unlike a consume it is never refused: when
 * the balance or the terms cannot be read the draws are skipped and the
 * invoice bills the usage in full. A logged event's draws and its cost to
 * the progressive watch hold only until its flush settles the event: when
 * the flush cannot claim it, they go back with its units, and only claimed
 * draws are weighed for an automatic top-up or credits.depleted.
 */

export class RecordedDraws {
  constructor(
    private readonly grants: CreditBalance,
    private readonly tenant: CounterTenant,
    private readonly windows: WindowCounts,
    private readonly progressive: ProgressiveWatch,
  ) {}

  /**
   * Before a record batch's synchronous step: the grants and the
   * subscription's terms (cached), or null when they cannot be read.
   */
  async ready(tenantId: string): Promise<TenantEntitlementState | null> {
    try {
      await this.grants.ready(tenantId);
      return await this.tenant.entitlements();
    } catch (error) {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "credits skipped for a record batch",
          error: String(error),
        }),
      );
      return null;
    }
  }

  /**
   * Synchronous, before the units are added: each logged event draws on
   * its own and its draws are remembered, as a flush that cannot claim the
   * event takes its units back and returns what they drew.
   */
  payForLogged(state: TenantEntitlementState, logged: readonly LoggedEntry[]): void {
    for (const entry of logged) {
      this.pay(
        state,
        entry.key,
        entry.countedBefore,
        entry.amount,
        entry.usageEventId,
        entry.group,
      );
    }
  }

  /**
   * Synchronous, in the step that settles a flush, after the events it
   * could not claim were taken back: the claimed events' draws and costs
   * stand.
   */
  claimed(usageEventIds: readonly string[]): void {
    this.grants.claimEventDraws(usageEventIds, this.tenant.id(), new Date());
    this.progressive.forgetEvents(usageEventIds);
  }

  /** Synchronous, in the step that takes an event's units back: what they drew and cost goes back. */
  returned(usageEventId: string): void {
    this.grants.returnEventDraws(usageEventId);
    this.progressive.takeBack(usageEventId);
  }

  /**
   * Synchronous, before the units are added: the current subscription's
   * priced usage draws the balance. `counted` units of the batch come
   * before these in the window; `usageEventId` names the logged event they
   * belong to. Answers the draws.
   */
  pay(
    state: TenantEntitlementState,
    key: WindowKey,
    counted: number,
    amount: number,
    usageEventId?: string,
    group?: LoggedEntry["group"],
  ): { grantId: string; amount: number }[] {
    const terms = creditTermsOf(state, this.tenant.id());
    const snapshot = state.snapshots.get(key.featureKey);
    if (!terms || !snapshot || state.subscription?.id !== key.subscriptionId) return [];
    return this.grants.payForRecorded(
      terms,
      group ? groupPricedSnapshot(snapshot, group.dimensions) : snapshot,
      drawTarget(key),
      group ? group.unitsBefore : this.windows.attributedUsed(key) + counted,
      amount,
      new Date(),
      usageEventId,
    );
  }
}
