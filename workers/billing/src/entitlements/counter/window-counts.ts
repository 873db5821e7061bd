import {
  attributionId,
  attributionIdOf,
  type WindowKey,
  windowId,
  windowIdOf,
} from "./window-keys.ts";

/*
 * The quota windows: `window_totals` (the tenant's units per feature and
 * window, what limits are decided on) and `counters` (the same units per
 * subscription, with those not yet handed to D1 in `unflushed`).
 *
 * Every consume reads both, and only these statements change them, so the
 * `used` each statement last read or wrote is kept in memory: each
 * statement updates or drops its entry, and `forgetEnded` (the only
 * delete) forgets them all.
 */

interface CounterRow extends Record<string, SqlStorageValue> {
  used: number;
}

/** An event row whose units go back out of its window (its flush could not claim it). */
export interface UnclaimedUnits {
  subscription_id: string;
  feature_key: string;
  period_key: string;
  amount: number;
}

export class WindowCounts {
  private readonly totalsRead = new Map<string, number>();
  private readonly attributedRead = new Map<string, number>();

  constructor(private readonly sql: SqlStorage) {}

  /** The tenant's units counted in the window, or undefined when the object has no total for it yet. */
  usedIn(key: WindowKey): number | undefined {
    const id = windowId(key);
    const read = this.totalsRead.get(id);
    if (read !== undefined) return read;
    const used = this.sql
      .exec<CounterRow>(
        "SELECT used FROM window_totals WHERE feature_key = ? AND period_key = ?",
        key.featureKey,
        key.window.key,
      )
      .toArray()[0]?.used;
    if (used !== undefined) this.totalsRead.set(id, used);
    return used;
  }

  /** Units the window's subscription used in it (what its invoice prices). */
  attributedUsed(key: WindowKey): number {
    const id = attributionId(key);
    const read = this.attributedRead.get(id);
    if (read !== undefined) return read;
    const used = this.sql
      .exec<CounterRow>(
        "SELECT used FROM counters WHERE subscription_id = ? AND feature_key = ? AND period_key = ?",
        key.subscriptionId,
        key.featureKey,
        key.window.key,
      )
      .toArray()[0]?.used;
    if (used !== undefined) this.attributedRead.set(id, used);
    return used ?? 0;
  }

  /** `amount` more units in the window, `unflushed` of them for the next flush to take. */
  add(key: WindowKey, amount: number, at: string, unflushed: number): void {
    this.countInWindow(key, amount);
    keepReturnedUsed(
      this.attributedRead,
      attributionId(key),
      this.sql.exec<CounterRow>(
        `UPDATE counters
           SET used = used + ?1,
               unflushed = unflushed + ?2,
               last_event_at = max(coalesce(last_event_at, ''), ?3)
         WHERE subscription_id = ?4 AND feature_key = ?5 AND period_key = ?6
         RETURNING used`,
        amount,
        unflushed,
        at,
        key.subscriptionId,
        key.featureKey,
        key.window.key,
      ),
    );
  }

  /** Takes an unclaimed event's units back out of its window and its attribution row. */
  takeBack(row: UnclaimedUnits): void {
    keepReturnedUsed(
      this.attributedRead,
      attributionIdOf(row.subscription_id, row.feature_key, row.period_key),
      this.sql.exec<CounterRow>(
        `UPDATE counters SET used = max(0, used - ?)
          WHERE subscription_id = ? AND feature_key = ? AND period_key = ?
          RETURNING used`,
        row.amount,
        row.subscription_id,
        row.feature_key,
        row.period_key,
      ),
    );
    keepReturnedUsed(
      this.totalsRead,
      windowIdOf(row.feature_key, row.period_key),
      this.sql.exec<CounterRow>(
        "UPDATE window_totals SET used = max(0, used - ?) WHERE feature_key = ? AND period_key = ? RETURNING used",
        row.amount,
        row.feature_key,
        row.period_key,
      ),
    );
  }

  /** The window's first total (cold start); a total that appeared meanwhile is kept. */
  seed(key: WindowKey, used: number): void {
    this.sql.exec(
      `INSERT INTO window_totals (feature_key, period_key, period_end, used)
       VALUES (?, ?, ?, ?)
       ON CONFLICT DO NOTHING`,
      key.featureKey,
      key.window.key,
      key.window.end?.toISOString() ?? null,
      used,
    );
    this.totalsRead.delete(windowId(key));
  }

  /** Moves the window's total (units another counter shard reported); the row exists. */
  adjustTotal(featureKey: string, periodKey: string, delta: number): void {
    keepReturnedUsed(
      this.totalsRead,
      windowIdOf(featureKey, periodKey),
      this.sql.exec<CounterRow>(
        "UPDATE window_totals SET used = max(0, used + ?) WHERE feature_key = ? AND period_key = ? RETURNING used",
        delta,
        featureKey,
        periodKey,
      ),
    );
  }

  /** Sets the window's total (a counter shard's view of it, from shard 0's answer). */
  setTotal(featureKey: string, periodKey: string, periodEnd: string | null, used: number): void {
    this.sql.exec(
      `INSERT INTO window_totals (feature_key, period_key, period_end, used) VALUES (?, ?, ?, ?)
       ON CONFLICT DO UPDATE SET used = excluded.used`,
      featureKey,
      periodKey,
      periodEnd,
      used,
    );
    this.totalsRead.set(windowIdOf(featureKey, periodKey), used);
  }

  /** Forgets the windows that ended before `cutoff`. */
  forgetEnded(cutoff: Date): void {
    this.sql.exec(
      "DELETE FROM counters WHERE period_end IS NOT NULL AND period_end < ?",
      cutoff.toISOString(),
    );
    this.sql.exec(
      "DELETE FROM window_totals WHERE period_end IS NOT NULL AND period_end < ?",
      cutoff.toISOString(),
    );
    this.totalsRead.clear();
    this.attributedRead.clear();
  }

  /** The window's total and the subscription's attribution row (created on first use). */
  private countInWindow(key: WindowKey, amount: number): void {
    keepReturnedUsed(
      this.totalsRead,
      windowId(key),
      this.sql.exec<CounterRow>(
        "UPDATE window_totals SET used = used + ? WHERE feature_key = ? AND period_key = ? RETURNING used",
        amount,
        key.featureKey,
        key.window.key,
      ),
    );
    // A row read or written before exists (forgetEnded, the only delete, forgets them all).
    if (this.attributedRead.has(attributionId(key))) return;
    this.sql.exec(
      `INSERT INTO counters (subscription_id, feature_key, period_key, period_start, period_end, used, unflushed)
       VALUES (?, ?, ?, ?, ?, 0, 0)
       ON CONFLICT DO NOTHING`,
      key.subscriptionId,
      key.featureKey,
      key.window.key,
      key.window.start.toISOString(),
      key.window.end?.toISOString() ?? null,
    );
  }
}

/** What a statement's `RETURNING used` answered becomes the row's read value (no row: forgotten). */
function keepReturnedUsed(
  read: Map<string, number>,
  id: string,
  cursor: SqlStorageCursor<CounterRow>,
): void {
  const used = cursor.toArray()[0]?.used;
  if (used === undefined) read.delete(id);
  else read.set(id, used);
}
