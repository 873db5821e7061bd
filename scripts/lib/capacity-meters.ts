/**
 * Meter state in the capacity model (scripts/capacity.ts). The tenant's
 * EntitlementCounter keeps, per subscription window of a metered feature,
 * the group combinations it keeps apart (`meter_groups`) and the distinct
 * values each group has seen (`meter_values`, UNIQUE_COUNT), and sweeps
 * them 35 days after the window ends; D1 keeps a `usage_meter_groups` row
 * per subscription, feature, window and group. The costs are measured by
 * scripts/lib/capacity-measure-meters.ts (`npm run capacity -- --measure`).
 * This module takes its inputs as arguments so that capacity.ts can
 * import it without a cycle.
 */
import { MAX_GROUP_COMBINATIONS, OVERFLOW_GROUP_KEY } from "../../shared/src/billing/meter.ts";

export { MAX_GROUP_COMBINATIONS };

/** Meter state's costs, spread into capacity.ts's COSTS (same conventions). */
export const METER_COSTS = {
  /**
   * measured: a distinct value's `meter_values` row (a 36-char user id, in
   * a window with a 2-dimension group key: 212 to 213; 166 with the
   * ungrouped key ''). WITHOUT ROWID: the row is its primary key.
   */
  meterValueBytes: 213,
  /** measured: a group combination's `meter_groups` row (2-dimension key): 166 to 169. */
  meterGroupRowBytes: 169,
  /** measured: one group's `usage_meter_groups` row in D1 with its index. */
  d1MeterGroupRowBytes: 609,
  /**
   * measured: the counter placing a UNIQUE_COUNT reading, per event: one
   * INSERT ... ON CONFLICT DO NOTHING (0.023 to 0.028 ms for a new value,
   * 0.014 to 0.016 for one its group has seen). Without a distinct value
   * a known group is an in-memory set lookup: 0.001 ms.
   */
  meterPlaceMsPerEvent: 0.03,
  /**
   * measured: an event of a combination beyond MAX_GROUP_COMBINATIONS
   * (0.14 to 0.28 ms): the counter does not remember that a combination
   * overflowed, so every such event looks its group up and counts the
   * window's groups again.
   */
  meterOverflowMsPerEvent: 0.3,
  /** measured: D1 folding one group of a flush into `usage_meter_groups`, SQLite CPU time (0.046 to 0.048). */
  d1MsPerMeterGroup: 0.05,
  /** code: the counter sweeps a window's groups and values this long after it ends (WINDOW_RETENTION_MS). */
  meterRetentionDays: 35,
  /** the reset window the model takes: a monthly reset. */
  meterWindowDays: 30,
} as const;

/** What the meter terms read of the model's input. */
export interface MeterInput {
  tenants: number;
  retentionDays: number;
  /** Distinct values per tenant per window, over its UNIQUE_COUNT features (the busiest tenant's). */
  distinctValues: number;
  /** Group combinations per tenant window (every tenant's). */
  meterGroups: number;
}

/**
 * Windows whose state is held at once, at most: the current one, filling,
 * and every one that ended less than `retentionDays` ago. Just before the
 * oldest goes, that is the current window's share so far plus the full
 * ones: 1 + retention / window (2.17 for 35 days after a monthly window).
 */
export function windowsKept(
  retentionDays: number,
  windowDays: number = METER_COSTS.meterWindowDays,
): number {
  return 1 + retentionDays / windowDays;
}

/** The busiest tenant's counter: its distinct values and groups for the windows it keeps, bytes. */
export function counterMeterBytes(input: MeterInput): number {
  return (
    windowsKept(METER_COSTS.meterRetentionDays) *
    (input.distinctValues * METER_COSTS.meterValueBytes +
      input.meterGroups * METER_COSTS.meterGroupRowBytes)
  );
}

/**
 * D1's `usage_meter_groups`: a row per group per window per subscription,
 * every tenant's, for the windows within the retention horizon (D1 keeps
 * them for good, as it keeps usage_flushes' latest), bytes.
 */
export function d1MeterGroupBytes(input: MeterInput): number {
  return (
    input.tenants *
    input.meterGroups *
    windowsKept(input.retentionDays) *
    METER_COSTS.d1MeterGroupRowBytes
  );
}

/**
 * Distinct values per window at which the busiest counter's storage
 * reaches `bound` of `limitBytes`, next to `otherBytes` (its remembered
 * event ids) and its groups.
 */
export function distinctValuesAt(
  bound: number,
  limitBytes: number,
  input: MeterInput,
  otherBytes = 0,
): number {
  const windows = windowsKept(METER_COSTS.meterRetentionDays);
  const free =
    bound * limitBytes - otherBytes - windows * input.meterGroups * METER_COSTS.meterGroupRowBytes;
  return Math.max(0, free / (windows * METER_COSTS.meterValueBytes));
}

/** What the notes read of the rest of the model. */
export interface MeterContext {
  durableObjectBytes: number;
  /** The busiest counter's remembered ids, bytes. */
  counterIdBytes: number;
  /** The busiest tenant's events/s and its counter's CPU ms per event without meters. */
  hotEps: number;
  counterMsPerEvent: number;
  /** D1 flush rounds per second, all tenants, and the share of D1's writer they take. */
  d1FlushesPerSecond: number;
  d1WriterUse: number;
}

const whole = (value: number) => Math.round(value).toLocaleString("en-US");
/** Three significant digits: the figures are estimates. */
const about = (value: number) =>
  value >= 100 ? whole(Number(value.toPrecision(3))) : String(Number(value.toPrecision(3)));
const megabytes = (bytes: number) =>
  bytes >= 1e9 ? `${(bytes / 1e9).toPrecision(3)} GB` : `${(bytes / 1e6).toPrecision(3)} MB`;

/** The report's lines on meter state: what it costs, the bound on groups, and where it crosses half. */
export function meterNotes(input: MeterInput, context: MeterContext): string {
  const windows = windowsKept(METER_COSTS.meterRetentionDays);
  const counter = counterMeterBytes(input);
  const atHalf = distinctValuesAt(0.5, context.durableObjectBytes, input, context.counterIdBytes);
  const d1Rows = input.tenants * input.meterGroups * windowsKept(input.retentionDays);
  const unique = context.hotEps * (context.counterMsPerEvent + METER_COSTS.meterPlaceMsPerEvent);
  const groupsAtHalf =
    context.d1FlushesPerSecond > 0
      ? ((0.5 - context.d1WriterUse) * 1000) /
        (context.d1FlushesPerSecond * METER_COSTS.d1MsPerMeterGroup)
      : Number.POSITIVE_INFINITY;
  return (
    `Meter state in the busiest tenant's counter (shard 0, which holds it alone): ${METER_COSTS.meterValueBytes} B per distinct value (meter_values), ${METER_COSTS.meterGroupRowBytes} B per group combination (meter_groups), for the current window and ${METER_COSTS.meterRetentionDays} days after each ends (${windows.toFixed(2)} monthly windows): ${whole(input.distinctValues)} distinct values and ${whole(input.meterGroups)} groups a window take ${megabytes(counter)}; with its remembered ids its 10 GB reaches 50% at about ${about(atHalf)} distinct values a window.\n` +
    `Meter groups in D1: ${METER_COSTS.d1MeterGroupRowBytes} B per usage_meter_groups row (one per group, window and subscription, kept for good): ${whole(d1Rows)} rows over the ${input.retentionDays}-day horizon, ${megabytes(d1MeterGroupBytes(input))}. A flush folds each group it carries at ${METER_COSTS.d1MsPerMeterGroup} ms of D1's writer: ${groupsAtHalf > 0 ? `about ${about(groupsAtHalf)} groups per flush round (average) keep it at or below half` : "it is already above half"}.\n` +
    `Group combinations: at most ${whole(MAX_GROUP_COMBINATIONS)} (MAX_GROUP_COMBINATIONS) per feature and window; events of further combinations are still counted and priced, at the default price, in the overflow group '${OVERFLOW_GROUP_KEY}', at ${METER_COSTS.meterOverflowMsPerEvent} ms of the counter's thread each (about ${whole((0.5 * 1000) / METER_COSTS.meterOverflowMsPerEvent)} such events/s take half of it).\n` +
    `Placing a UNIQUE_COUNT reading: ${METER_COSTS.meterPlaceMsPerEvent} ms per event; were every event of the busiest tenant one, its counter's thread (shard 0, which counts UNIQUE_COUNT features alone) would be at ${((unique / 1000) * 100).toFixed(1)}%.\n`
  );
}
