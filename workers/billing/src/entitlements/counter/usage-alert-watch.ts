import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import { database } from "@edge-platform/shared/db/client";
import {
  type CountedWindow,
  quotaExhaustedEvent,
  reachedAlertEvents,
  tenantAlertTerms,
  type UsageAlertTerms,
} from "../../notifications/index.ts";
import type { TenantEventOutbox } from "./tenant-event-outbox.ts";

/** The alert set is re-read at least this often even without a refresh call. */
const ALERTS_TTL_MS = 30_000;

/*
 * The EntitlementCounter's watch over the tenant's usage alerts and HARD
 * limits. `ready` loads the tenant's alerts from D1 (when cold, after a
 * refresh, or after the TTL) before the counter's synchronous step; inside
 * that step `counted` and `refused` decide from the new total and store
 * the events in the outbox, whose ids make each fire once per window.
 */
export class UsageAlertWatch {
  private alerts: readonly UsageAlertTerms[] = [];
  private loadedAt: number | null = null;
  private loading: Promise<readonly UsageAlertTerms[]> | null = null;
  /** Bumped by `refresh`, so a load that started earlier is not taken as current. */
  private generation = 0;

  constructor(
    private readonly env: Env,
    private readonly outbox: TenantEventOutbox,
  ) {}

  /** The alert routes call this (through the counter) after every change. */
  refresh(): void {
    this.generation++;
    this.loadedAt = null;
    this.loading = null;
  }

  /**
   * The tenant's alerts, loaded when stale; until a load completes the
   * previous set stays in use. A failed load keeps the previous set (and is
   * tried again on the next call): alerts never make a consume fail.
   */
  ready(tenantId: string): readonly UsageAlertTerms[] | Promise<readonly UsageAlertTerms[]> {
    if (this.loadedAt !== null && Date.now() - this.loadedAt < ALERTS_TTL_MS) return this.alerts;
    if (this.loading) return this.loading;
    const generation = this.generation;
    const loading = tenantAlertTerms(database(this.env.DB), tenantId)
      .then((alerts) => {
        if (generation === this.generation) {
          this.alerts = alerts;
          this.loadedAt = Date.now();
        }
        return alerts;
      })
      .catch((error: unknown) => {
        console.error(
          JSON.stringify({
            level: "error",
            msg: "usage alerts not loaded; the previous set stays in use",
            error: String(error),
          }),
        );
        return this.alerts;
      })
      .finally(() => {
        if (this.loading === loading) this.loading = null;
      });
    this.loading = loading;
    return loading;
  }

  watches(featureKey: string): boolean {
    return this.alerts.some((alert) => alert.featureLookupKey === featureKey);
  }

  /** Synchronous, after a count: the alerts `used` reaches; returns how many events are new. */
  counted(
    tenantId: string,
    snapshot: SnapshotTerms,
    window: CountedWindow,
    used: number,
    now: Date,
  ): number {
    if (!this.watches(window.featureKey)) return 0;
    return this.outbox.add(
      reachedAlertEvents(tenantId, this.alerts, snapshot, window, used, now),
      window.windowEnd,
    );
  }

  /** Synchronous, after a HARD limit refused a consume: 1 the first time in the window. */
  refused(
    tenantId: string,
    window: CountedWindow,
    refusal: { limit: number; used: number; requested: number },
    now: Date,
  ): number {
    return this.outbox.add([quotaExhaustedEvent(tenantId, window, refusal, now)], window.windowEnd);
  }
}
