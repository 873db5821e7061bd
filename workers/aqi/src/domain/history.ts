/**
 * The recent-hours variant: a station's last hours of pollutant readings, the
 * checks they must pass, and the features the model reads from them.
 *
 * Everything the national (CPCB) formula determines exactly (24-hour means,
 * 8-hour maxima, sub-indices, the AQI at the newest reading, the "window
 * arithmetic" forecast) is computed here with the service's calculator: its
 * sub-indices and AQI, and its averaging rule applied to a flat hour-by-
 * pollutant grid, summed in the same order, so every figure is the
 * calculator's to the last bit. The trainer
 * (workers/aqi/training/prepare-history.ts) builds its rows by calling
 * `encodeHistoryColumns` on request-shaped readings, so serving and training
 * cannot compute them differently.
 *
 * A batch carries thousands of readings, so each request's readings are laid
 * out in the grid once (`checkRecentHours`), and the checks, the features and
 * the response all read that one grid.
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
  type AveragedConcentrations,
  computeAqi,
  MIN_HOURS_FOR_8H_MAX,
  MIN_HOURS_FOR_24H_MEAN,
  POLLUTANTS,
  type Pollutant,
  subIndex,
} from "./aqi-calculator.ts";
import {
  encodeFeatures,
  FEATURE_COUNT,
  FEATURE_NAMES,
  type FeatureInput,
  type PreprocessingSpec,
  writeFeatures,
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

const POLLUTANT_COUNT = POLLUTANTS.length;
/** One slot per hour from hours_before MAX_RECENT_HOURS (slot 0) to the predicted hour (the last slot). */
const SLOTS = MAX_RECENT_HOURS + 1;
const slotOf = (hoursBefore: number): number => MAX_RECENT_HOURS - hoursBefore;
// The grid is filled by reading the fields by name in READING_FIELDS order, which must be the calculator's.
if (READING_FIELDS.some((field, index) => POLLUTANT_OF_FIELD[field] !== POLLUTANTS[index])) {
  throw new Error("READING_FIELDS and the calculator's POLLUTANTS are in different orders");
}
const IS_24H_MEAN: readonly boolean[] = POLLUTANTS.map(
  (pollutant) => AVERAGING_RULE[pollutant] === "24h-mean",
);
const WINDOW_HOURS: readonly number[] = IS_24H_MEAN.map((mean) => (mean ? 24 : 8));
const MIN_READINGS: readonly number[] = IS_24H_MEAN.map((mean) =>
  mean ? MIN_HOURS_FOR_24H_MEAN : MIN_HOURS_FOR_8H_MAX,
);

/**
 * A request's readings laid out hour by hour, so that every figure below
 * reads one flat array instead of walking the reading objects again: the
 * value of the calculator's pollutant p `hours_before` k is at
 * `slotOf(k) * POLLUTANT_COUNT + p`, NaN where there is no reading.
 *
 * The grids are scratch space, reused by every call: allocating them per
 * request row cost more than filling them. Each call fills them and is done
 * with them before it returns (no await in between), and nothing that
 * outlives the call refers to them.
 */
const GRID = new Float64Array(SLOTS * POLLUTANT_COUNT);
/** The window arithmetic's copy of GRID with the unknown newest hours filled. */
const FILLED = new Float64Array(SLOTS * POLLUTANT_COUNT);
const SEEN = new Uint8Array(SLOTS);
/** Set by `put` when a concentration is not a number within its bounds, null or absent. */
let implausible = false;
/** CONCENTRATION_BOUNDS in the calculator's order. */
const LOWEST = READING_FIELDS.map((field) => CONCENTRATION_BOUNDS[field].ge);
const HIGHEST = READING_FIELDS.map((field) => CONCENTRATION_BOUNDS[field].le);

/** A reading whose concentrations have not been checked yet (as a client sent it). */
export type SentReading = { readonly hours_before: number } & {
  readonly [field in ReadingField]?: unknown;
};

/** Stores one concentration of a pollutant (NaN when there is none); 1 when there was one. */
function put(index: number, pollutant: number, value: unknown): number {
  if (typeof value === "number") {
    if (!(value >= LOWEST[pollutant]! && value <= HIGHEST[pollutant]!)) implausible = true;
    if (Number.isFinite(value)) {
      GRID[index] = value;
      return 1;
    }
  } else if (value !== null && value !== undefined) {
    implausible = true;
  }
  GRID[index] = Number.NaN;
  return 0;
}

interface GridSummary {
  /** hours_before of the newest reading (Infinity without readings). */
  readonly horizon: number;
  /** Whether some reading has no concentration or some hour comes twice (recentHoursIssues words them). */
  readonly malformed: boolean;
  /** Whether every concentration is a number within its bounds, null or absent. */
  readonly plain: boolean;
}

/** Lays the readings out in GRID. */
function fillGrid(readings: readonly SentReading[]): GridSummary {
  GRID.fill(Number.NaN);
  SEEN.fill(0);
  implausible = false;
  let horizon = Number.POSITIVE_INFINITY;
  let malformed = false;
  for (const reading of readings) {
    const hoursBefore = reading.hours_before;
    const slot = slotOf(hoursBefore);
    if (!Number.isInteger(hoursBefore) || slot < 0 || slot >= SLOTS) {
      throw new RangeError(
        `hours_before must be an integer 0..${MAX_RECENT_HOURS}, got ${hoursBefore}`,
      );
    }
    if (hoursBefore < horizon) horizon = hoursBefore;
    if (SEEN[slot] === 1) malformed = true;
    SEEN[slot] = 1;
    // A repeated hour replaces the earlier reading as a whole. The fields are
    // read by name: reading them by a computed key cost more than the rest.
    const base = slot * POLLUTANT_COUNT;
    const measured =
      put(base, 0, reading.pm25) |
      put(base + 1, 1, reading.pm10) |
      put(base + 2, 2, reading.no2) |
      put(base + 3, 3, reading.so2) |
      put(base + 4, 4, reading.nh3) |
      put(base + 5, 5, reading.co) |
      put(base + 6, 6, reading.o3);
    if (measured === 0) malformed = true;
  }
  return { horizon, malformed, plain: !implausible };
}

/**
 * `averagedConcentrationsAt` over a grid: the 24-hour means and 8-hour maxima
 * of the windows ending at `slot` (null: too few readings), summed in the
 * same order, so the figures are the calculator's to the last bit.
 */
function averagesAt(values: Float64Array, slot: number): AveragedConcentrations {
  const averaged: AveragedConcentrations = {};
  for (let pollutant = 0; pollutant < POLLUTANT_COUNT; pollutant += 1) {
    let count = 0;
    let sum = 0;
    let maximum = Number.NEGATIVE_INFINITY;
    for (let index = Math.max(0, slot - WINDOW_HOURS[pollutant]! + 1); index <= slot; index += 1) {
      const value = values[index * POLLUTANT_COUNT + pollutant]!;
      // The calculator's reading test (finite, >= 0); missing hours are NaN.
      if (value >= 0) {
        count += 1;
        sum += value;
        if (value > maximum) maximum = value;
      }
    }
    averaged[POLLUTANTS[pollutant]!] =
      count < MIN_READINGS[pollutant]! ? null : IS_24H_MEAN[pollutant] ? sum / count : maximum;
  }
  return averaged;
}

/** The mean of a pollutant's newest three readings in GRID (whatever their hours), NaN without any. */
function meanOfNewestThree(pollutant: number): number {
  let sum = 0;
  let count = 0;
  for (let slot = SLOTS - 1; slot >= 0 && count < 3; slot -= 1) {
    const value = GRID[slot * POLLUTANT_COUNT + pollutant]!;
    if (!Number.isNaN(value)) {
      sum += value;
      count += 1;
    }
  }
  return count === 0 ? Number.NaN : sum / count;
}

/** The mean of a pollutant's readings in GRID at hours_before in [from, to] (inclusive), newest first; NaN without any. */
function meanBetween(pollutant: number, from: number, to: number): number {
  let sum = 0;
  let count = 0;
  for (let hoursBefore = from; hoursBefore <= Math.min(to, MAX_RECENT_HOURS); hoursBefore += 1) {
    const value = GRID[slotOf(hoursBefore) * POLLUTANT_COUNT + pollutant]!;
    if (!Number.isNaN(value)) {
      sum += value;
      count += 1;
    }
  }
  return count === 0 ? Number.NaN : sum / count;
}

interface Latest {
  readonly averaged: AveragedConcentrations;
  readonly aqi: AqiResult;
}

/** The AQI at the newest reading of the readings in GRID, and the averages it came from. */
function latestOf(horizon: number): Latest {
  const averaged = averagesAt(GRID, slotOf(horizon));
  return { averaged, aqi: computeAqi(averaged) };
}

/** The CPCB AQI at the newest reading (windows ending at it). */
export function aqiAtLatestReading(readings: readonly RecentHour[]): AqiResult {
  return latestOf(fillGrid(readings).horizon).aqi;
}

export interface WindowArithmetic {
  /** The forecast AQI (capped at 500). */
  readonly aqi: number;
  /** The averaged concentrations it came from (null: not enough data in the window). */
  readonly averaged: Readonly<Partial<Record<Pollutant, number | null>>>;
  /** False when the window arithmetic had no AQI and the AQI at the newest reading stood in. */
  readonly computed: boolean;
}

/** The window arithmetic of the readings in GRID. */
function arithmeticOf(horizon: number, latest: AqiResult): WindowArithmetic {
  const persistence = { aqi: latest.aqi ?? Number.NaN, averaged: {}, computed: false };
  if (horizon >= 24) return persistence;
  FILLED.set(GRID);
  for (let pollutant = 0; pollutant < POLLUTANT_COUNT; pollutant += 1) {
    const fill = meanOfNewestThree(pollutant);
    if (Number.isNaN(fill)) continue;
    for (let hoursBefore = 0; hoursBefore < horizon; hoursBefore += 1) {
      FILLED[slotOf(hoursBefore) * POLLUTANT_COUNT + pollutant] = fill;
    }
  }
  const averaged = averagesAt(FILLED, slotOf(0));
  const result = computeAqi(averaged);
  return result.aqi === null ? persistence : { aqi: result.aqi, averaged, computed: true };
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
  return arithmeticOf(fillGrid(readings).horizon, latest);
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
const LATEST_READING_HOUR_COLUMN = HISTORY_COLUMNS.indexOf("latest_reading_hour");

const orNaN = (value: number | null | undefined): number => (present(value) ? value : Number.NaN);

/**
 * One request's readings, checked and ready to score: what the service works
 * out once, when it checks a request, and reuses for the features and the
 * response.
 */
export interface PreparedReadings {
  /** How many readings were sent. */
  readonly readings: number;
  readonly horizon: number;
  /** The AQI at the newest reading (never null here). */
  readonly latest: AqiResult;
  readonly windowArithmetic: WindowArithmetic;
  /** HISTORY_COLUMNS, float64, NaN for missing; latest_reading_hour is left NaN (it depends on the predicted hour). */
  readonly columns: readonly number[];
}

/** Prepares the readings in GRID, whose AQI at the newest reading exists. */
function prepared(readings: number, horizon: number, latest: Latest): PreparedReadings {
  const arithmetic = arithmeticOf(horizon, latest.aqi);
  const columns = new Array<number>(HISTORY_COLUMNS.length).fill(Number.NaN);
  // HISTORY_COLUMNS: horizon_hours, latest_reading_hour (written with the predicted hour),
  // aqi_at_latest_reading, window_arithmetic_aqi, then the pollutants' columns.
  columns[0] = horizon;
  columns[2] = latest.aqi.aqi ?? Number.NaN;
  columns[WINDOW_ARITHMETIC_COLUMN] = arithmetic.aqi;
  let column = WINDOW_ARITHMETIC_COLUMN + 1;
  for (const field of READING_FIELDS) {
    const pollutant = POLLUTANTS.indexOf(POLLUTANT_OF_FIELD[field]);
    const name = POLLUTANTS[pollutant]!;
    const averaged = latest.averaged[name];
    const windowLength = WINDOW_HOURS[pollutant]!;
    columns[column] = orNaN(averaged);
    columns[column + 1] = present(averaged) ? subIndex(name, averaged) : Number.NaN;
    columns[column + 2] = orNaN(arithmetic.averaged[name]);
    columns[column + 3] = GRID[slotOf(horizon) * POLLUTANT_COUNT + pollutant]!;
    columns[column + 4] = meanOfNewestThree(pollutant);
    columns[column + 5] = meanBetween(pollutant, horizon + 3, horizon + 5);
    columns[column + 6] =
      horizon <= 24 ? GRID[slotOf(24) * POLLUTANT_COUNT + pollutant]! : Number.NaN;
    columns[column + 7] = meanBetween(
      pollutant,
      Math.max(windowLength, horizon),
      horizon + windowLength - 1,
    );
    column += HISTORY_PER_POLLUTANT.length;
  }
  return { readings, horizon, latest: latest.aqi, windowArithmetic: arithmetic, columns };
}

/** Readings that passed `recentHoursIssues`, prepared (throws when the AQI at the newest reading does not exist). */
export function prepareReadings(readings: readonly RecentHour[]): PreparedReadings {
  const { horizon } = fillGrid(readings);
  const latest = latestOf(horizon);
  if (latest.aqi.aqi === null) {
    throw new RangeError(`no CPCB AQI at the newest reading (${latest.aqi.invalidReason})`);
  }
  return prepared(readings.length, horizon, latest);
}

/**
 * Writes the history columns (HISTORY_COLUMNS order, NaN for missing) at
 * `offset` of `target`: a float64 row, or the model's float32 batch directly
 * (each value rounded to float32 as a copy of the float64 row would be).
 * `hour` is the predicted hour of the day.
 */
function writeHistoryColumns(
  target: { [index: number]: number },
  offset: number,
  readings: PreparedReadings,
  hour: number,
): void {
  const { columns } = readings;
  for (let column = 0; column < columns.length; column += 1) {
    target[offset + column] = columns[column]!;
  }
  target[offset + LATEST_READING_HOUR_COLUMN] = (((hour - readings.horizon) % 24) + 24) % 24;
}

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
  const ready = prepareReadings(readings);
  const columns = new Array<number>(HISTORY_COLUMNS.length).fill(Number.NaN);
  writeHistoryColumns(columns, 0, ready, hour);
  return {
    columns,
    horizon: ready.horizon,
    latest: ready.latest,
    windowArithmetic: ready.windowArithmetic,
  };
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

/** The issues of readings without a concentration and of repeated hours, in the order pydantic would list them. */
function malformedReadingIssues(
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
  return issues;
}

function tooFewReadingsIssue(
  readings: readonly RecentHour[],
  horizon: number,
  latest: AqiResult,
  loc: (string | number)[],
): FastApiValidationIssue {
  const windowEnd = horizon + 23;
  const pm25 = hoursWithData(readings, "pm25", horizon, windowEnd);
  const pm10 = hoursWithData(readings, "pm10", horizon, windowEnd);
  const counts = `hours ${horizon}-${windowEnd} before the predicted hour hold ${pm25} of PM2.5 and ${pm10} of PM10`;
  const withData = Object.entries(latest.subIndices).map(([pollutant]) => pollutant);
  const msg =
    latest.subIndices["PM2.5"] === undefined && latest.subIndices.PM10 === undefined
      ? `Value error, too few readings to compute the CPCB AQI at the newest reading (${horizon} hours before the predicted hour): its 24-hour averages need at least ${MIN_HOURS_FOR_24H_MEAN} of the 24 hours of PM2.5 or PM10; ${counts}`
      : `Value error, too few readings to compute the CPCB AQI at the newest reading (${horizon} hours before the predicted hour): it needs at least 3 pollutants with enough hours (24-hour averages ${MIN_HOURS_FOR_24H_MEAN} of 24 hours, CO and O3 ${MIN_HOURS_FOR_8H_MAX} of 8), one of them PM2.5 or PM10; ${withData.length === 0 ? "none has" : `only ${withData.join(", ")} ${withData.length === 1 ? "has" : "have"}`} enough`;
  return {
    type: "value_error",
    loc,
    msg,
    input: { newest_hours_before: horizon, pm25_hours: pm25, pm10_hours: pm10 },
    ctx: { error: "too few readings for a CPCB AQI at the newest reading" },
  };
}

/**
 * Readings prepared while the request body was checked (`prepareSentReadings`),
 * by list: checking the list again takes what was prepared then instead of
 * laying the readings out a second time.
 */
const preparedLists = new WeakMap<readonly SentReading[], PreparedReadings>();

/**
 * For the request body's check, which reads every reading anyway: whether
 * every concentration of `readings` is a number within its bounds, null or
 * absent (the schema's bounds; anything else is left to the schema). When it
 * is and the readings pass `checkRecentHours`, what that prepares is kept for
 * this list, so checking it again later costs nothing.
 */
export function prepareSentReadings(readings: readonly SentReading[]): boolean {
  const { horizon, malformed, plain } = fillGrid(readings);
  if (!plain) return false;
  if (malformed || horizon > MAX_HORIZON_HOURS) return true;
  const latest = latestOf(horizon);
  if (latest.aqi.aqi !== null) {
    preparedLists.set(readings, prepared(readings.length, horizon, latest));
  }
  return true;
}

export type RecentHoursCheck =
  | { readonly issues: FastApiValidationIssue[]; readonly prepared: null }
  | { readonly issues: readonly []; readonly prepared: PreparedReadings };

/**
 * What the field types cannot check about `recent_hours`: each hour once, a
 * concentration in every reading, the horizon, and enough data for the CPCB
 * AQI at the newest reading. `loc` is the field's location in the body.
 * Pydantic-shaped value errors, or (none) the readings prepared for scoring.
 */
export function checkRecentHours(
  readings: readonly RecentHour[],
  loc: (string | number)[],
): RecentHoursCheck {
  const known = preparedLists.get(readings);
  if (known) return { issues: [], prepared: known };
  const { horizon, malformed } = fillGrid(readings);
  if (malformed) return { issues: malformedReadingIssues(readings, loc), prepared: null };
  if (horizon > MAX_HORIZON_HOURS) {
    const issue: FastApiValidationIssue = {
      type: "value_error",
      loc,
      msg: `Value error, the newest reading is ${horizon} hours before the predicted hour; it must be 1 to ${MAX_HORIZON_HOURS} hours before (forecasts reach at most ${MAX_HORIZON_HOURS} hours ahead)`,
      input: horizon,
      ctx: { error: "newest reading too old", max_hours_before: MAX_HORIZON_HOURS },
    };
    return { issues: [issue], prepared: null };
  }
  const latest = latestOf(horizon);
  if (latest.aqi.aqi === null) {
    return { issues: [tooFewReadingsIssue(readings, horizon, latest.aqi, loc)], prepared: null };
  }
  return { issues: [], prepared: prepared(readings.length, horizon, latest) };
}

/** The issues of `checkRecentHours` alone (none: the readings can be scored). */
export function recentHoursIssues(
  readings: readonly RecentHour[],
  loc: (string | number)[],
): FastApiValidationIssue[] {
  return [...checkRecentHours(readings, loc).issues];
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

/**
 * Row-major float32 data [inputs.length, HISTORY_FEATURE_COUNT] for the
 * recent-hours model, written in place. `prepared[i]`, when given, is input
 * i's readings as `checkRecentHours` prepared them (else they are prepared here).
 */
export function encodeHistoryBatch(
  inputs: readonly FeatureInput[],
  spec: PreprocessingSpec,
  prepared: readonly (PreparedReadings | null | undefined)[] = [],
): Float32Array {
  const tensor = new Float32Array(inputs.length * HISTORY_FEATURE_COUNT);
  inputs.forEach((input, rowIndex) => {
    const readings = input.recent_hours;
    if (!readings || readings.length === 0) {
      throw new RangeError("the recent-hours variant needs recent_hours");
    }
    const offset = rowIndex * HISTORY_FEATURE_COUNT;
    writeFeatures(tensor, offset, input, spec);
    writeHistoryColumns(
      tensor,
      offset + FEATURE_COUNT,
      prepared[rowIndex] ?? prepareReadings(readings),
      input.hour,
    );
  });
  return tensor;
}
