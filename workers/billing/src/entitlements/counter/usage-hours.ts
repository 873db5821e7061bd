import { hourStartOf, type UsageFlushHourDelta } from "../../usage/index.ts";

/** The attribution row of a counter's units (a `counters` row). */
interface AttributionKey {
  subscriptionId: string;
  featureKey: string;
  window: { key: string };
}

/** A taken window's units, as the flush's claim step reads them from `counters`. */
interface TakenWindow {
  subscription_id: string;
  feature_key: string;
  period_key: string;
  unflushed: number;
  last_event_at: string | null;
}

const windowIdOf = (subscriptionId: string, featureKey: string, periodKey: string) =>
  `${subscriptionId}\u0000${featureKey}\u0000${periodKey}`;

/**
 * The hour of each unflushed direct unit of an EntitlementCounter, for
 * usage_hourly. The units themselves are durable in `counters.unflushed`
 * from the consume's own step; their hours are kept in memory until the
 * flush takes the window's units, and only then written (with the flush's
 * id, so a retried flush sends the same hours), so a consume writes
 * nothing for them. Units whose hours a restart lost (at most one flush
 * interval's) go to the hour of the window's latest unit. Units of event
 * rows need none of this: D1 knows their timestamps
 * (usage/hourly-storage.ts).
 */
export class UnflushedUsageHours {
  /** Per window (subscription, feature, period key): units per hour start. */
  private readonly open = new Map<string, Map<string, number>>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec(`
      CREATE TABLE IF NOT EXISTS unflushed_hours (
        subscription_id TEXT NOT NULL,
        feature_key TEXT NOT NULL,
        period_key TEXT NOT NULL,
        hour_start TEXT NOT NULL,
        units INTEGER NOT NULL,
        flush_id TEXT
      );
      CREATE UNIQUE INDEX IF NOT EXISTS unflushed_hours_open_idx
        ON unflushed_hours (subscription_id, feature_key, period_key, hour_start)
        WHERE flush_id IS NULL;
      CREATE INDEX IF NOT EXISTS unflushed_hours_flush_idx ON unflushed_hours (flush_id);
    `);
  }

  /** Units just added to the window's `unflushed`, used at `at` (ISO-8601). */
  add(key: AttributionKey, units: number, at: string): void {
    const id = windowIdOf(key.subscriptionId, key.featureKey, key.window.key);
    let hours = this.open.get(id);
    if (!hours) {
      hours = new Map();
      this.open.set(id, hours);
    }
    const hour = hourStartOf(at);
    hours.set(hour, (hours.get(hour) ?? 0) + units);
  }

  /** Many `add`s. */
  addAll(entries: { key: AttributionKey; units: number; at: string }[]): void {
    for (const entry of entries) this.add(entry.key, entry.units, entry.at);
  }

  /**
   * Synchronous, in the step where a new flush takes these windows' units:
   * their hours, written with the flush's id. Open rows an earlier release
   * wrote are taken too; units with no hour known go to the hour of the
   * window's latest unit (or now's).
   */
  claim(flushId: string, windows: TakenWindow[]): void {
    if (windows.length === 0) return;
    const stored = this.claimStored(flushId, windows);
    const rows: { s: string; f: string; p: string; h: string; u: number }[] = [];
    for (const window of windows) {
      const id = windowIdOf(window.subscription_id, window.feature_key, window.period_key);
      const hours = this.open.get(id) ?? new Map<string, number>();
      this.open.delete(id);
      let left = window.unflushed - (stored.get(id) ?? 0);
      for (const [hour, units] of [...hours].sort(([a], [b]) => (a < b ? -1 : 1))) {
        const taken = Math.min(units, left);
        if (taken <= 0) break;
        rows.push({
          s: window.subscription_id,
          f: window.feature_key,
          p: window.period_key,
          h: hour,
          u: taken,
        });
        left -= taken;
      }
      if (left > 0) {
        const hour = hourStartOf(window.last_event_at ?? new Date().toISOString());
        rows.push({
          s: window.subscription_id,
          f: window.feature_key,
          p: window.period_key,
          h: hour,
          u: left,
        });
      }
    }
    if (rows.length === 0) return;
    this.sql.exec(
      `INSERT INTO unflushed_hours (subscription_id, feature_key, period_key, hour_start, units, flush_id)
       SELECT json_extract(value, '$.s'), json_extract(value, '$.f'), json_extract(value, '$.p'),
              json_extract(value, '$.h'), json_extract(value, '$.u'), ?
         FROM json_each(?)`,
      flushId,
      JSON.stringify(rows),
    );
  }

  /** Open rows of earlier releases for these windows: given to the flush; their units per window. */
  private claimStored(flushId: string, windows: TakenWindow[]): Map<string, number> {
    const claimed = new Map<string, number>();
    if (
      this.sql.exec("SELECT 1 FROM unflushed_hours WHERE flush_id IS NULL LIMIT 1").toArray()
        .length === 0
    ) {
      return claimed;
    }
    const rows = this.sql.exec<{
      subscription_id: string;
      feature_key: string;
      period_key: string;
      units: number;
    }>(
      `UPDATE unflushed_hours SET flush_id = ?
        WHERE flush_id IS NULL
          AND (subscription_id, feature_key, period_key) IN (
            SELECT json_extract(value, '$.subscription_id'), json_extract(value, '$.feature_key'),
                   json_extract(value, '$.period_key')
              FROM json_each(?))
        RETURNING subscription_id, feature_key, period_key, units`,
      flushId,
      JSON.stringify(
        windows.map(({ subscription_id, feature_key, period_key }) => ({
          subscription_id,
          feature_key,
          period_key,
        })),
      ),
    );
    for (const row of rows) {
      const id = windowIdOf(row.subscription_id, row.feature_key, row.period_key);
      claimed.set(id, (claimed.get(id) ?? 0) + row.units);
    }
    return claimed;
  }

  /** What the flush adds per hour, for its D1 batch. */
  ofFlush(flushId: string): UsageFlushHourDelta[] {
    return this.sql
      .exec<{ subscription_id: string; feature_key: string; hour_start: string; units: number }>(
        "SELECT subscription_id, feature_key, hour_start, units FROM unflushed_hours WHERE flush_id = ?",
        flushId,
      )
      .toArray()
      .map((row) => ({
        subscriptionId: row.subscription_id,
        featureLookupKey: row.feature_key,
        hourStart: row.hour_start,
        amount: row.units,
      }));
  }

  /** The flush is in D1: its hours are too. */
  settle(flushId: string): void {
    this.sql.exec("DELETE FROM unflushed_hours WHERE flush_id = ?", flushId);
  }
}
