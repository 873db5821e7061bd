/**
 * Data-quality checks of the training pipeline: thermometer drift detection,
 * plausibility ranges, coverage gaps. Each check returns what it found and
 * what the pipeline did about it, for the model card.
 */

import { itemAt } from "./arrays.ts";

/**
 * Approximate monthly mean air temperature normals for New Delhi
 * (Safdarjung, India Meteorological Department, 1991-2020), rounded to about
 * half a degree. They are the external reference for drift detection: a
 * thermometer can only be judged against something it does not measure.
 */
export const NEW_DELHI_MONTHLY_MEAN_TEMPERATURE_C: readonly number[] = [
  14.3, 17.8, 23.1, 29.1, 33.0, 33.5, 31.4, 30.4, 29.6, 26.0, 20.4, 15.6,
];

/** A sustained step in the anomaly larger than this is treated as instrument drift, not weather. */
export const DRIFT_STEP_THRESHOLD_C = 2.0;
/** Shortest segment on either side of a candidate step (days), so a single heat wave cannot be the step. */
export const DRIFT_MIN_SEGMENT_DAYS = 60;
/** A day's mean counts only with this many hourly readings. */
export const MIN_HOURS_FOR_DAILY_MEAN = 18;

export const PLAUSIBLE_RANGES = {
  temperature: { low: -5, high: 50 },
  humidity: { low: 0, high: 100 },
  windSpeedKmh: { low: 0, high: 150 },
} as const;

const DAY_MS = 86_400_000;

/** Normal for a given day: monthly normals placed at mid-month, linearly interpolated, wrapping the year. */
export function normalTemperatureForDay(timeMs: number): number {
  const date = new Date(timeMs);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  const daysInMonth = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  // Position in months, with each month's normal at its middle (x.5).
  const position = month + (date.getUTCDate() - 0.5) / daysInMonth;
  const lowerMonth = Math.floor(position - 0.5);
  const weight = position - 0.5 - lowerMonth;
  const normals = NEW_DELHI_MONTHLY_MEAN_TEMPERATURE_C;
  const lower = itemAt(normals, (lowerMonth + 12) % 12);
  const upper = itemAt(normals, (lowerMonth + 1 + 12) % 12);
  return lower + (upper - lower) * weight;
}

export interface MonthlyTemperatureRow {
  readonly month: string;
  readonly hours: number;
  readonly meanC: number;
  readonly normalC: number;
  readonly anomalyC: number;
}

export interface DriftFinding {
  readonly station: string;
  readonly detected: boolean;
  /** First day (YYYY-MM-DD) of the drifted segment, when detected. */
  readonly driftStartDate: string | null;
  readonly meanAnomalyBeforeC: number | null;
  readonly meanAnomalyAfterC: number | null;
  readonly stepC: number | null;
  readonly decemberMeansC: Readonly<Record<string, number>>;
  readonly monthly: readonly MonthlyTemperatureRow[];
  readonly hoursExcluded: number;
  readonly action: string;
}

export interface TimedReading {
  readonly timeMs: number;
  readonly value: number | null;
}

function isoDay(timeMs: number): string {
  return new Date(timeMs).toISOString().slice(0, 10);
}

/**
 * Detects a sustained step in a station's temperature relative to the normals.
 *
 * Daily mean anomalies (day mean minus normal) are split at the one date that
 * minimises the squared error of a two-level (before/after) fit; if the level
 * rises or falls by more than DRIFT_STEP_THRESHOLD_C, everything from that
 * date on is drift. A single step is the right model for "the sensor went
 * bad": a real warm season is a bump that returns, not a step that persists,
 * and segments shorter than DRIFT_MIN_SEGMENT_DAYS are not considered.
 */
export function detectTemperatureDrift(
  station: string,
  readings: readonly TimedReading[],
): DriftFinding {
  const dayBuckets = new Map<number, { sum: number; count: number }>();
  const monthBuckets = new Map<string, { sum: number; count: number; normalSum: number }>();
  for (const { timeMs, value } of readings) {
    if (value === null) continue;
    const dayStart = Math.floor(timeMs / DAY_MS) * DAY_MS;
    const day = dayBuckets.get(dayStart) ?? { sum: 0, count: 0 };
    day.sum += value;
    day.count += 1;
    dayBuckets.set(dayStart, day);
    const monthKey = new Date(timeMs).toISOString().slice(0, 7);
    const month = monthBuckets.get(monthKey) ?? { sum: 0, count: 0, normalSum: 0 };
    month.sum += value;
    month.count += 1;
    month.normalSum += normalTemperatureForDay(timeMs);
    monthBuckets.set(monthKey, month);
  }
  const monthly: MonthlyTemperatureRow[] = [...monthBuckets.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([month, bucket]) => ({
      month,
      hours: bucket.count,
      meanC: round2(bucket.sum / bucket.count),
      normalC: round2(bucket.normalSum / bucket.count),
      anomalyC: round2((bucket.sum - bucket.normalSum) / bucket.count),
    }));
  const decemberMeansC: Record<string, number> = {};
  for (const row of monthly) {
    if (row.month.endsWith("-12")) decemberMeansC[row.month.slice(0, 4)] = row.meanC;
  }

  const days = [...dayBuckets.entries()]
    .filter(([, bucket]) => bucket.count >= MIN_HOURS_FOR_DAILY_MEAN)
    .sort(([a], [b]) => a - b)
    .map(([dayStart, bucket]) => ({
      dayStart,
      anomaly: bucket.sum / bucket.count - normalTemperatureForDay(dayStart + DAY_MS / 2),
    }));

  const notDetected = (action: string): DriftFinding => ({
    station,
    detected: false,
    driftStartDate: null,
    meanAnomalyBeforeC: null,
    meanAnomalyAfterC: null,
    stepC: null,
    decemberMeansC,
    monthly,
    hoursExcluded: 0,
    action,
  });
  if (days.length < 2 * DRIFT_MIN_SEGMENT_DAYS) {
    return notDetected(
      days.length === 0 ? "no temperature readings" : "too few complete days to test for drift",
    );
  }

  // Prefix sums make every candidate split O(1).
  const prefixSum = [0];
  const prefixSquares = [0];
  for (const { anomaly } of days) {
    prefixSum.push(itemAt(prefixSum, prefixSum.length - 1) + anomaly);
    prefixSquares.push(itemAt(prefixSquares, prefixSquares.length - 1) + anomaly * anomaly);
  }
  const segmentError = (from: number, to: number): number => {
    const count = to - from;
    const sum = itemAt(prefixSum, to) - itemAt(prefixSum, from);
    return itemAt(prefixSquares, to) - itemAt(prefixSquares, from) - (sum * sum) / count;
  };
  let bestSplit = -1;
  let bestError = Number.POSITIVE_INFINITY;
  for (
    let split = DRIFT_MIN_SEGMENT_DAYS;
    split <= days.length - DRIFT_MIN_SEGMENT_DAYS;
    split += 1
  ) {
    const error = segmentError(0, split) + segmentError(split, days.length);
    if (error < bestError) {
      bestError = error;
      bestSplit = split;
    }
  }
  const meanBefore = itemAt(prefixSum, bestSplit) / bestSplit;
  const meanAfter =
    (itemAt(prefixSum, days.length) - itemAt(prefixSum, bestSplit)) / (days.length - bestSplit);
  const step = meanAfter - meanBefore;
  if (Math.abs(step) <= DRIFT_STEP_THRESHOLD_C) {
    return {
      ...notDetected(
        `largest step ${round2(step)} C is within the ${DRIFT_STEP_THRESHOLD_C} C tolerance; readings kept`,
      ),
      meanAnomalyBeforeC: round2(meanBefore),
      meanAnomalyAfterC: round2(meanAfter),
      stepC: round2(step),
    };
  }
  const driftStartMs = itemAt(days, bestSplit).dayStart;
  const hoursExcluded = readings.filter(
    (reading) => reading.value !== null && reading.timeMs >= driftStartMs,
  ).length;
  return {
    station,
    detected: true,
    driftStartDate: isoDay(driftStartMs),
    meanAnomalyBeforeC: round2(meanBefore),
    meanAnomalyAfterC: round2(meanAfter),
    stepC: round2(step),
    decemberMeansC,
    monthly,
    hoursExcluded,
    action:
      "excluded: readings from the drift start on are set to missing. Not corrected, because the bias grows over time " +
      "(see the monthly anomalies) so no single offset fits, and there is no co-located reference to fit a time-varying one. " +
      "The model handles missing temperature with its own branch (learned from the drifted period), while the service, " +
      "which always sends a true temperature, uses the temperature splits learned from trustworthy readings only.",
  };
}

export function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

export interface CoverageGap {
  readonly from: string;
  readonly to: string;
  readonly days: number;
}

/** Spans of at least `minimumDays` without a single valid target hour. */
export function findCoverageGaps(
  sortedTimesMs: readonly number[],
  minimumDays: number,
): CoverageGap[] {
  const gaps: CoverageGap[] = [];
  const hourText = (timeMs: number): string =>
    `${new Date(timeMs).toISOString().slice(0, 13).replace("T", " ")}:00`;
  for (let index = 1; index < sortedTimesMs.length; index += 1) {
    const before = itemAt(sortedTimesMs, index - 1);
    const after = itemAt(sortedTimesMs, index);
    const span = after - before;
    if (span >= minimumDays * DAY_MS) {
      gaps.push({
        from: hourText(before),
        to: hourText(after),
        days: round2(span / DAY_MS),
      });
    }
  }
  return gaps;
}
