/**
 * Buckets of the usage timeseries: hours or UTC days, built from the
 * stored per-hour units so every bucket is exact (a day is the sum of its
 * 24 hours). A range is widened to whole buckets: `from` down to the start
 * of its bucket, `to` up to the end of its bucket.
 */

export type Granularity = "hour" | "day";

const HOUR_MS = 3_600_000;
const BUCKET_MS: Record<Granularity, number> = { hour: HOUR_MS, day: 24 * HOUR_MS };
/** 31 days of hours, or a leap year of days. */
export const MAX_BUCKETS: Record<Granularity, number> = { hour: 744, day: 366 };

export interface TimeseriesBucket {
  start: string;
  end: string;
  value: number;
}

export type TimeseriesRange =
  | { ok: true; from: Date; to: Date; buckets: number }
  | { ok: false; message: string };

function floorTo(ms: number, size: number): number {
  return ms - (((ms % size) + size) % size);
}

/** The whole-bucket range covering [from, to), or why there is none. */
export function timeseriesRange(from: Date, to: Date, granularity: Granularity): TimeseriesRange {
  if (to.getTime() <= from.getTime()) return { ok: false, message: "to must be after from" };
  const size = BUCKET_MS[granularity];
  const start = floorTo(from.getTime(), size);
  const end = floorTo(to.getTime() - 1, size) + size;
  const buckets = (end - start) / size;
  if (buckets > MAX_BUCKETS[granularity]) {
    return {
      ok: false,
      message: `The range holds ${buckets} ${granularity} buckets; at most ${MAX_BUCKETS[granularity]} are served`,
    };
  }
  return { ok: true, from: new Date(start), to: new Date(end), buckets };
}

/** Every bucket of the range in order, zero where no hour holds units. */
export function foldHours(
  range: { from: Date; to: Date },
  granularity: Granularity,
  hours: { hourStart: string; amount: number }[],
): TimeseriesBucket[] {
  const size = BUCKET_MS[granularity];
  const first = range.from.getTime();
  const count = (range.to.getTime() - first) / size;
  const values = new Array<number>(count).fill(0);
  for (const hour of hours) {
    const index = Math.floor((Date.parse(hour.hourStart) - first) / size);
    if (index >= 0 && index < count) values[index] = (values[index] ?? 0) + hour.amount;
  }
  return values.map((value, index) => ({
    start: new Date(first + index * size).toISOString(),
    end: new Date(first + (index + 1) * size).toISOString(),
    value,
  }));
}
