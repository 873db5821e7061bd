import type { EntitlementCounterClient } from "@edge-platform/shared/billing/entitlement-counter-client";
import type { ShardView } from "./shard-view.ts";
import type { WindowCounts } from "./window-counts.ts";
import { type WindowKey, windowId, windowIdOf } from "./window-keys.ts";

/** Reports per call: the protocol's bound. */
const MAX_REPORTS_PER_SYNC = 1_000;

/** A window a caller needs synced, and the lease units it wants (0: only the view). */
export interface WantedWindow {
  key: WindowKey;
  want: number;
}

/*
 * A counter shard other than 0 talking to shard 0: one sync at a time (so a
 * grant is never on its way while the next report goes out; see
 * shard-leases.ts), and callers that ask while one runs share the next one,
 * which carries all their windows and wants together.
 */
export class ShardSync {
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  private wants = new Map<string, WantedWindow>();

  constructor(
    private readonly view: ShardView,
    private readonly windows: WindowCounts,
    private readonly owner: () => EntitlementCounterClient,
    private readonly shard: () => number,
  ) {}

  /** Reports everything counted since the last sync, asks for the wants; resolves once answered. */
  sync(wanted: readonly WantedWindow[] = []): Promise<void> {
    for (const { key, want } of wanted) {
      const id = windowId(key);
      this.wants.set(id, { key, want: (this.wants.get(id)?.want ?? 0) + want });
    }
    if (this.queued) return this.queued;
    const previous = this.running;
    const queued: Promise<void> = Promise.resolve(previous?.catch(() => undefined)).then(() => {
      this.queued = null;
      this.running = queued;
      return this.exchange().finally(() => {
        if (this.running === queued) this.running = null;
      });
    });
    this.queued = queued;
    return queued;
  }

  private async exchange(): Promise<void> {
    const wants = this.wants;
    this.wants = new Map();
    const reports = this.view.reports(wants);
    for (let start = 0; start < reports.length; start += MAX_REPORTS_PER_SYNC) {
      const sent = reports.slice(start, start + MAX_REPORTS_PER_SYNC);
      const answer = await this.owner().syncShard({ shard: this.shard(), windows: sent });
      const byId = new Map(
        sent.map((report) => [windowIdOf(report.featureKey, report.periodKey), report]),
      );
      const nowMs = Date.now();
      for (const window of answer.windows) {
        const report = byId.get(windowIdOf(window.featureKey, window.periodKey));
        if (!report) continue;
        const view = this.view.answered(report, window.total, window.granted, nowMs);
        this.windows.setTotal(
          report.featureKey,
          report.periodKey,
          report.periodEnd,
          Math.max(0, view),
        );
      }
    }
  }
}
