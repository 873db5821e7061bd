/**
 * How a usage-log shard's cost per event and memory depend on the ids it
 * keeps, for the capacity model (scripts/capacity.ts). Measured by
 * scripts/lib/capacity-measure-growth.ts (`npm run capacity -- --measure`,
 * "shardGrowth" and "pastDays"): the shard's statements at each size,
 * timed in rounds against an empty shard.
 *
 * The archived-id index keeps the ids of the current day (and of the day
 * before, until two hours after it ends) in segments with filters in
 * memory; each past day is merged into one table without a filter, which
 * every batch's ids are looked up in. So the cost per event depends on the
 * ids of a day (the curve) and on the days kept (a share per day), and
 * the memory on the ids of a day.
 */

/**
 * measured (`npm run bench -- usage-log-growth`, 3 passes of 9 rounds): a
 * shard's CPU per event at `ids` archived ids of one day, as a multiple of
 * an empty shard's; each the median of the passes (1.03 to 1.05 at
 * 3,000,000; 1.01 to 1.05 at 10,000,000).
 */
export const SHARD_GROWTH: readonly { ids: number; ratio: number }[] = [
  { ids: 0, ratio: 1 },
  { ids: 500_000, ratio: 1.02 },
  { ids: 1_000_000, ratio: 1.04 },
  { ids: 2_000_000, ratio: 1.02 },
  { ids: 3_000_000, ratio: 1.04 },
  { ids: 10_000_000, ratio: 1.04 },
];

/** measured: what each merged past day (2,500,000 ids) adds to the cost per event, as a share of an empty shard's (0.077: 4 days 1.31x, passes 1.24 to 1.37). */
export const PAST_DAY_RATIO = 0.08;

/** code: a past day is merged two hours after it ends (COMPACT_AFTER_MS): the ids of a day and those hours have filters. */
export const FILTERED_SECONDS = 86_400 + 7_200;

/**
 * code: the filters' memory per id kept: 16 bits per id in power-of-two
 * sizes, 512 KiB for a full segment of 250,000 ids (2.1 bytes per id).
 */
export const FILTER_BYTES_PER_ID = 2.1;

/** Cloudflare's memory per Durable Object isolate (128 MB). */
export const DURABLE_OBJECT_MEMORY_BYTES = 128e6;

/**
 * The cost per event at `ids` ids kept relative to an empty shard: the
 * measured curve, linear between its points; past the last, its last
 * slope carried on (never below the last point).
 */
export function growthFactor(ids: number, curve = SHARD_GROWTH): number {
  const points = [...curve].sort((a, b) => a.ids - b.ids);
  const first = points[0];
  if (!first || ids <= first.ids) return first?.ratio ?? 1;
  for (let index = 1; index < points.length; index++) {
    const low = points[index - 1] as { ids: number; ratio: number };
    const high = points[index] as { ids: number; ratio: number };
    if (ids <= high.ids) {
      return low.ratio + ((high.ratio - low.ratio) * (ids - low.ids)) / (high.ids - low.ids);
    }
  }
  const last = points.at(-1) as { ids: number; ratio: number };
  const before = points.at(-2) ?? last;
  const slope = last.ids > before.ids ? (last.ratio - before.ratio) / (last.ids - before.ids) : 0;
  return Math.max(last.ratio, last.ratio + slope * (ids - last.ids));
}

/** A shard's cost per event relative to an empty shard's, at `rate` events/s with `days` days of ids kept. */
export function shardCostFactor(rate: number, days: number): number {
  return growthFactor(rate * FILTERED_SECONDS) + PAST_DAY_RATIO * Math.max(0, days - 1);
}

/** The share of a Durable Object's memory the filters of `ids` ids kept take. */
export function filterMemoryUse(ids: number): number {
  return (ids * FILTER_BYTES_PER_ID) / DURABLE_OBJECT_MEMORY_BYTES;
}
