import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import type { TenantEntitlementState } from "@edge-platform/shared/db/entitlement-state";
import type { TenantEventOutbox } from "./tenant-event-outbox.ts";
import type { CounterTenant } from "./tenant-state.ts";
import type { UsageAlertWatch } from "./usage-alert-watch.ts";
import { countedWindow, type WindowKey } from "./window-keys.ts";

/*
 * The counter's tenant events about usage (usage.threshold_reached,
 * quota.exhausted): decided inside the count's synchronous step from the
 * new total, stored in the outbox in that step, then sent at once; the
 * alarm retries what the queue refused.
 */

export class UsageNotices {
  constructor(
    private readonly alerts: UsageAlertWatch,
    private readonly outbox: TenantEventOutbox,
    private readonly tenant: CounterTenant,
    /** The window's total as the counter holds it. */
    private readonly usedIn: (key: WindowKey) => number | undefined,
    /** Asks for the alarm, which sends what the queue refused. */
    private readonly wake: () => void,
  ) {}

  /** Synchronous, after a consume counted: store what the new total reaches, then send it. */
  counted(snapshot: SnapshotTerms, key: WindowKey, used: number, now: Date): void {
    const tenantId = this.tenant.id();
    if (!tenantId) return;
    if (this.alerts.counted(tenantId, snapshot, countedWindow(key), used, now) > 0) {
      this.send();
    }
  }

  /** Synchronous, after a HARD limit refused a consume: quota.exhausted, once per window. */
  refused(
    key: WindowKey,
    refusal: { limit: number; used: number; requested: number },
    now: Date,
  ): void {
    const tenantId = this.tenant.id();
    if (!tenantId) return;
    if (this.alerts.refused(tenantId, countedWindow(key), refusal, now) > 0) {
      this.send();
    }
  }

  /**
   * Before a record batch's synchronous step: the alert set, and the plan
   * terms of the watched features among the batch's windows (percent
   * thresholds need them); empty when no alert watches them.
   */
  async watchedTerms(
    tenantId: string,
    keys: Iterable<WindowKey>,
  ): Promise<Map<string, SnapshotTerms>> {
    await this.alerts.ready(tenantId);
    const watched = [...keys].filter((key) => this.alerts.watches(key.featureKey));
    if (watched.length === 0) return new Map();
    let state: TenantEntitlementState;
    try {
      state = await this.tenant.entitlements();
    } catch (error) {
      // Pipeline usage is never refused: the alerts are checked again at the next count.
      console.error(
        JSON.stringify({
          level: "error",
          msg: "alerts skipped for a record batch",
          error: String(error),
        }),
      );
      return new Map();
    }
    return new Map(
      watched.flatMap((key) => {
        const snapshot = state.snapshots.get(key.featureKey);
        return snapshot ? [[key.featureKey, snapshot] as const] : [];
      }),
    );
  }

  /** Synchronous, after a record batch counted: each watched window's new total. */
  recorded(terms: Map<string, SnapshotTerms>, keys: Iterable<WindowKey>): void {
    if (terms.size === 0) return;
    const now = new Date();
    for (const key of keys) {
      const snapshot = terms.get(key.featureKey);
      const used = this.usedIn(key);
      if (snapshot && used !== undefined) this.counted(snapshot, key, used, now);
    }
  }

  /** Sends now (the runtime releases it once the count is stored); the alarm retries what fails. */
  send(): void {
    this.wake();
    void this.outbox.send();
  }
}
