/**
 * The one feature preprocessing definition of the AQI model.
 *
 * The trainer (workers/aqi/training/prepare.ts) builds its feature matrix by
 * calling `encodeFeatures` from this module, and the Worker calls the same
 * function on request bodies, so the two cannot drift apart. What depends on
 * the training data (the station table, the features that had no data) is a
 * `PreprocessingSpec`, written by the trainer into the model card
 * (`models/aqi-<version>.json`, field `preprocessing`) and read back by the
 * service; `assertSpecMatchesCode` refuses a card written for another layout.
 *
 * Why there is no scaling: the model is a tree ensemble, whose splits are
 * invariant to any monotone rescaling of a column, so standardising would add
 * parameters that can drift without changing a prediction. Units are fixed
 * instead (degrees C, %, km/h, km), and the trainer converts its sources to
 * them (CPCB wind speed is m/s and is multiplied by 3.6 on ingestion).
 */

import type { RecentHour } from "./recent-hours.ts";

export const SEASONS = ["Winter", "Summer", "Monsoon", "Post-Monsoon"] as const;
export type Season = (typeof SEASONS)[number];

/** Monday first: day_of_week is encoded as its index here (Monday = 0 ... Sunday = 6). */
export const DAYS_OF_WEEK = [
  "Monday",
  "Tuesday",
  "Wednesday",
  "Thursday",
  "Friday",
  "Saturday",
  "Sunday",
] as const;
export type DayOfWeek = (typeof DAYS_OF_WEEK)[number];

/**
 * India Meteorological Department seasons, used by the trainer to label
 * sources that carry no season (the CPCB files): winter December-February,
 * summer (pre-monsoon) March-May, monsoon June-September, post-monsoon
 * October-November. The service takes the season the client sends.
 */
export function seasonForMonth(month: number): Season {
  if (!Number.isInteger(month) || month < 1 || month > 12) {
    throw new RangeError(`month must be an integer 1..12, got ${month}`);
  }
  if (month === 12 || month <= 2) return "Winter";
  if (month <= 5) return "Summer";
  if (month <= 9) return "Monsoon";
  return "Post-Monsoon";
}

/**
 * Column order of the model's input tensor `input` [N, FEATURE_NAMES.length] (float32).
 *
 * Every request field feeds a column except `day` (day of the month), which
 * the service still validates: with it, trees memorise dates (pollution
 * episodes of particular days) and lose out of period. The trainer re-runs
 * the blocked cross-validation with `day` added and reports the difference in
 * the model card. `station`, `latitude` and `longitude` feed the two station
 * columns through `resolveStation`.
 */
export const FEATURE_NAMES = [
  "station_latitude",
  "station_longitude",
  "season_winter",
  "season_summer",
  "season_monsoon",
  "season_post_monsoon",
  "temperature_c",
  "humidity_pct",
  "wind_speed_kmh",
  "visibility_km",
  "month",
  "hour",
  "day_of_week",
  "is_weekend",
] as const;
export type FeatureName = (typeof FEATURE_NAMES)[number];
export const FEATURE_COUNT = FEATURE_NAMES.length;

/** Bump whenever FEATURE_NAMES or the meaning of a column changes. */
export const FEATURE_LAYOUT_VERSION = 1;

/** The request fields the model reads; weather may be null in training data (missing reading). */
export interface FeatureInput {
  readonly station: string;
  readonly season: Season;
  readonly latitude: number;
  readonly longitude: number;
  readonly temperature: number | null;
  readonly humidity: number | null;
  /** km/h */
  readonly wind_speed: number | null;
  /** km */
  readonly visibility: number | null;
  readonly day: number;
  readonly month: number;
  readonly hour: number;
  readonly day_of_week: DayOfWeek;
  readonly is_weekend: 0 | 1;
  /** The station's latest CPCB AQI and how many hours before the predicted hour it was observed (both or neither). */
  readonly recent_aqi?: number | null;
  readonly recent_aqi_age_hours?: number | null;
  /** The station's last hourly readings (the recent-hours variant). */
  readonly recent_hours?: readonly RecentHour[] | null;
}

/**
 * The recent-reading variant's input: the weather-only columns, then the
 * reading and its age (hours). The model card (`preprocessing.readingColumns`)
 * must name exactly these.
 */
export const READING_COLUMNS = ["recent_aqi", "recent_aqi_age_hours"] as const;
export const READING_FEATURE_NAMES = [...FEATURE_NAMES, ...READING_COLUMNS] as const;
export const READING_FEATURE_COUNT = READING_FEATURE_NAMES.length;

export interface TrainingStation {
  /** Canonical name, e.g. "Lodhi Road, Delhi". */
  readonly name: string;
  readonly latitude: number;
  readonly longitude: number;
  /** Other names that mean the same station (CPCB id, agency suffix, ...). */
  readonly aliases: readonly string[];
}

export interface PreprocessingSpec {
  readonly featureLayoutVersion: number;
  readonly featureNames: readonly string[];
  /** Stations the model was trained on; every request is resolved to one of them. */
  readonly stations: readonly TrainingStation[];
  /**
   * Features that had no data at all in training (visibility, in the CPCB
   * files). They are encoded as missing (NaN) whatever the request says, so
   * serving feeds the model exactly what it was trained on; the model has no
   * split on them.
   */
  readonly featuresMissingInTraining: readonly FeatureName[];
}

/** Throws if a spec (from a model card) was written for a different feature layout than this code. */
export function assertSpecMatchesCode(spec: PreprocessingSpec): void {
  if (spec.featureLayoutVersion !== FEATURE_LAYOUT_VERSION) {
    throw new Error(
      `model card feature layout ${spec.featureLayoutVersion} != code layout ${FEATURE_LAYOUT_VERSION}`,
    );
  }
  if (
    spec.featureNames.length !== FEATURE_NAMES.length ||
    spec.featureNames.some((name, i) => name !== FEATURE_NAMES[i])
  ) {
    throw new Error(
      `model card feature names [${spec.featureNames.join(", ")}] differ from code [${FEATURE_NAMES.join(", ")}]`,
    );
  }
  if (spec.stations.length === 0) {
    throw new Error("model card lists no training stations");
  }
  for (const name of spec.featuresMissingInTraining) {
    if (!(FEATURE_NAMES as readonly string[]).includes(name)) {
      throw new Error(`model card marks unknown feature ${name} as missing in training`);
    }
  }
}

/** Case-, accent- and punctuation-insensitive key: "Lodhi Road, Delhi - IITM" -> "lodhi road delhi iitm". */
export function normaliseStationName(name: string): string {
  return name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, " ")
    .trim();
}

const EARTH_RADIUS_KM = 6371.0088;

export function haversineKm(
  latitudeA: number,
  longitudeA: number,
  latitudeB: number,
  longitudeB: number,
): number {
  const toRadians = Math.PI / 180;
  const dLatitude = (latitudeB - latitudeA) * toRadians;
  const dLongitude = (longitudeB - longitudeA) * toRadians;
  const a =
    Math.sin(dLatitude / 2) ** 2 +
    Math.cos(latitudeA * toRadians) *
      Math.cos(latitudeB * toRadians) *
      Math.sin(dLongitude / 2) ** 2;
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(a)));
}

export interface StationResolution {
  readonly stationIndex: number;
  readonly station: TrainingStation;
  /** "name": the request named a training station; "nearest": unseen name, nearest training station by distance. */
  readonly matchedBy: "name" | "nearest";
  /** Great-circle distance from the request's coordinates to the resolved station. */
  readonly distanceKm: number;
}

/**
 * Each training station's names (its own and its aliases), normalised once
 * per station table (a model card's, fixed once loaded): normalising them
 * again for every request row cost more than the rest of the row.
 */
const normalisedNames = new WeakMap<readonly TrainingStation[], readonly (readonly string[])[]>();

function normalisedNamesOf(stations: readonly TrainingStation[]): readonly (readonly string[])[] {
  let names = normalisedNames.get(stations);
  if (!names) {
    names = stations.map((station) => [station.name, ...station.aliases].map(normaliseStationName));
    normalisedNames.set(stations, names);
  }
  return names;
}

/**
 * Maps a request's station to a training station. A known name (or alias)
 * wins; any other station is scored as the training station nearest to its
 * coordinates. The model sees location only through the resolved station's
 * coordinates: with few training sites, raw coordinates of an unseen site
 * would fall on arbitrary sides of splits placed between the training sites
 * (one axis saying "site A", the other "site B"); snapping keeps the
 * assignment a consistent nearest-site (Voronoi) rule.
 */
export function resolveStation(
  stationName: string,
  latitude: number,
  longitude: number,
  stations: readonly TrainingStation[],
): StationResolution {
  if (stations.length === 0) {
    throw new Error("no training stations");
  }
  const key = normaliseStationName(stationName);
  const names = normalisedNamesOf(stations);
  for (const [index, station] of stations.entries()) {
    if (key.length > 0 && names[index]!.includes(key)) {
      return {
        stationIndex: index,
        station,
        matchedBy: "name",
        distanceKm: haversineKm(latitude, longitude, station.latitude, station.longitude),
      };
    }
  }
  let nearest: StationResolution | null = null;
  for (const [index, station] of stations.entries()) {
    const distance = haversineKm(latitude, longitude, station.latitude, station.longitude);
    if (nearest === null || distance < nearest.distanceKm) {
      nearest = { stationIndex: index, station, matchedBy: "nearest", distanceKm: distance };
    }
  }
  if (nearest === null) {
    throw new Error("no training stations");
  }
  return nearest;
}

function requireIntegerIn(name: string, value: number, low: number, high: number): number {
  if (!Number.isInteger(value) || value < low || value > high) {
    throw new RangeError(`${name} must be an integer ${low}..${high}, got ${value}`);
  }
  return value;
}

function numberOrMissing(value: number | null): number {
  return value === null || !Number.isFinite(value) ? Number.NaN : value;
}

/**
 * Writes one feature row (FEATURE_NAMES order, NaN for missing) at `offset` of
 * `target`: a float64 row, or a model's float32 batch directly (each value
 * rounded to float32 as a copy of the float64 row would be).
 */
export function writeFeatures(
  target: { [index: number]: number },
  offset: number,
  input: FeatureInput,
  spec: PreprocessingSpec,
): void {
  const seasonIndex = SEASONS.indexOf(input.season);
  if (seasonIndex < 0) {
    throw new RangeError(`unknown season ${String(input.season)}`);
  }
  const dayOfWeekIndex = DAYS_OF_WEEK.indexOf(input.day_of_week);
  if (dayOfWeekIndex < 0) {
    throw new RangeError(`unknown day_of_week ${String(input.day_of_week)}`);
  }
  requireIntegerIn("day", input.day, 1, 31);
  const resolution = resolveStation(input.station, input.latitude, input.longitude, spec.stations);
  target[offset] = resolution.station.latitude;
  target[offset + 1] = resolution.station.longitude;
  target[offset + 2] = seasonIndex === 0 ? 1 : 0;
  target[offset + 3] = seasonIndex === 1 ? 1 : 0;
  target[offset + 4] = seasonIndex === 2 ? 1 : 0;
  target[offset + 5] = seasonIndex === 3 ? 1 : 0;
  target[offset + 6] = numberOrMissing(input.temperature);
  target[offset + 7] = numberOrMissing(input.humidity);
  target[offset + 8] = numberOrMissing(input.wind_speed);
  target[offset + 9] = numberOrMissing(input.visibility);
  target[offset + 10] = requireIntegerIn("month", input.month, 1, 12);
  target[offset + 11] = requireIntegerIn("hour", input.hour, 0, 23);
  target[offset + 12] = dayOfWeekIndex;
  target[offset + 13] = input.is_weekend === 1 ? 1 : 0;
  for (const name of spec.featuresMissingInTraining) {
    target[offset + FEATURE_NAMES.indexOf(name)] = Number.NaN;
  }
}

/**
 * One feature row (float64, NaN for missing), in FEATURE_NAMES order. The
 * model input is this row cast to float32 (`encodeBatch`).
 */
export function encodeFeatures(input: FeatureInput, spec: PreprocessingSpec): number[] {
  const row = new Array<number>(FEATURE_COUNT).fill(Number.NaN);
  writeFeatures(row, 0, input, spec);
  return row;
}

/** One row of the recent-reading variant (READING_FEATURE_NAMES order); throws without a reading. */
export function encodeReadingFeatures(input: FeatureInput, spec: PreprocessingSpec): number[] {
  const recent = input.recent_aqi;
  const age = input.recent_aqi_age_hours;
  if (typeof recent !== "number" || typeof age !== "number") {
    throw new RangeError("the recent-reading variant needs recent_aqi and recent_aqi_age_hours");
  }
  return [...encodeFeatures(input, spec), recent, age];
}

/** Row-major float32 data [inputs.length, READING_FEATURE_COUNT] for the recent-reading model. */
export function encodeReadingBatch(
  inputs: readonly FeatureInput[],
  spec: PreprocessingSpec,
): Float32Array {
  const tensor = new Float32Array(inputs.length * READING_FEATURE_COUNT);
  inputs.forEach((input, rowIndex) => {
    tensor.set(encodeReadingFeatures(input, spec), rowIndex * READING_FEATURE_COUNT);
  });
  return tensor;
}

/** Row-major float32 tensor data [inputs.length, FEATURE_COUNT] for the ONNX input `input`, written in place. */
export function encodeBatch(
  inputs: readonly FeatureInput[],
  spec: PreprocessingSpec,
): Float32Array {
  const tensor = new Float32Array(inputs.length * FEATURE_COUNT);
  inputs.forEach((input, rowIndex) => {
    writeFeatures(tensor, rowIndex * FEATURE_COUNT, input, spec);
  });
  return tensor;
}
