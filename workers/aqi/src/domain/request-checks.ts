/**
 * What a prediction request must satisfy beyond each field's own type and
 * range: the checks that look at several fields together, or at the model's
 * training stations. Each returns FastAPI/pydantic-shaped issues (`loc`
 * given by the caller, so a batch item reports ["body", "requests", i]).
 */
import type { FastApiValidationIssue } from "@edge-platform/shared/http/error-shapes/fastapi";
import { haversineKm, type Season, seasonForMonth, type TrainingStation } from "./features.ts";

/**
 * Physical bounds of the numeric inputs (inclusive), enforced by the request
 * schema as pydantic `ge`/`le` constraints. Wide enough for any real reading
 * in Delhi (records: -2.2 C to 49.9 C; squalls about 100 km/h), narrow enough
 * to refuse values no instrument reports.
 */
export const INPUT_BOUNDS = {
  latitude: { ge: -90, le: 90 },
  longitude: { ge: -180, le: 180 },
  /** Degrees Celsius: the coldest and hottest air temperatures measured on Earth, rounded outwards. */
  temperature: { ge: -90, le: 60 },
  humidity: { ge: 0, le: 100 },
  /** km/h: the strongest sustained surface winds measured (tropical cyclones) are below 350 km/h. */
  wind_speed: { ge: 0, le: 350 },
  /** km: meteorological visibility is reported up to a few tens of km; 100 km is a generous ceiling. */
  visibility: { ge: 0, le: 100 },
  /** The national AQI scale tops out at 500; CPCB's uncapped sub-index rarely passes 1000. */
  recent_aqi: { ge: 0, le: 1000 },
  /** Hours before the predicted hour the reading was observed. */
  recent_aqi_age_hours: { ge: 0.5, le: 72 },
} as const;

/** A request farther than this from every training station is outside the service area (Delhi). */
export const SERVICE_RADIUS_KM = 50;

export interface ReadingFields {
  readonly recent_aqi?: number | null | undefined;
  readonly recent_aqi_age_hours?: number | null | undefined;
}

export function hasReading(request: ReadingFields): boolean {
  return typeof request.recent_aqi === "number" && typeof request.recent_aqi_age_hours === "number";
}

/** `recent_aqi` and `recent_aqi_age_hours` come together or not at all (pydantic model-validator style). */
export function readingPairIssue(
  request: ReadingFields,
  loc: (string | number)[],
): FastApiValidationIssue | null {
  const recent = request.recent_aqi !== undefined && request.recent_aqi !== null;
  const age = request.recent_aqi_age_hours !== undefined && request.recent_aqi_age_hours !== null;
  if (recent === age) return null;
  const [given, absent] = recent
    ? ["recent_aqi", "recent_aqi_age_hours"]
    : ["recent_aqi_age_hours", "recent_aqi"];
  return {
    type: "value_error",
    loc,
    msg: `Value error, ${given} was sent without ${absent}: send both (the latest AQI reading and how many hours before the predicted hour it was observed) or neither`,
    input: request,
    ctx: { error: `${absent} is required when ${given} is given` },
  };
}

export function hasRecentHours(request: {
  readonly recent_hours?: readonly unknown[] | null | undefined;
}): boolean {
  return Array.isArray(request.recent_hours) && request.recent_hours.length > 0;
}

/** `recent_hours` replaces `recent_aqi` and its age: a request sends one or the other. */
export function recentHoursWithReadingIssue(
  request: ReadingFields & { readonly recent_hours?: readonly unknown[] | null | undefined },
  loc: (string | number)[],
): FastApiValidationIssue | null {
  const reading = [request.recent_aqi, request.recent_aqi_age_hours].some(
    (value) => value !== undefined && value !== null,
  );
  if (!reading || !hasRecentHours(request)) return null;
  return {
    type: "value_error",
    loc,
    msg: "Value error, send either recent_hours (the station's hourly readings) or recent_aqi with recent_aqi_age_hours (its latest AQI), not both",
    input: {
      recent_aqi: request.recent_aqi ?? null,
      recent_aqi_age_hours: request.recent_aqi_age_hours ?? null,
      recent_hours: `${request.recent_hours?.length} readings`,
    },
    ctx: { error: "recent_hours and recent_aqi are exclusive" },
  };
}

/** Distance from the coordinates to the nearest training station. */
export function distanceToNearestStationKm(
  latitude: number,
  longitude: number,
  stations: readonly TrainingStation[],
): number {
  return Math.min(
    ...stations.map((station) =>
      haversineKm(latitude, longitude, station.latitude, station.longitude),
    ),
  );
}

/** The coordinates must lie within SERVICE_RADIUS_KM of a training station, whatever the station's name. */
export function serviceAreaIssue(
  request: { readonly latitude: number; readonly longitude: number },
  stations: readonly TrainingStation[],
  loc: (string | number)[],
): FastApiValidationIssue | null {
  const distance = distanceToNearestStationKm(request.latitude, request.longitude, stations);
  if (distance <= SERVICE_RADIUS_KM) return null;
  const names = stations.map((station) => station.name).join(", ");
  return {
    type: "value_error",
    loc,
    msg: `Value error, the service covers Delhi: (${request.latitude}, ${request.longitude}) is ${Math.round(distance)} km from the nearest station the model was trained on (${names}); the limit is ${SERVICE_RADIUS_KM} km`,
    input: { latitude: request.latitude, longitude: request.longitude },
    ctx: { error: "outside the service area", max_distance_km: SERVICE_RADIUS_KM },
  };
}

export interface SeasonDecision {
  /** The season the model is given: always the one of the request's month. */
  readonly season: Season;
  /** True when the request's season disagreed with its month and was replaced. */
  readonly derivedFromMonth: boolean;
  /** Said in the response when the season was replaced. */
  readonly note: string | null;
}

/**
 * The model learned seasons as labels of months (IMD: winter Dec-Feb, summer
 * Mar-May, monsoon Jun-Sep, post-monsoon Oct-Nov), so a season that
 * contradicts the month is a combination it never saw. The month is the more
 * precise field: the season is derived from it, and the response says so.
 */
export function decideSeason(requested: Season, month: number): SeasonDecision {
  const season = seasonForMonth(month);
  if (season === requested) return { season, derivedFromMonth: false, note: null };
  return {
    season,
    derivedFromMonth: true,
    note: `season '${requested}' does not match month ${month}; scored as '${season}', the season of that month (IMD: Winter Dec-Feb, Summer Mar-May, Monsoon Jun-Sep, Post-Monsoon Oct-Nov)`,
  };
}
