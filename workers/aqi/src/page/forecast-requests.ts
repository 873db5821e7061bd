/**
 * A forecast of the next hours as the API knows it: one prediction request
 * per hour ahead, all in one batch. Each request carries the same readings,
 * moved one hour further back per hour ahead (the newest reading's
 * `hours_before` is the horizon), the calendar of its own hour, and the
 * weather the person expects. Form values stay the strings they typed, so
 * the API's validation reads them exactly as it would read them from a client.
 */
import { DAYS_OF_WEEK, seasonForMonth, type TrainingStation } from "../domain/features.ts";
import { MAX_HORIZON_HOURS, MAX_RECENT_HOURS } from "../domain/history.ts";

const HOUR_MS = 3_600_000;

export const WEATHER_FIELDS = ["temperature", "humidity", "wind_speed", "visibility"] as const;
export type WeatherField = (typeof WEATHER_FIELDS)[number];

export interface ForecastInputs {
  readonly station: TrainingStation;
  /** "YYYY-MM-DDTHH:00", wall-clock time of the newest reading's start. */
  readonly newestHourStart: string;
  /** How many hours ahead, 1 to MAX_HORIZON_HOURS. */
  readonly hours: number;
  /** As typed; a blank field is left out of the request. */
  readonly weather: Readonly<Record<WeatherField, string>>;
  /** The 1-hour-ahead readings (newest hours_before 1), or whatever JSON was given. */
  readonly recentHours: unknown;
}

export interface ForecastBatch {
  /** The body of POST /v1/predict/batch. */
  readonly body: { requests: Record<string, unknown>[] };
  /** Per request: which of the given readings each of its readings is. */
  readonly readingIndex: number[][];
  /** Per request: start of its hour, "YYYY-MM-DDTHH:00". */
  readonly hourStarts: string[];
}

/** Calendar fields of the hour starting at `ms` (wall-clock time), as the training rows have them. */
export function calendarOf(ms: number) {
  const date = new Date(ms);
  const month = date.getUTCMonth() + 1;
  const weekday = (date.getUTCDay() + 6) % 7;
  return {
    season: seasonForMonth(month),
    day: date.getUTCDate(),
    month,
    hour: date.getUTCHours(),
    day_of_week: DAYS_OF_WEEK[weekday]!,
    is_weekend: weekday >= 5 ? 1 : 0,
  };
}

function shiftable(readings: unknown): readings is Record<string, unknown>[] {
  return (
    Array.isArray(readings) &&
    readings.every(
      (reading) =>
        reading !== null &&
        typeof reading === "object" &&
        typeof (reading as Record<string, unknown>).hours_before === "number",
    )
  );
}

/** The readings of the request `ahead` hours ahead: moved back, and those the API would find too old left out. */
function readingsAhead(readings: unknown, ahead: number): { readings: unknown; index: number[] } {
  if (!shiftable(readings)) {
    const count = Array.isArray(readings) ? readings.length : 0;
    return { readings, index: Array.from({ length: count }, (_, i) => i) };
  }
  const moved: Record<string, unknown>[] = [];
  const index: number[] = [];
  readings.forEach((reading, i) => {
    const hoursBefore = (reading.hours_before as number) + ahead - 1;
    if (hoursBefore > MAX_RECENT_HOURS) return;
    moved.push({ ...reading, hours_before: hoursBefore });
    index.push(i);
  });
  return { readings: moved, index };
}

export function forecastBatch(inputs: ForecastInputs): ForecastBatch {
  if (!Number.isInteger(inputs.hours) || inputs.hours < 1 || inputs.hours > MAX_HORIZON_HOURS) {
    throw new RangeError(`hours must be 1 to ${MAX_HORIZON_HOURS}`);
  }
  const newest = Date.parse(`${inputs.newestHourStart}:00Z`);
  if (Number.isNaN(newest)) throw new RangeError(`not an hour: ${inputs.newestHourStart}`);
  const weather: Record<string, string> = {};
  for (const field of WEATHER_FIELDS) {
    const value = inputs.weather[field].trim();
    if (value !== "") weather[field] = value;
  }
  const requests: Record<string, unknown>[] = [];
  const readingIndex: number[][] = [];
  const hourStarts: string[] = [];
  for (let ahead = 1; ahead <= inputs.hours; ahead += 1) {
    const ms = newest + ahead * HOUR_MS;
    const { readings, index } = readingsAhead(inputs.recentHours, ahead);
    const { season, ...calendar } = calendarOf(ms);
    requests.push({
      station: inputs.station.name,
      season,
      latitude: inputs.station.latitude,
      longitude: inputs.station.longitude,
      ...weather,
      ...calendar,
      recent_hours: readings,
    });
    readingIndex.push(index);
    hourStarts.push(new Date(ms).toISOString().slice(0, 16));
  }
  return { body: { requests }, readingIndex, hourStarts };
}
