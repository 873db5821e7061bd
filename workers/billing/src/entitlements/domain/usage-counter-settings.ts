/*
 * The usage counters' settings (EntitlementCounter, one per tenant), read
 * from the environment. A value that is missing or not a number falls back
 * to the default; one out of range is brought into it.
 *
 *   USAGE_FLUSH_INTERVAL_MS              how long the counter gathers units
 *                                        before one D1 batch writes them
 *                                        (202 -> AGGREGATED grows with it)
 *   USAGE_COUNTER_ID_RETENTION_SECONDS   how long the counter remembers the
 *                                        event ids it recorded
 *   USAGE_FLUSH_IDS_RETENTION_SECONDS    how long a flush's usage_flushes
 *                                        row stays in D1 (each tenant's
 *                                        latest row stays whatever its age)
 *   USAGE_COUNTER_LEASE_INTERVAL_MS      how far a check on a counter shard
 *                                        other than 0 may lag the tenant's
 *                                        total (counter/README.md)
 *
 * The counter's memory of event ids is a fast path, not the guarantee: a
 * logged event is counted only by the flush that claims it in its usage-log
 * shard, and a shard never lets a finished (AGGREGATED or REJECTED) or
 * archived event be claimed again, so an event that reaches the counter
 * again after its id was forgotten is taken back out at the next flush.
 * The memory keeps such repeats from touching the counter's totals at all
 * while they are likely (queue redeliveries, re-drives: minutes).
 */

export const DEFAULT_FLUSH_INTERVAL_MS = 200;
const MIN_FLUSH_INTERVAL_MS = 10;
/** Past a minute a flush would hold too many units for one D1 batch round to be the norm. */
const MAX_FLUSH_INTERVAL_MS = 60_000;

export const DEFAULT_COUNTER_ID_RETENTION_SECONDS = 3_600;
/** At least a minute: longer than a record call and the flush that follows it. */
const MIN_COUNTER_ID_RETENTION_SECONDS = 60;

export const DEFAULT_FLUSH_IDS_RETENTION_SECONDS = 3_600;
const MIN_FLUSH_IDS_RETENTION_SECONDS = 60;

const MAX_RETENTION_SECONDS = 400 * 86_400;

export const DEFAULT_LEASE_INTERVAL_MS = 1_000;
/** Below this, checks would reach shard 0 about as often as without shards. */
const MIN_LEASE_INTERVAL_MS = 50;
const MAX_LEASE_INTERVAL_MS = 60_000;

function configured(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  const number = Number(value);
  return Number.isFinite(number) ? number : undefined;
}

function bounded(value: string | undefined, fallback: number, min: number, max: number): number {
  const number = configured(value);
  if (number === undefined) return fallback;
  return Math.min(max, Math.max(min, Math.floor(number)));
}

/** USAGE_FLUSH_INTERVAL_MS: the counter's flush delay, ms (10 to 60,000; default 200). */
export function flushIntervalMs(value: string | undefined): number {
  return bounded(value, DEFAULT_FLUSH_INTERVAL_MS, MIN_FLUSH_INTERVAL_MS, MAX_FLUSH_INTERVAL_MS);
}

/** USAGE_COUNTER_ID_RETENTION_SECONDS, in ms (at least a minute; default an hour). */
export function counterIdRetentionMs(value: string | undefined): number {
  return (
    bounded(
      value,
      DEFAULT_COUNTER_ID_RETENTION_SECONDS,
      MIN_COUNTER_ID_RETENTION_SECONDS,
      MAX_RETENTION_SECONDS,
    ) * 1_000
  );
}

/** USAGE_FLUSH_IDS_RETENTION_SECONDS, in ms (at least a minute; default an hour). */
export function flushIdsRetentionMs(value: string | undefined): number {
  return (
    bounded(
      value,
      DEFAULT_FLUSH_IDS_RETENTION_SECONDS,
      MIN_FLUSH_IDS_RETENTION_SECONDS,
      MAX_RETENTION_SECONDS,
    ) * 1_000
  );
}

/** USAGE_COUNTER_LEASE_INTERVAL_MS: how far a shard's check may lag, ms (50 to 60,000; default 1,000). */
export function leaseIntervalMs(value: string | undefined): number {
  return bounded(value, DEFAULT_LEASE_INTERVAL_MS, MIN_LEASE_INTERVAL_MS, MAX_LEASE_INTERVAL_MS);
}
