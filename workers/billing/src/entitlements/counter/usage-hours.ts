import { hourStartOf, type UsageFlushHourDelta } from "../../usage/index.ts";

/** The attribution row of a counter's units (a `counters` row). */
interface AttributionKey {
  subscriptionId: string;
  featureKey: string;
  window: { key: string };
}

/**
 * The hour of each unflushed direct unit of an EntitlementCounter, kept
 * beside `counters.unflushed` in the object's storage: added in the same
 * synchronous step as the units, handed to the flush that takes the
 * window's units, and dropped once that flush is applied. Units of event
 * rows need none of this: D1 knows their timestamps (usage/hourly-storage.ts).
 */
export class UnflushedUsageHours {
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
    this.sql.exec(
      `INSERT INTO unflushed_hours (subscription_id, feature_key, period_key, hour_start, units)
       VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (subscription_id, feature_key, period_key, hour_start) WHERE flush_id IS NULL
       DO UPDATE SET units = units + excluded.units`,
      key.subscriptionId,
      key.featureKey,
      key.window.key,
      hourStartOf(at),
      units,
    );
  }

  /** Many `add`s, one statement per window and hour. */
  addAll(entries: { key: AttributionKey; units: number; at: string }[]): void {
    const grouped = new Map<string, { key: AttributionKey; units: number; at: string }>();
    for (const entry of entries) {
      const hour = hourStartOf(entry.at);
      const id = `${entry.key.subscriptionId}\u0000${entry.key.featureKey}\u0000${entry.key.window.key}\u0000${hour}`;
      const group = grouped.get(id);
      if (group) group.units += entry.units;
      else grouped.set(id, { key: entry.key, units: entry.units, at: hour });
    }
    for (const group of grouped.values()) this.add(group.key, group.units, group.at);
  }

  /** The open hours of the windows whose unflushed units a new flush just took. */
  claim(
    flushId: string,
    windows: { subscription_id: string; feature_key: string; period_key: string }[],
  ): void {
    if (windows.length === 0) return;
    this.sql.exec(
      `UPDATE unflushed_hours SET flush_id = ?
        WHERE flush_id IS NULL
          AND (subscription_id, feature_key, period_key) IN (
            SELECT json_extract(value, '$.subscription_id'), json_extract(value, '$.feature_key'),
                   json_extract(value, '$.period_key')
              FROM json_each(?))`,
      flushId,
      JSON.stringify(
        windows.map(({ subscription_id, feature_key, period_key }) => ({
          subscription_id,
          feature_key,
          period_key,
        })),
      ),
    );
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
