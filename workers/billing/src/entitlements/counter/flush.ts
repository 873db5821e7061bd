import type { FlushResult } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import type {
  MeterGroupDelta,
  UsageFlushEventClaim,
  UsageFlushHourDelta,
  UsageFlushWindowDelta,
} from "../../usage/index.ts";
import { contributionOf } from "./meter-contribution.ts";
import type { UnflushedUsageHours } from "./usage-hours.ts";
import { attributionIdOf, type WindowKey } from "./window-keys.ts";

/*
 * Steps 2 and 3 of the single path into usage_aggregates (see
 * entitlement-counter.ts): the claim moves units that wait here into a
 * `flushes` row with a fresh id in one synchronous step, and the apply
 * hands that row to D1 (usage/log/flush-claims.ts), retried with the same
 * id until it lands, then settles the row in one synchronous step.
 *
 * Units wait in two places: `counters.unflushed` (consumes and events with
 * no usage log row) and `pending_events` (logged events, which the flush
 * claims one by one, so that an event is counted in D1 at most once).
 */

/** Windows in one flush: one D1 batch adds one delta per window. */
export const FLUSH_MAX_WINDOWS = 40;
/**
 * Event rows claimed by one flush (one JSON parameter of the D1 batch, about
 * 40 B per id). While ingestion keeps D1 busy, each flush round waits its
 * turn at the single writer, so the rounds, not the rows, bound the flush.
 */
export const FLUSH_MAX_EVENTS = 5000;
const FLUSH_MAX_ROUNDS = 20;
const FLUSH_RETRY_MAX_MS = 60_000;

/** A logged event's units, waiting for a flush to claim the event. */
export interface PendingEventRow extends Record<string, SqlStorageValue> {
  usage_event_id: string;
  subscription_id: string;
  feature_key: string;
  period_key: string;
  period_start: string;
  period_end: string | null;
  amount: number;
  occurred_at: string;
  /** The event's meter contribution (JSON), for a feature with a meter. */
  meter: string | null;
}

/** A `counters` row with units no flush has taken yet. */
export interface UnflushedRow extends Record<string, SqlStorageValue> {
  subscription_id: string;
  feature_key: string;
  period_key: string;
  period_start: string;
  period_end: string | null;
  unflushed: number;
  last_event_at: string | null;
}

export interface PendingEventInsert {
  id: string;
  subscriptionId: string;
  featureKey: string;
  periodKey: string;
  periodStart: string;
  periodEnd: string | null;
  amount: number;
  occurredAt: string;
  meter: string | null;
}

interface FlushRow extends Record<string, SqlStorageValue> {
  id: string;
  deltas: string;
  claims: string | null;
  meter_groups: string | null;
  attempts: number;
}

/** The columns that name a row's window, in both tables units wait in. */
interface FlushWindowRow {
  subscription_id: string;
  feature_key: string;
  period_key: string;
  period_start: string;
  period_end: string | null;
}

/** What one flush row carries to D1. */
export interface FlushPlan {
  deltas: UsageFlushWindowDelta[];
  claims: UsageFlushEventClaim[];
  /** The `counters` rows whose unflushed units the flush takes, whole. */
  directTaken: UnflushedRow[];
}

/** The D1 step: adds a flush to usage_aggregates once, and answers the events it claimed. */
export type ApplyFlush = (flush: {
  id: string;
  tenantId: string;
  deltas: UsageFlushWindowDelta[];
  claims: UsageFlushEventClaim[];
  hours: UsageFlushHourDelta[];
  /** Meter group summaries of consumes (claimed events bring their own). */
  meterGroups: MeterGroupDelta[];
}) => Promise<{ claimedEventIds: string[] }>;

/** The consumes' meter group summaries waiting in the counter (meter-groups.ts). */
export interface DirectMeterGroups {
  hasDirect(): boolean;
  takeDirect(): MeterGroupDelta[];
}

/** What else follows the events of an applied flush, in the same synchronous step. */
export interface FlushSettlement {
  /**
   * The flush claimed these events: they are in D1. Told after `unclaimed`,
   * so that what it decides sees the flush's other events taken back.
   */
  claimed(usageEventIds: string[]): void;
  /** The flush could not claim this event: D1 did not count it, so neither may the counter. */
  unclaimed(row: PendingEventRow): void;
}

/**
 * The next flush's content: events first (oldest first), then unflushed
 * rows, within FLUSH_MAX_WINDOWS windows; what does not fit waits for the
 * next round. A window's `lastEventAt` is its latest use, or `nowIso` when
 * no unit says when it was used. Null when nothing waits.
 */
export function planFlush(
  events: readonly PendingEventRow[],
  direct: readonly UnflushedRow[],
  nowIso: string,
): FlushPlan | null {
  const windows = new Map<string, UsageFlushWindowDelta>();
  const windowOf = (row: FlushWindowRow) => {
    const id = attributionIdOf(row.subscription_id, row.feature_key, row.period_key);
    let delta = windows.get(id);
    if (!delta && windows.size < FLUSH_MAX_WINDOWS) {
      delta = {
        subscriptionId: row.subscription_id,
        featureLookupKey: row.feature_key,
        periodKey: row.period_key,
        periodStart: row.period_start,
        periodEnd: row.period_end,
        amount: 0,
        lastEventAt: "",
      };
      windows.set(id, delta);
    }
    return delta;
  };
  const claims: UsageFlushEventClaim[] = [];
  for (const event of events) {
    const delta = windowOf(event);
    if (!delta) continue;
    const meter = contributionOf(event.meter);
    claims.push({
      id: event.usage_event_id,
      subscriptionId: event.subscription_id,
      featureLookupKey: event.feature_key,
      periodKey: event.period_key,
      // The units the counter counted: a metered (or filtered) event's are not its amount.
      units: event.amount,
      ...(meter ? { meter } : {}),
    });
    if (event.occurred_at > delta.lastEventAt) delta.lastEventAt = event.occurred_at;
  }
  const directTaken: UnflushedRow[] = [];
  for (const row of direct) {
    const delta = windowOf(row);
    if (!delta) continue;
    delta.amount += row.unflushed;
    const at = row.last_event_at ?? nowIso;
    if (at > delta.lastEventAt) delta.lastEventAt = at;
    directTaken.push(row);
  }
  if (windows.size === 0) return null;
  for (const delta of windows.values()) {
    if (!delta.lastEventAt) delta.lastEventAt = nowIso;
  }
  return { deltas: [...windows.values()], claims, directTaken };
}

/** Backoff after a failed alarm: 2^attempts s of the most tried flush (no flush: 2 s), up to a minute. */
export function flushRetryDelayMs(attempts: number | null): number {
  return Math.min(FLUSH_RETRY_MAX_MS, 1000 * 2 ** Math.min(attempts ?? 1, 16));
}

/** The units a flush adds to D1: its deltas' units and its claimed events' units. */
export function flushedUnits(deltas: readonly UsageFlushWindowDelta[], eventUnits: number): number {
  return deltas.reduce((sum, delta) => sum + delta.amount, 0) + eventUnits;
}

export class CounterFlushes {
  constructor(
    private readonly sql: SqlStorage,
    private readonly hours: UnflushedUsageHours,
    private readonly apply: ApplyFlush,
    private readonly settlement: FlushSettlement,
    private readonly meterGroups: DirectMeterGroups,
  ) {}

  /** The event rows a flush will claim, with the window each was counted in. */
  queueEvents(rows: readonly PendingEventInsert[]): void {
    if (rows.length === 0) return;
    this.sql.exec(
      `INSERT INTO pending_events
         (usage_event_id, subscription_id, feature_key, period_key, period_start, period_end, amount, occurred_at, meter)
       SELECT json_extract(value, '$.id'), json_extract(value, '$.subscriptionId'),
              json_extract(value, '$.featureKey'), json_extract(value, '$.periodKey'),
              json_extract(value, '$.periodStart'), json_extract(value, '$.periodEnd'),
              json_extract(value, '$.amount'), json_extract(value, '$.occurredAt'),
              json_extract(value, '$.meter')
         FROM json_each(?) WHERE true
       ON CONFLICT DO NOTHING`,
      JSON.stringify(rows),
    );
  }

  hasPending(): boolean {
    return (
      this.sql.exec("SELECT 1 FROM counters WHERE unflushed > 0 LIMIT 1").toArray().length > 0 ||
      this.sql.exec("SELECT 1 FROM flushes LIMIT 1").toArray().length > 0 ||
      this.sql.exec("SELECT 1 FROM pending_events LIMIT 1").toArray().length > 0 ||
      this.meterGroups.hasDirect()
    );
  }

  /** How long the alarm waits before trying a failed flush again. */
  retryDelayMs(): number {
    return flushRetryDelayMs(
      this.sql
        .exec<{ attempts: number | null }>("SELECT max(attempts) AS attempts FROM flushes")
        .one().attempts,
    );
  }

  /** Units of the window this object holds that D1 does not have yet. */
  heldUnits(key: WindowKey): number {
    const unflushed =
      this.sql
        .exec<{ units: number | null }>(
          "SELECT sum(unflushed) AS units FROM counters WHERE feature_key = ? AND period_key = ?",
          key.featureKey,
          key.window.key,
        )
        .one().units ?? 0;
    const events =
      this.sql
        .exec<{ units: number | null }>(
          "SELECT sum(amount) AS units FROM pending_events WHERE feature_key = ? AND period_key = ?",
          key.featureKey,
          key.window.key,
        )
        .one().units ?? 0;
    let inFlushes = 0;
    for (const row of this.sql.exec<{ deltas: string }>("SELECT deltas FROM flushes").toArray()) {
      for (const delta of JSON.parse(row.deltas) as UsageFlushWindowDelta[]) {
        if (delta.featureLookupKey === key.featureKey && delta.periodKey === key.window.key) {
          inFlushes += delta.amount;
        }
      }
    }
    return unflushed + events + inFlushes;
  }

  /**
   * Claims and applies flushes in order, up to FLUSH_MAX_ROUNDS of them;
   * without a tenant there is nothing to apply them to. A failed apply
   * throws, leaving its row for the next run.
   */
  async run(tenantId: string | undefined): Promise<FlushResult> {
    let flushes = 0;
    let units = 0;
    if (tenantId) {
      for (let round = 0; round < FLUSH_MAX_ROUNDS; round++) {
        this.claim();
        const next = this.sql
          .exec<FlushRow>(
            "SELECT id, deltas, claims, meter_groups, attempts FROM flushes ORDER BY claimed_at, id LIMIT 1",
          )
          .toArray()[0];
        if (!next) break;
        units += await this.applyFlush(tenantId, next);
        flushes++;
      }
    }
    return { flushes, units, pendingUnits: this.waitingUnits() };
  }

  /**
   * Moves unflushed units, and event rows not yet in a flush, into a new
   * flush row (synchronously, so no unit is both waiting and claimed). Does
   * nothing while an older flush is still waiting: flushes apply in order.
   */
  claim(): void {
    if (this.sql.exec("SELECT 1 FROM flushes LIMIT 1").toArray().length > 0) return;
    const events = this.sql
      .exec<PendingEventRow>(
        "SELECT * FROM pending_events WHERE flush_id IS NULL ORDER BY rowid LIMIT ?",
        FLUSH_MAX_EVENTS,
      )
      .toArray();
    const direct = this.sql
      .exec<UnflushedRow>(
        `SELECT subscription_id, feature_key, period_key, period_start, period_end, unflushed, last_event_at
           FROM counters WHERE unflushed > 0 LIMIT ?`,
        FLUSH_MAX_WINDOWS * 2,
      )
      .toArray();
    const plan =
      planFlush(events, direct, new Date().toISOString()) ??
      (this.meterGroups.hasDirect() ? { deltas: [], claims: [], directTaken: [] } : null);
    if (!plan) return;
    const flushId = crypto.randomUUID();
    const meterGroups = this.meterGroups.takeDirect();
    this.sql.exec(
      "INSERT INTO flushes (id, deltas, claims, meter_groups, claimed_at) VALUES (?, ?, ?, ?, ?)",
      flushId,
      JSON.stringify(plan.deltas),
      plan.claims.length > 0 ? JSON.stringify(plan.claims) : null,
      meterGroups.length > 0 ? JSON.stringify(meterGroups) : null,
      Date.now(),
    );
    for (const row of plan.directTaken) {
      this.sql.exec(
        "UPDATE counters SET unflushed = unflushed - ? WHERE subscription_id = ? AND feature_key = ? AND period_key = ?",
        row.unflushed,
        row.subscription_id,
        row.feature_key,
        row.period_key,
      );
    }
    this.hours.claim(flushId, plan.directTaken);
    if (plan.claims.length > 0) {
      this.sql.exec(
        "UPDATE pending_events SET flush_id = ? WHERE usage_event_id IN (SELECT value FROM json_each(?))",
        flushId,
        JSON.stringify(plan.claims.map((claim) => claim.id)),
      );
    }
  }

  /** Applies one flush row in D1 and settles it; answers the units it added. */
  private async applyFlush(tenantId: string, next: FlushRow): Promise<number> {
    const deltas = JSON.parse(next.deltas) as UsageFlushWindowDelta[];
    const claims = next.claims ? (JSON.parse(next.claims) as UsageFlushEventClaim[]) : [];
    let claimed: string[];
    try {
      ({ claimedEventIds: claimed } = await this.apply({
        id: next.id,
        tenantId,
        deltas,
        claims,
        hours: this.hours.ofFlush(next.id),
        meterGroups: next.meter_groups ? (JSON.parse(next.meter_groups) as MeterGroupDelta[]) : [],
      }));
    } catch (error) {
      this.sql.exec(
        "UPDATE flushes SET attempts = attempts + 1, last_error = ? WHERE id = ?",
        String(error).slice(0, 500),
        next.id,
      );
      throw error;
    }
    return flushedUnits(deltas, this.settle(next.id, claimed));
  }

  /**
   * Synchronous: settles the flush's events (claimed or taken back), then
   * drops the flush. Answers the units of the events it claimed.
   */
  private settle(flushId: string, claimed: string[]): number {
    const claimedIds = JSON.stringify(claimed);
    const eventUnits =
      this.sql
        .exec<{ units: number | null }>(
          `SELECT sum(amount) AS units FROM pending_events
            WHERE flush_id = ? AND usage_event_id IN (SELECT value FROM json_each(?))`,
          flushId,
          claimedIds,
        )
        .one().units ?? 0;
    for (const row of this.sql
      .exec<PendingEventRow>(
        `SELECT * FROM pending_events
          WHERE flush_id = ? AND usage_event_id NOT IN (SELECT value FROM json_each(?))`,
        flushId,
        claimedIds,
      )
      .toArray()) {
      this.settlement.unclaimed(row);
    }
    this.settlement.claimed(claimed);
    this.sql.exec("DELETE FROM pending_events WHERE flush_id = ?", flushId);
    this.sql.exec("DELETE FROM flushes WHERE id = ?", flushId);
    this.hours.settle(flushId);
    return eventUnits;
  }

  /** Units no flush has taken yet. */
  private waitingUnits(): number {
    const pending = this.sql
      .exec<{ pending: number | null }>("SELECT sum(unflushed) AS pending FROM counters")
      .one().pending;
    const pendingEvents = this.sql
      .exec<{ pending: number | null }>(
        "SELECT sum(amount) AS pending FROM pending_events WHERE flush_id IS NULL",
      )
      .one().pending;
    return (pending ?? 0) + (pendingEvents ?? 0);
  }
}

/** Several flush passes as one answer (shard 0 flushing the other shards with its own). */
export function flushTotals(results: readonly FlushResult[]): FlushResult {
  return {
    flushes: results.reduce((sum, result) => sum + result.flushes, 0),
    units: results.reduce((sum, result) => sum + result.units, 0),
    pendingUnits: results.reduce((sum, result) => sum + result.pendingUnits, 0),
  };
}
