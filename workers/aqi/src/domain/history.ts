/**
 * The recent-hours variant: a station's last hours of pollutant readings, the
 * checks they must pass, and the features the model reads from them.
 *
 * Everything the national (CPCB) formula determines exactly (24-hour means,
 * 8-hour maxima, sub-indices, the AQI at the newest reading, the "window
 * arithmetic" forecast) is computed here with the service's calculator. The
 * trainer (workers/aqi/training/prepare-history.ts) builds its rows by calling
 * `encodeHistoryColumns` on request-shaped readings, so serving and training
 * cannot compute them differently.
 *
 * Time runs backwards from the predicted hour: a reading with `hours_before`
 * k is the hour that ends k hours before the predicted hour ends, so the
 * predicted hour's 24-hour window holds hours_before 0..23 and the newest
 * reading's window hours_before h..h+23 (h = the newest reading's
 * hours_before, the forecast horizon).
 */
import type { FastApiValidationIssue } from "@edge-platform/shared/http/error-shapes/fastapi";
import {
  type AqiResult,
  AVERAGING_RULE,
  averagedConcentrationsAt,
  computeAqi,
  type HourlyConcentrations,
  MIN_HOURS_FOR_8H_MAX,
  MIN_HOURS_FOR_24H_MEAN,
  POLLUTANTS,
  type Pollutant,
  subIndex,
} from "./aqi-calculator.ts";
import {
  encodeFeatures,
  FEATURE_NAMES,
  type FeatureInput,
  type PreprocessingSpec,
} from "./features.ts";
import { READING_FIELDS, type ReadingField, type RecentHour } from "./recent-hours.ts";

export const POLLUTANT_OF_FIELD: Readonly<Record<ReadingField, Pollutant>> = {
  pm25: "PM2.5",
  pm10: "PM10",
  no2: "NO2",
  so2: "SO2",
  nh3: "NH3",
  co: "CO",
  o3: "O3",
};

/**
 * Physical bounds of an hourly concentration (inclusive): ug/m3, CO mg/m3.
 * The upper ends lie above the measuring range of the analysers CPCB stations
 * use (PM monitors report up to 1,000 ug/m3 as a rule; Delhi's worst hours
 * stay below it), so any real reading passes and unit mistakes (CO in ug/m3)
 * do not.
 */
export const CONCENTRATION_BOUNDS: Readonly<Record<ReadingField, { ge: number; le: number }>> = {
  pm25: { ge: 0, le: 2000 },
  pm10: { ge: 0, le: 3000 },
  no2: { ge: 0, le: 2000 },
  so2: { ge: 0, le: 2000 },
  nh3: { ge: 0, le: 2000 },
  co: { ge: 0, le: 100 },
  o3: { ge: 0, le: 1000 },
};

/** At most this many readings, at most this many hours back. */
export const MAX_RECENT_HOURS = 72;
/** The newest reading may be at most this many hours before the predicted hour (the longest horizon). */
export const MAX_HORIZON_HOURS = 48;

function present(value: number | null | undefined): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

/** The readings as a time-ordered series: element i is hours_before (MAX_RECENT_HOURS - i); the last is the predicted hour. */
function seriesOf(readings: readonly RecentHour[]): HourlyConcentrations[] {
  const series: HourlyConcentrations[] = Array.from({ length: MAX_RECENT_HOURS + 1 }, () => ({}));
  for (const reading of readings) {
    const hour: HourlyConcentrations = {};
    for (const field of READING_FIELDS) {
      const value = reading[field];
      if (present(value)) hour[POLLUTANT_OF_FIELD[field]] = value;
    }
    series[MAX_RECENT_HOURS - reading.hours_before] = hour;
  }
  return series;
}

const indexOf = (hoursBefore: number): number => MAX_RECENT_HOURS - hoursBefore;

export function horizonOf(readings: readonly RecentHour[]): number {
  return Math.min(...readings.map((reading) => reading.hours_before));
}

/** The CPCB AQI at the newest reading (windows ending at it). */
export function aqiAtLatestReading(readings: readonly RecentHour[]): AqiResult {
  return computeAqi(averagedConcentrationsAt(seriesOf(readings), indexOf(horizonOf(readings))));
}

/** A pollutant's readings at hours_before in [from, to] (inclusive), newest first. */
function valuesBetween(
  series: readonly HourlyConcentrations[],
  pollutant: Pollutant,
  from: number,
  to: number,
): number[] {
  const values: number[] = [];
  for (let hoursBefore = from; hoursBefore <= Math.min(to, MAX_RECENT_HOURS); hoursBefore += 1) {
    const value = series[indexOf(hoursBefore)]?.[pollutant];
    if (present(value)) values.push(value);
  }
  return values;
}

function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (const value of values) sum += value;
  return sum / values.length;
}

/** The mean of a pollutant's newest three readings (whatever their hours), NaN without any. */
function meanOfNewestThree(series: readonly HourlyConcentrations[], pollutant: Pollutant): number {
  const newest: number[] = [];
  for (let index = MAX_RECENT_HOURS; index >= 0 && newest.length < 3; index -= 1) {
    const value = series[index]?.[pollutant];
    if (present(value)) newest.push(value);
  }
  return mean(newest);
}

export interface WindowArithmetic {
  /** The forecast AQI (capped at 500). */
  readonly aqi: number;
  /** The averaged concentrations it came from (null: not enough data in the window). */
  readonly averaged: Readonly<Partial<Record<Pollutant, number | null>>>;
  /** False when the window arithmetic had no AQI and the AQI at the newest reading stood in. */
  readonly computed: boolean;
}

/**
 * The forecast without learning: keep the measured hours of the predicted
 * hour's windows and fill its unknown newest hours (hours_before 0..h-1) with
 * each pollutant's mean of its newest three readings; the AQI of those
 * windows. From 24 hours ahead no hour of the predicted hour's 24-hour window
 * is measured, and when the filled windows still lack data for an AQI, the
 * AQI at the newest reading (persistence) stands in.
 */
export function windowArithmetic(
  readings: readonly RecentHour[],
  latest: AqiResult = aqiAtLatestReading(readings),
): WindowArithmetic {
  const horizon = horizonOf(readings);
  const series = seriesOf(readings);
  const persistence = (): WindowArithmetic => ({
    aqi: latest.aqi ?? Number.NaN,
    averaged: {},
    computed: false,
  });
  if (horizon >= 24) return persistence();
  const filled = series.map((hour) => ({ ...hour }));
  for (const pollutant of POLLUTANTS) {
    const fill = meanOfNewestThree(series, pollutant);
    if (Number.isNaN(fill)) continue;
    for (let hoursBefore = 0; hoursBefore < horizon; hoursBefore += 1) {
      filled[indexOf(hoursBefore)]![pollutant] = fill;
    }
  }
  const averaged = averagedConcentrationsAt(filled, indexOf(0));
  const result = computeAqi(averaged);
  return result.aqi === null ? persistence() : { aqi: result.aqi, averaged, computed: true };
}

/**
 * Columns the recent-hours model reads after the weather-only ones, in
 * order. Per pollutant (field name p):
 * - p_avg_latest: its CPCB average at the newest reading (24-hour mean or 8-hour maximum);
 * - p_subindex_latest: the sub-index of that average;
 * - p_avg_window_arithmetic: its average in the window arithmetic's filled windows;
 * - p_last: the newest reading's value; p_mean_last3: the mean of its newest three readings;
 * - p_mean_prev3: the mean of hours_before h+3..h+5 (with p_mean_last3, the recent trend);
 * - p_same_hour_day_before: its value 24 hours before the predicted hour (when measured);
 * - p_leaving_mean: the mean of the newest reading's window hours that are not in the
 *   predicted hour's window (what leaves the average by then).
 */
export const HISTORY_PER_POLLUTANT = [
  "avg_latest",
  "subindex_latest",
  "avg_window_arithmetic",
  "last",
  "mean_last3",
  "mean_prev3",
  "same_hour_day_before",
  "leaving_mean",
] as const;

export const HISTORY_COLUMNS = [
  "horizon_hours",
  "latest_reading_hour",
  "aqi_at_latest_reading",
  "window_arithmetic_aqi",
  ...READING_FIELDS.flatMap((field) => HISTORY_PER_POLLUTANT.map((name) => `${field}_${name}`)),
] as const;

/** Position of the window arithmetic AQI among the history columns (the model predicts relative to it). */
export const WINDOW_ARITHMETIC_COLUMN = HISTORY_COLUMNS.indexOf("window_arithmetic_aqi");

const orNaN = (value: number | null | undefined): number => (present(value) ? value : Number.NaN);

export interface HistoryEncoding {
  /** HISTORY_COLUMNS, float64, NaN for missing. */
  readonly columns: number[];
  readonly horizon: number;
  readonly latest: AqiResult;
  readonly windowArithmetic: WindowArithmetic;
}

/**
 * The history columns of one request whose readings passed `recentHoursIssues`
 * (throws when the AQI at the newest reading does not exist). `hour` is the
 * predicted hour of the day.
 */
export function encodeHistoryColumns(
  readings: readonly RecentHour[],
  hour: number,
): HistoryEncoding {
  const horizon = horizonOf(readings);
  const series = seriesOf(readings);
  const latestAveraged = averagedConcentrationsAt(series, indexOf(horizon));
  const latest = computeAqi(latestAveraged);
  if (latest.aqi === null) {
    throw new RangeError(`no CPCB AQI at the newest reading (${latest.invalidReason})`);
  }
  const arithmetic = windowArithmetic(readings, latest);
  const columns: number[] = [
    horizon,
    (((hour - horizon) % 24) + 24) % 24,
    latest.aqi,
    arithmetic.aqi,
  ];
  for (const field of READING_FIELDS) {
    const pollutant = POLLUTANT_OF_FIELD[field];
    const averaged = latestAveraged[pollutant];
    const windowLength = AVERAGING_RULE[pollutant] === "24h-mean" ? 24 : 8;
    const sameHour = horizon <= 24 ? series[indexOf(24)]?.[pollutant] : null;
    columns.push(
      orNaN(averaged),
      present(averaged) ? subIndex(pollutant, averaged) : Number.NaN,
      orNaN(arithmetic.averaged[pollutant]),
      orNaN(series[indexOf(horizon)]?.[pollutant]),
      meanOfNewestThree(series, pollutant),
      mean(valuesBetween(series, pollutant, horizon + 3, horizon + 5)),
      orNaN(sameHour),
      mean(
        valuesBetween(
          series,
          pollutant,
          Math.max(windowLength, horizon),
          horizon + windowLength - 1,
        ),
      ),
    );
  }
  return { columns, horizon, latest, windowArithmetic: arithmetic };
}

function hoursWithData(
  readings: readonly RecentHour[],
  field: ReadingField,
  from: number,
  to: number,
): number {
  return readings.filter(
    (reading) =>
      reading.hours_before >= from && reading.hours_before <= to && present(reading[field]),
  ).length;
}

/**
 * What the field types cannot check about `recent_hours`: each hour once, a
 * concentration in every reading, the horizon, and enough data for the CPCB
 * AQI at the newest reading. `loc` is the field's location in the body.
 * Returns pydantic-shaped value errors (none: the readings can be scored).
 */
export function recentHoursIssues(
  readings: readonly RecentHour[],
  loc: (string | number)[],
): FastApiValidationIssue[] {
  const issues: FastApiValidationIssue[] = [];
  readings.forEach((reading, index) => {
    if (!READING_FIELDS.some((field) => present(reading[field]))) {
      issues.push({
        type: "value_error",
        loc: [...loc, index],
        msg: `Value error, the reading ${reading.hours_before} hours before has no concentration: send at least one of ${READING_FIELDS.join(", ")}`,
        input: reading,
        ctx: { error: "a reading needs at least one concentration" },
      });
    }
  });
  const seen = new Set<number>();
  const repeated = new Set<number>();
  for (const reading of readings) {
    if (seen.has(reading.hours_before)) repeated.add(reading.hours_before);
    seen.add(reading.hours_before);
  }
  if (repeated.size > 0) {
    const hours = [...repeated].sort((a, b) => a - b);
    issues.push({
      type: "value_error",
      loc,
      msg: `Value error, hours_before must be unique within recent_hours: ${hours.join(", ")} ${hours.length === 1 ? "appears" : "appear"} more than once`,
      input: hours,
      ctx: { error: "repeated hours_before" },
    });
  }
  if (issues.length > 0) return issues;
  const horizon = horizonOf(readings);
  if (horizon > MAX_HORIZON_HOURS) {
    return [
      {
        type: "value_error",
        loc,
        msg: `Value error, the newest reading is ${horizon} hours before the predicted hour; it must be 1 to ${MAX_HORIZON_HOURS} hours before (forecasts reach at most ${MAX_HORIZON_HOURS} hours ahead)`,
        input: horizon,
        ctx: { error: "newest reading too old", max_hours_before: MAX_HORIZON_HOURS },
      },
    ];
  }
  const latest = aqiAtLatestReading(readings);
  if (latest.aqi !== null) return [];
  const windowEnd = horizon + 23;
  const pm25 = hoursWithData(readings, "pm25", horizon, windowEnd);
  const pm10 = hoursWithData(readings, "pm10", horizon, windowEnd);
  const counts = `hours ${horizon}-${windowEnd} before the predicted hour hold ${pm25} of PM2.5 and ${pm10} of PM10`;
  const withData = Object.entries(latest.subIndices).map(([pollutant]) => pollutant);
  const msg =
    latest.subIndices["PM2.5"] === undefined && latest.subIndices.PM10 === undefined
      ? `Value error, too few readings to compute the CPCB AQI at the newest reading (${horizon} hours before the predicted hour): its 24-hour averages need at least ${MIN_HOURS_FOR_24H_MEAN} of the 24 hours of PM2.5 or PM10; ${counts}`
      : `Value error, too few readings to compute the CPCB AQI at the newest reading (${horizon} hours before the predicted hour): it needs at least 3 pollutants with enough hours (24-hour averages ${MIN_HOURS_FOR_24H_MEAN} of 24 hours, CO and O3 ${MIN_HOURS_FOR_8H_MAX} of 8), one of them PM2.5 or PM10; ${withData.length === 0 ? "none has" : `only ${withData.join(", ")} ${withData.length === 1 ? "has" : "have"}`} enough`;
  return [
    {
      type: "value_error",
      loc,
      msg,
      input: { newest_hours_before: horizon, pm25_hours: pm25, pm10_hours: pm10 },
      ctx: { error: "too few readings for a CPCB AQI at the newest reading" },
    },
  ];
}

/** The recent-hours model's input: the weather-only columns, then HISTORY_COLUMNS. */
export const HISTORY_FEATURE_NAMES = [...FEATURE_NAMES, ...HISTORY_COLUMNS] as const;
export const HISTORY_FEATURE_COUNT = HISTORY_FEATURE_NAMES.length;

/** One input row of the recent-hours model (HISTORY_FEATURE_NAMES order); throws without readings. */
export function encodeHistoryFeatures(input: FeatureInput, spec: PreprocessingSpec): number[] {
  const readings = input.recent_hours;
  if (!readings || readings.length === 0) {
    throw new RangeError("the recent-hours variant needs recent_hours");
  }
  return [...encodeFeatures(input, spec), ...encodeHistoryColumns(readings, input.hour).columns];
}

/** Row-major float32 data [inputs.length, HISTORY_FEATURE_COUNT] for the recent-hours model. */
export function encodeHistoryBatch(
  inputs: readonly FeatureInput[],
  spec: PreprocessingSpec,
): Float32Array {
  const tensor = new Float32Array(inputs.length * HISTORY_FEATURE_COUNT);
  inputs.forEach((input, rowIndex) => {
    tensor.set(encodeHistoryFeatures(input, spec), rowIndex * HISTORY_FEATURE_COUNT);
  });
  return tensor;
}
