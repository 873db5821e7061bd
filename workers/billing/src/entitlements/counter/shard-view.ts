import type { ShardReport } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import { type WindowKey, windowId, windowIdOf } from "./window-keys.ts";

/*
 * A counter shard other than 0: its running totals per window, reported to
 * shard 0 (shard-leases.ts), and its lease of each HARD window.
 *
 * `counted` is every unit this shard counted in the window (less units its
 * flush took back); `reported` is `counted` as of the last report shard 0
 * answered. The shard's `window_totals.used` is its view of the tenant's
 * total: shard 0's answer to that report plus what was counted here since.
 * Lease units: `received - lease_used - returned` are left to admit here.
 */

const SHARD_VIEW_TABLES = `
  CREATE TABLE IF NOT EXISTS shard_view (
    feature_key TEXT NOT NULL,
    period_key TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    period_start TEXT NOT NULL,
    period_end TEXT,
    seq INTEGER NOT NULL DEFAULT 0,
    counted INTEGER NOT NULL DEFAULT 0,
    reported INTEGER NOT NULL DEFAULT 0,
    received INTEGER NOT NULL DEFAULT 0,
    lease_used INTEGER NOT NULL DEFAULT 0,
    returned INTEGER NOT NULL DEFAULT 0,
    synced_at_ms INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (feature_key, period_key)
  ) WITHOUT ROWID;
`;

interface ViewRow extends Record<string, SqlStorageValue> {
  feature_key: string;
  period_key: string;
  subscription_id: string;
  period_start: string;
  period_end: string | null;
  seq: number;
  counted: number;
  reported: number;
  received: number;
  lease_used: number;
  returned: number;
  synced_at_ms: number;
}

export class ShardView {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(SHARD_VIEW_TABLES);
  }

  /** Lease units this shard may still admit in the window. */
  available(key: WindowKey): number {
    const row = this.row(key.featureKey, key.window.key);
    return row ? row.received - row.lease_used - row.returned : 0;
  }

  /** When shard 0 last answered a report of the window (epoch ms; 0: never). */
  syncedAtMs(key: WindowKey): number {
    return this.row(key.featureKey, key.window.key)?.synced_at_ms ?? 0;
  }

  /** `amount` units counted here (`fromLease`: admitted from the window's lease). */
  count(key: WindowKey, amount: number, fromLease: boolean): void {
    this.ensure(key);
    this.sql.exec(
      `UPDATE shard_view SET counted = counted + ?1, lease_used = lease_used + ?2
        WHERE feature_key = ?3 AND period_key = ?4`,
      amount,
      fromLease ? amount : 0,
      key.featureKey,
      key.window.key,
    );
  }

  /** Units the flush took back (events it could not claim). */
  takeBack(featureKey: string, periodKey: string, amount: number): void {
    this.sql.exec(
      "UPDATE shard_view SET counted = counted - ? WHERE feature_key = ? AND period_key = ?",
      amount,
      featureKey,
      periodKey,
    );
  }

  /**
   * Numbered reports of the windows asked for (`wants`: lease units wanted,
   * by window id) and of every window counted since its last report.
   */
  reports(wants: Map<string, { key: WindowKey; want: number }>): ShardReport[] {
    for (const { key } of wants.values()) this.ensure(key);
    const rows = this.sql
      .exec<ViewRow>("SELECT * FROM shard_view WHERE counted != reported")
      .toArray();
    const byId = new Map(rows.map((row) => [windowIdOf(row.feature_key, row.period_key), row]));
    for (const { key } of wants.values()) {
      const row = this.row(key.featureKey, key.window.key);
      if (row) byId.set(windowId(key), row);
    }
    return [...byId.entries()].map(([id, row]) => this.numbered(row, wants.get(id)?.want ?? 0));
  }

  /**
   * Shard 0's answer to a report: the lease units it granted are received,
   * and the view becomes its total plus what was counted here since the
   * report. Answers that view.
   */
  answered(report: ShardReport, total: number, granted: number, nowMs: number): number {
    const row = this.sql
      .exec<{ counted: number }>(
        `UPDATE shard_view SET received = received + ?1, reported = ?2, synced_at_ms = ?3
          WHERE feature_key = ?4 AND period_key = ?5 RETURNING counted`,
        granted,
        report.counted,
        nowMs,
        report.featureKey,
        report.periodKey,
      )
      .one();
    return total + (row.counted - report.counted);
  }

  /** Gives back the unused lease units of the windows; answers their reports. */
  returnLeases(windows: { featureKey: string; periodKey: string }[]): ShardReport[] {
    const reports: ShardReport[] = [];
    for (const { featureKey, periodKey } of windows) {
      this.sql.exec(
        `UPDATE shard_view SET returned = received - lease_used
          WHERE feature_key = ? AND period_key = ?`,
        featureKey,
        periodKey,
      );
      const row = this.row(featureKey, periodKey);
      if (row) reports.push(this.numbered(row, 0));
    }
    return reports;
  }

  /** Whether units were counted since shard 0 last heard of them. */
  hasUnreported(): boolean {
    return (
      this.sql.exec("SELECT 1 FROM shard_view WHERE counted != reported LIMIT 1").toArray().length >
      0
    );
  }

  /** Forgets the windows that ended before `cutoff` (with the counter's own). */
  forgetEnded(cutoff: Date): void {
    this.sql.exec(
      "DELETE FROM shard_view WHERE period_end IS NOT NULL AND period_end < ? AND counted = reported",
      cutoff.toISOString(),
    );
  }

  private numbered(row: ViewRow, want: number): ShardReport {
    const seq = this.sql
      .exec<{ seq: number }>(
        "UPDATE shard_view SET seq = seq + 1 WHERE feature_key = ? AND period_key = ? RETURNING seq",
        row.feature_key,
        row.period_key,
      )
      .one().seq;
    return {
      subscriptionId: row.subscription_id,
      featureKey: row.feature_key,
      periodKey: row.period_key,
      periodStart: row.period_start,
      periodEnd: row.period_end,
      seq,
      counted: row.counted,
      leaseUsed: row.lease_used,
      returned: row.returned,
      received: row.received,
      want,
    };
  }

  private ensure(key: WindowKey): void {
    this.sql.exec(
      `INSERT INTO shard_view (feature_key, period_key, subscription_id, period_start, period_end)
       VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      key.featureKey,
      key.window.key,
      key.subscriptionId,
      key.window.start.toISOString(),
      key.window.end?.toISOString() ?? null,
    );
  }

  private row(featureKey: string, periodKey: string): ViewRow | undefined {
    return this.sql
      .exec<ViewRow>(
        "SELECT * FROM shard_view WHERE feature_key = ? AND period_key = ?",
        featureKey,
        periodKey,
      )
      .toArray()[0];
  }
}
