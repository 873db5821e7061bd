import type { ShardReport } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import { type WindowKey, windowId, windowIdOf } from "./window-keys.ts";

/*
 * A counter shard other than 0: its running totals per window, reported to
 * shard 0 (shard-leases.ts), and its lease of each HARD window.
 *
 * `counted` is every unit this shard counted in the window, less units its
 * flush took back: the sum of the window's `counters.used` here (a shard
 * other than 0 holds only its own units there), so a consume writes nothing
 * more for it; it is read once and then kept in memory beside the writes.
 * `reported` is `counted` as of the last report shard 0 answered. The
 * shard's `window_totals.used` is its view of the tenant's total: shard 0's
 * answer to that report plus what was counted here since.
 *
 * A lease covers every unit counted here in the window: `received -
 * counted - returned` are left to admit (events the pipeline brings are
 * never refused, and take lease units like consumes).
 */

const SHARD_VIEW_TABLES = `
  CREATE TABLE IF NOT EXISTS shard_view (
    feature_key TEXT NOT NULL,
    period_key TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    period_start TEXT NOT NULL,
    period_end TEXT,
    seq INTEGER NOT NULL DEFAULT 0,
    reported INTEGER NOT NULL DEFAULT 0,
    received INTEGER NOT NULL DEFAULT 0,
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
  reported: number;
  received: number;
  returned: number;
  synced_at_ms: number;
}

export class ShardView {
  /** Rows as last read or written: this object is their only writer, and each consume reads its lease. */
  private readonly rows = new Map<string, ViewRow | null>();
  /** `counted` per window, read once from `counters` and kept beside its writes. */
  private readonly countedRead = new Map<string, number>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec(SHARD_VIEW_TABLES);
  }

  /** Lease units this shard may still admit in the window. */
  available(key: WindowKey): number {
    const row = this.row(key.featureKey, key.window.key);
    if (!row) return 0;
    return Math.max(0, row.received - this.counted(key.featureKey, key.window.key) - row.returned);
  }

  /** When shard 0 last answered a report of the window (epoch ms; 0: never). */
  syncedAtMs(key: WindowKey): number {
    return this.row(key.featureKey, key.window.key)?.synced_at_ms ?? 0;
  }

  /** `amount` units just counted here (in `counters`, by the same synchronous step). */
  count(key: WindowKey, amount: number): void {
    this.ensure(key);
    this.moveCounted(key.featureKey, key.window.key, amount);
  }

  /** Units the flush just took back (events it could not claim): `counters` is read again (it clamps at 0). */
  takeBack(featureKey: string, periodKey: string): void {
    this.countedRead.delete(windowIdOf(featureKey, periodKey));
  }

  /**
   * Numbered reports of the windows asked for (`wants`: lease units wanted,
   * by window id) and of every window counted since its last report.
   */
  reports(wants: Map<string, { key: WindowKey; want: number }>): ShardReport[] {
    for (const { key } of wants.values()) this.ensure(key);
    const rows = this.sql.exec<ViewRow>("SELECT * FROM shard_view").toArray();
    return rows
      .map((row) => ({ row, id: windowIdOf(row.feature_key, row.period_key) }))
      .filter(
        ({ row, id }) =>
          wants.has(id) || this.counted(row.feature_key, row.period_key) !== row.reported,
      )
      .map(({ row, id }) => this.numbered(row, wants.get(id)?.want ?? 0));
  }

  /**
   * Shard 0's answer to a report: the lease units it granted are received,
   * and the view becomes its total plus what was counted here since the
   * report. Answers that view.
   */
  answered(report: ShardReport, total: number, granted: number, nowMs: number): number {
    this.update(
      report.featureKey,
      report.periodKey,
      "received = received + ?1, reported = ?2, synced_at_ms = ?3",
      granted,
      report.counted,
      nowMs,
    );
    return total + (this.counted(report.featureKey, report.periodKey) - report.counted);
  }

  /** Gives back the unused lease units of the windows; answers their reports. */
  returnLeases(windows: { featureKey: string; periodKey: string }[]): ShardReport[] {
    const reports: ShardReport[] = [];
    for (const { featureKey, periodKey } of windows) {
      const row = this.update(
        featureKey,
        periodKey,
        "returned = max(returned, received - ?1)",
        this.counted(featureKey, periodKey),
      );
      if (row) reports.push(this.numbered(row, 0));
    }
    return reports;
  }

  /** Whether units were counted since shard 0 last heard of them. */
  hasUnreported(): boolean {
    return this.sql
      .exec<ViewRow>("SELECT * FROM shard_view")
      .toArray()
      .some((row) => this.counted(row.feature_key, row.period_key) !== row.reported);
  }

  /** Forgets the windows that ended before `cutoff`, once reported (with the counter's own). */
  forgetEnded(cutoff: Date): void {
    for (const row of this.sql
      .exec<ViewRow>(
        "SELECT * FROM shard_view WHERE period_end IS NOT NULL AND period_end < ?",
        cutoff.toISOString(),
      )
      .toArray()) {
      if (this.counted(row.feature_key, row.period_key) !== row.reported) continue;
      this.sql.exec(
        "DELETE FROM shard_view WHERE feature_key = ? AND period_key = ?",
        row.feature_key,
        row.period_key,
      );
    }
    this.rows.clear();
    this.countedRead.clear();
  }

  private counted(featureKey: string, periodKey: string): number {
    const id = windowIdOf(featureKey, periodKey);
    const read = this.countedRead.get(id);
    if (read !== undefined) return read;
    const counted =
      this.sql
        .exec<{ counted: number | null }>(
          "SELECT sum(used) AS counted FROM counters WHERE feature_key = ? AND period_key = ?",
          featureKey,
          periodKey,
        )
        .one().counted ?? 0;
    this.countedRead.set(id, counted);
    return counted;
  }

  /** Keeps the cached `counted` in step with `counters` (read first if not cached yet). */
  private moveCounted(featureKey: string, periodKey: string, delta: number): void {
    const id = windowIdOf(featureKey, periodKey);
    // Not read yet: the next read sums `counters`, which already holds the change.
    if (this.countedRead.has(id)) this.countedRead.set(id, (this.countedRead.get(id) ?? 0) + delta);
  }

  private numbered(stale: ViewRow, want: number): ShardReport {
    const row = this.update(stale.feature_key, stale.period_key, "seq = seq + 1") ?? stale;
    return {
      subscriptionId: row.subscription_id,
      featureKey: row.feature_key,
      periodKey: row.period_key,
      periodStart: row.period_start,
      periodEnd: row.period_end,
      seq: row.seq,
      counted: this.counted(row.feature_key, row.period_key),
      returned: row.returned,
      received: row.received,
      want,
    };
  }

  private ensure(key: WindowKey): void {
    if (this.row(key.featureKey, key.window.key)) return;
    this.rows.delete(windowId(key));
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
    const id = windowIdOf(featureKey, periodKey);
    const cached = this.rows.get(id);
    if (cached !== undefined) return cached ?? undefined;
    const row = this.sql
      .exec<ViewRow>(
        "SELECT * FROM shard_view WHERE feature_key = ? AND period_key = ?",
        featureKey,
        periodKey,
      )
      .toArray()[0];
    this.rows.set(id, row ?? null);
    return row;
  }

  /** One UPDATE of the window's row (`set` binds from ?1, then the key); its new copy is cached. */
  private update(
    featureKey: string,
    periodKey: string,
    set: string,
    ...values: SqlStorageValue[]
  ): ViewRow | undefined {
    const at = values.length;
    const row = this.sql
      .exec<ViewRow>(
        `UPDATE shard_view SET ${set} WHERE feature_key = ?${at + 1} AND period_key = ?${at + 2} RETURNING *`,
        ...values,
        featureKey,
        periodKey,
      )
      .toArray()[0];
    this.rows.set(windowIdOf(featureKey, periodKey), row ?? null);
    return row;
  }
}
