import type { ShardReport } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import { windowIdOf } from "./window-keys.ts";

/*
 * Shard 0's ledger of its tenant's other counter shards, per window: what
 * each reported it counted, and the quota leased to it.
 *
 * A lease is units of a HARD limit a shard may count on its own. Shard 0
 * counts a lease as used from the moment it grants it until the shard
 * reports the units it counted (`counted`, which the lease covers) or gave
 * back (`returned`): `outstanding = granted - counted - returned` (at least
 * 0). Its decisions take `used + outstanding`, so the units of every shard
 * together never pass the limit.
 *
 * Reports carry running totals with a sequence number: shard 0 keeps the
 * latest, so a report that arrives late or twice changes nothing. Lease
 * units travel only in the answer to a shard's own sync, and a shard syncs
 * one call at a time; so when a sync arrives, no grant to that shard is on
 * the way, and the lease units the shard says it received are exactly what
 * it has (a grant whose answer was lost is taken back here).
 */

const SHARD_LEASE_TABLES = `
  CREATE TABLE IF NOT EXISTS shard_windows (
    feature_key TEXT NOT NULL,
    period_key TEXT NOT NULL,
    shard INTEGER NOT NULL,
    period_end TEXT,
    seq INTEGER NOT NULL DEFAULT 0,
    counted INTEGER NOT NULL DEFAULT 0,
    returned INTEGER NOT NULL DEFAULT 0,
    granted INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (feature_key, period_key, shard)
  ) WITHOUT ROWID;
`;

/** Each lease is this share of the limit, or the units asked for if more. */
const LEASE_SHARE_OF_LIMIT = 0.05;
/** Once less than this share of the limit is free, shard 0 leases nothing and serves every consume. */
const MARGIN_SHARE_OF_LIMIT = 0.1;

interface ShardRow extends Record<string, SqlStorageValue> {
  shard: number;
  seq: number;
  counted: number;
  returned: number;
  granted: number;
}

export class ShardLeases {
  /** Whether any other shard ever reported: most tenants have one shard, and their consumes skip the lookups. */
  private anyShard: boolean | undefined;
  /** Each window's lease holders as last read: every consume on shard 0 asks, only reports and grants change them. */
  private readonly holdersRead = new Map<string, { shard: number; units: number }[]>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec(SHARD_LEASE_TABLES);
  }

  /**
   * Applies a shard's report; answers the change of the units it counted
   * (what the tenant's total moves by). `fromSync`: the shard sent it
   * itself, so its `received` is what it holds (see above) unless a newer
   * report came first.
   */
  apply(shard: number, report: ShardReport, fromSync: boolean): number {
    this.anyShard = true;
    this.holdersRead.delete(windowIdOf(report.featureKey, report.periodKey));
    const known = this.row(report.featureKey, report.periodKey, shard);
    const fresh = report.seq > (known?.seq ?? 0);
    const counted = fresh ? report.counted : (known?.counted ?? 0);
    // A stale sync may be one the shard gave up on, older than a grant it since received.
    const granted = fromSync && fresh ? report.received : (known?.granted ?? 0);
    this.sql.exec(
      `INSERT INTO shard_windows (feature_key, period_key, shard, period_end, seq, counted, returned, granted)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
       ON CONFLICT DO UPDATE SET
         seq = max(seq, excluded.seq),
         counted = excluded.counted,
         returned = max(returned, excluded.returned),
         granted = excluded.granted`,
      report.featureKey,
      report.periodKey,
      shard,
      report.periodEnd,
      Math.max(report.seq, known?.seq ?? 0),
      counted,
      fresh ? report.returned : (known?.returned ?? 0),
      granted,
    );
    return counted - (known?.counted ?? 0);
  }

  /** Lease units held by the window's shards: counted as used by every decision here. */
  outstanding(featureKey: string, periodKey: string): number {
    return this.holders(featureKey, periodKey).reduce((sum, holder) => sum + holder.units, 0);
  }

  /** The shards holding lease units of the window, and how many. */
  holders(featureKey: string, periodKey: string): { shard: number; units: number }[] {
    this.anyShard ??= this.shards().length > 0;
    if (!this.anyShard) return [];
    const id = windowIdOf(featureKey, periodKey);
    const read = this.holdersRead.get(id);
    if (read) return read;
    const holders = this.sql
      .exec<{ shard: number; units: number }>(
        `SELECT shard, granted - counted - returned AS units FROM shard_windows
          WHERE feature_key = ? AND period_key = ? AND granted - counted - returned > 0`,
        featureKey,
        periodKey,
      )
      .toArray();
    this.holdersRead.set(id, holders);
    return holders;
  }

  /**
   * The lease units to grant a shard that asks for `want` of a window with
   * `free` units left under `limit` (free already less every lease), and
   * records them. None below the margin: shard 0 then serves the consume.
   */
  grant(report: ShardReport, shard: number, limit: number, free: number): number {
    if (report.want <= 0) return 0;
    const grantable = free - Math.ceil(limit * MARGIN_SHARE_OF_LIMIT);
    if (grantable < report.want) return 0;
    const units = Math.min(
      grantable,
      Math.max(report.want, Math.floor(limit * LEASE_SHARE_OF_LIMIT)),
    );
    this.holdersRead.delete(windowIdOf(report.featureKey, report.periodKey));
    this.sql.exec(
      "UPDATE shard_windows SET granted = granted + ? WHERE feature_key = ? AND period_key = ? AND shard = ?",
      units,
      report.featureKey,
      report.periodKey,
      shard,
    );
    return units;
  }

  /** Every other shard that ever reported. */
  shards(): number[] {
    return this.sql
      .exec<{ shard: number }>("SELECT DISTINCT shard FROM shard_windows ORDER BY shard")
      .toArray()
      .map((row) => row.shard);
  }

  /** Forgets the windows that ended before `cutoff` (with the counter's own). */
  forgetEnded(cutoff: Date): void {
    this.sql.exec(
      "DELETE FROM shard_windows WHERE period_end IS NOT NULL AND period_end < ?",
      cutoff.toISOString(),
    );
    this.anyShard = undefined;
    this.holdersRead.clear();
  }

  private row(featureKey: string, periodKey: string, shard: number): ShardRow | undefined {
    return this.sql
      .exec<ShardRow>(
        "SELECT * FROM shard_windows WHERE feature_key = ? AND period_key = ? AND shard = ?",
        featureKey,
        periodKey,
        shard,
      )
      .toArray()[0];
  }
}
