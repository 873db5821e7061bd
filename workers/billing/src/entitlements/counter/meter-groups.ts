import type { UsageEntry } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import {
  counterUnits,
  EMPTY_METER_STATE,
  type EventMeterReading,
  eventMeterState,
  MAX_GROUP_COMBINATIONS,
  type Meter,
  type MeterContribution,
  type MeterState,
  mergeMeterStates,
  OVERFLOW_GROUP_KEY,
  readEvent,
} from "@edge-platform/shared/billing/meter";
import type { MeterGroupDelta } from "../../usage/index.ts";
import { groupPricedSnapshot, type MeterPlacement } from "./meter-contribution.ts";
import { attributionId, type WindowKey } from "./window-keys.ts";

/*
 * The counter's memory of meter groups, per subscription window of a
 * feature: the group combinations it keeps apart (at most
 * MAX_GROUP_COMBINATIONS; events of a further one count in the overflow
 * group) and the distinct values each group has seen (UNIQUE_COUNT). Both
 * are decided here, in the synchronous step that counts the event, so two
 * racing events can never both be the first of a value, and a HARD limit
 * on distinct values is exact. Rows go with their window (sweep).
 */

export const METER_GROUP_TABLES = `
  CREATE TABLE IF NOT EXISTS meter_groups (
    subscription_id TEXT NOT NULL,
    feature_key TEXT NOT NULL,
    period_key TEXT NOT NULL,
    group_key TEXT NOT NULL,
    period_end TEXT,
    units INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (subscription_id, feature_key, period_key, group_key)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS meter_values (
    subscription_id TEXT NOT NULL,
    feature_key TEXT NOT NULL,
    period_key TEXT NOT NULL,
    group_key TEXT NOT NULL,
    value TEXT NOT NULL,
    period_end TEXT,
    PRIMARY KEY (subscription_id, feature_key, period_key, group_key, value)
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS meter_unflushed (
    subscription_id TEXT NOT NULL,
    feature_key TEXT NOT NULL,
    period_key TEXT NOT NULL,
    period_start TEXT NOT NULL,
    period_end TEXT,
    group_key TEXT NOT NULL,
    dimensions TEXT NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (subscription_id, feature_key, period_key, group_key)
  ) WITHOUT ROWID;
`;

/** Overflowed combinations remembered in memory before the set starts again. */
const MAX_REMEMBERED_OVERFLOW = 100_000;

/** Group summaries of consumes one flush takes (one D1 statement folds them in). */
const FLUSH_MAX_DIRECT_GROUPS = 500;

interface UnflushedGroupRow extends Record<string, SqlStorageValue> {
  subscription_id: string;
  feature_key: string;
  period_key: string;
  period_start: string;
  period_end: string | null;
  group_key: string;
  dimensions: string;
  state: string;
}

export class CounterMeterGroups {
  /** Groups known to exist, by attribution row and group key: most events hit one. */
  private readonly known = new Set<string>();
  /** Combinations that came after their window was full: they count in the overflow group. */
  private readonly overflowed = new Set<string>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec(METER_GROUP_TABLES);
  }

  /**
   * Synchronous: the group an event counts in (its own, or the overflow
   * group once the window keeps MAX_GROUP_COMBINATIONS), and for a
   * distinct value whether it is new to the group, remembering it.
   */
  place(key: WindowKey, reading: EventMeterReading): MeterContribution & { distinct?: string } {
    const groupKey = this.groupOf(key, reading.groupKey);
    const overflow = groupKey !== reading.groupKey;
    const contribution: MeterContribution & { distinct?: string } = {
      groupKey,
      dimensions: overflow ? {} : reading.dimensions,
      value: reading.value,
      newDistinct: false,
    };
    if (reading.distinct !== null) {
      contribution.newDistinct = this.rememberValue(key, groupKey, reading.distinct);
      contribution.distinct = reading.distinct;
    }
    return contribution;
  }

  /**
   * Synchronous: places the events of a record batch that count now (the
   * first entry of each fresh id) whose feature has a meter (`meterOf`),
   * by index, and gives each the units its meter adds (counterUnits; an
   * event whose distinct value its group had seen adds none).
   */
  placeBatch(
    entries: readonly UsageEntry[],
    keys: readonly WindowKey[],
    fresh: ReadonlySet<string>,
    meterOf: (entry: UsageEntry) => Meter | null,
  ): { entries: UsageEntry[]; placements: Map<number, MeterPlacement> } {
    const placements = new Map<number, MeterPlacement>();
    const unplaced = new Set(fresh);
    // A group's units are read once and written once per batch: a statement
    // per event would cost more than the rest of the event's counting.
    const groups = new Map<
      string,
      { key: WindowKey; groupKey: string; before: number; added: number }
    >();
    const placed = entries.map((entry, index) => {
      const meter = meterOf(entry);
      if (!meter || !entry.usageEventId || !unplaced.delete(entry.eventId)) return entry;
      const reading = readEvent(meter, {
        amount: entry.amount,
        properties: entry.properties ?? {},
      });
      if (!reading.counts) return { ...entry, amount: 0 };
      const key = keys[index] as WindowKey;
      const contribution = this.place(key, reading);
      const units =
        reading.distinct !== null && !contribution.newDistinct
          ? 0
          : counterUnits(meter, entry.amount, reading);
      const id = `${attributionId(key)}\u0000${contribution.groupKey}`;
      let group = groups.get(id);
      if (!group) {
        group = {
          key,
          groupKey: contribution.groupKey,
          before: this.unitsOf(key, contribution.groupKey),
          added: 0,
        };
        groups.set(id, group);
      }
      placements.set(index, { contribution, groupUnitsBefore: group.before + group.added });
      group.added += units;
      return { ...entry, amount: units };
    });
    for (const group of groups.values()) {
      if (group.added > 0) this.addUnits(group.key, group.groupKey, group.added);
    }
    return { entries: placed, placements };
  }

  /** A group's units so far (0 before its first). */
  private unitsOf(key: WindowKey, groupKey: string): number {
    return this.groupRow(key, groupKey)?.units ?? 0;
  }

  /** The window's row of a group, undefined while the window has not kept it. */
  private groupRow(key: WindowKey, groupKey: string): { units: number } | undefined {
    return this.sql
      .exec<{ units: number }>(
        "SELECT units FROM meter_groups WHERE subscription_id = ? AND feature_key = ? AND period_key = ? AND group_key = ?",
        key.subscriptionId,
        key.featureKey,
        key.window.key,
        groupKey,
      )
      .toArray()[0];
  }

  /** Whether the window keeps MAX_GROUP_COMBINATIONS groups apart already (the overflow group aside). */
  private full(key: WindowKey): boolean {
    const { groups } = this.sql
      .exec<{ groups: number }>(
        "SELECT count(*) AS groups FROM meter_groups WHERE subscription_id = ? AND feature_key = ? AND period_key = ? AND group_key <> ?",
        key.subscriptionId,
        key.featureKey,
        key.window.key,
        OVERFLOW_GROUP_KEY,
      )
      .one();
    return groups >= MAX_GROUP_COMBINATIONS;
  }

  /**
   * Synchronous: adds a placed event's units to its group's count (what a
   * group's price applies to), answering the count before them.
   */
  addUnits(key: WindowKey, groupKey: string, units: number): number {
    const row = this.sql
      .exec<{ units: number }>(
        `UPDATE meter_groups SET units = units + ?
          WHERE subscription_id = ? AND feature_key = ? AND period_key = ? AND group_key = ?
          RETURNING units`,
        units,
        key.subscriptionId,
        key.featureKey,
        key.window.key,
        groupKey,
      )
      .toArray()[0];
    if (row) return row.units - units;
    // The overflow group has no row until its first event.
    this.sql.exec(
      "INSERT INTO meter_groups (subscription_id, feature_key, period_key, group_key, period_end, units) VALUES (?, ?, ?, ?, ?, ?)",
      key.subscriptionId,
      key.featureKey,
      key.window.key,
      groupKey,
      key.window.end?.toISOString() ?? null,
      units,
    );
    return 0;
  }

  /**
   * How a consume's units would be priced before they are taken: by its
   * group's terms after the group's units so far. Reads only: a refused
   * consume leaves no group or value behind.
   */
  pricedAs(
    key: WindowKey,
    snapshot: SnapshotTerms,
    reading: EventMeterReading,
  ): { snapshot: SnapshotTerms; usedBefore: number } {
    const own = this.groupRow(key, reading.groupKey);
    const overflows = own === undefined && this.full(key);
    return {
      snapshot: groupPricedSnapshot(snapshot, overflows ? {} : reading.dimensions),
      usedBefore: overflows ? this.unitsOf(key, OVERFLOW_GROUP_KEY) : (own?.units ?? 0),
    };
  }

  /** Whether the window counted `value` in the group (or in the overflow group). */
  counted(key: WindowKey, groupKey: string, value: string): boolean {
    return this.hasValue(key, groupKey, value) || this.hasValue(key, OVERFLOW_GROUP_KEY, value);
  }

  private hasValue(key: WindowKey, groupKey: string, value: string): boolean {
    return (
      this.sql
        .exec(
          `SELECT 1 FROM meter_values
            WHERE subscription_id = ? AND feature_key = ? AND period_key = ? AND group_key = ? AND value = ?`,
          key.subscriptionId,
          key.featureKey,
          key.window.key,
          groupKey,
          value,
        )
        .toArray().length > 0
    );
  }

  /** An event that brought a new value was not counted after all (its flush could not claim it). */
  forget(
    row: { subscription_id: string; feature_key: string; period_key: string; amount: number },
    contribution: (MeterContribution & { distinct?: string }) | null,
  ): void {
    if (!contribution) return;
    this.sql.exec(
      `UPDATE meter_groups SET units = max(0, units - ?)
        WHERE subscription_id = ? AND feature_key = ? AND period_key = ? AND group_key = ?`,
      row.amount,
      row.subscription_id,
      row.feature_key,
      row.period_key,
      contribution.groupKey,
    );
    if (!contribution.newDistinct || contribution.distinct === undefined) return;
    this.sql.exec(
      `DELETE FROM meter_values
        WHERE subscription_id = ? AND feature_key = ? AND period_key = ? AND group_key = ? AND value = ?`,
      row.subscription_id,
      row.feature_key,
      row.period_key,
      contribution.groupKey,
      contribution.distinct,
    );
  }

  /**
   * Synchronous: a consume's share of its group (it has no usage-log row
   * for a flush to claim), merged into the group's summary that waits for
   * the next flush.
   */
  addDirect(key: WindowKey, contribution: MeterContribution, at: string): void {
    const window = {
      start: key.window.start.toISOString(),
      end: key.window.end?.toISOString() ?? null,
    };
    const params = [key.subscriptionId, key.featureKey, key.window.key, contribution.groupKey];
    const waiting = this.sql
      .exec<{ state: string }>(
        "SELECT state FROM meter_unflushed WHERE subscription_id = ? AND feature_key = ? AND period_key = ? AND group_key = ?",
        ...params,
      )
      .toArray()[0];
    const state = mergeMeterStates(
      waiting ? (JSON.parse(waiting.state) as MeterState) : EMPTY_METER_STATE,
      eventMeterState(
        contribution.value,
        at,
        crypto.randomUUID(),
        window,
        contribution.newDistinct,
      ),
    );
    this.sql.exec(
      `INSERT INTO meter_unflushed
         (subscription_id, feature_key, period_key, group_key, period_start, period_end, dimensions, state)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT DO UPDATE SET state = excluded.state`,
      ...params,
      window.start,
      window.end,
      JSON.stringify(contribution.dimensions ?? {}),
      JSON.stringify(state),
    );
  }

  /** Synchronous: takes the waiting consume summaries into a flush (they are then its to apply). */
  takeDirect(): MeterGroupDelta[] {
    const rows = this.sql
      .exec<UnflushedGroupRow>("SELECT * FROM meter_unflushed LIMIT ?", FLUSH_MAX_DIRECT_GROUPS)
      .toArray();
    for (const row of rows) {
      this.sql.exec(
        "DELETE FROM meter_unflushed WHERE subscription_id = ? AND feature_key = ? AND period_key = ? AND group_key = ?",
        row.subscription_id,
        row.feature_key,
        row.period_key,
        row.group_key,
      );
    }
    return rows.map((row) => ({
      subscriptionId: row.subscription_id,
      featureLookupKey: row.feature_key,
      periodKey: row.period_key,
      periodStart: row.period_start,
      periodEnd: row.period_end,
      groupKey: row.group_key,
      dimensions: JSON.parse(row.dimensions) as MeterGroupDelta["dimensions"],
      state: JSON.parse(row.state) as MeterState,
    }));
  }

  hasDirect(): boolean {
    return this.sql.exec("SELECT 1 FROM meter_unflushed LIMIT 1").toArray().length > 0;
  }

  /** Drops the groups and values of windows that ended before `endedBefore` (ISO). */
  sweep(endedBefore: string): void {
    this.sql.exec(
      "DELETE FROM meter_groups WHERE period_end IS NOT NULL AND period_end < ?",
      endedBefore,
    );
    this.sql.exec(
      "DELETE FROM meter_values WHERE period_end IS NOT NULL AND period_end < ?",
      endedBefore,
    );
    this.known.clear();
    this.overflowed.clear();
  }

  private groupOf(key: WindowKey, groupKey: string): string {
    const row = attributionId(key);
    const id = `${row}\u0000${groupKey}`;
    if (this.known.has(id)) return groupKey;
    if (this.overflowed.has(id)) return OVERFLOW_GROUP_KEY;
    if (this.groupRow(key, groupKey) === undefined) {
      if (this.full(key)) {
        // Bounded: a key of endless values must not grow the object's memory.
        if (this.overflowed.size >= MAX_REMEMBERED_OVERFLOW) this.overflowed.clear();
        this.overflowed.add(id);
        return OVERFLOW_GROUP_KEY;
      }
      this.sql.exec(
        "INSERT INTO meter_groups (subscription_id, feature_key, period_key, group_key, period_end) VALUES (?, ?, ?, ?, ?)",
        key.subscriptionId,
        key.featureKey,
        key.window.key,
        groupKey,
        key.window.end?.toISOString() ?? null,
      );
    }
    this.known.add(id);
    return groupKey;
  }

  private rememberValue(key: WindowKey, groupKey: string, value: string): boolean {
    const cursor = this.sql.exec(
      `INSERT INTO meter_values (subscription_id, feature_key, period_key, group_key, value, period_end)
       VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      key.subscriptionId,
      key.featureKey,
      key.window.key,
      groupKey,
      value,
      key.window.end?.toISOString() ?? null,
    );
    cursor.toArray();
    return cursor.rowsWritten > 0;
  }
}
