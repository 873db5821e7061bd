/**
 * Wire schemas of the AQI API. The request schemas validate (through the
 * pydantic-style field helpers) and document; the response schemas document
 * and type the handlers.
 */
import { z } from "@hono/zod-openapi";
import { AQI_CATEGORIES } from "../domain/categories.ts";
import { DAYS_OF_WEEK, SEASONS } from "../domain/features.ts";
import { CONCENTRATION_BOUNDS, MAX_HORIZON_HOURS, MAX_RECENT_HOURS } from "../domain/history.ts";
import { READING_FIELDS } from "../domain/recent-hours.ts";
import { INPUT_BOUNDS, SERVICE_RADIUS_KM } from "../domain/request-checks.ts";
import {
  floatField,
  intField,
  listField,
  modelSchema,
  optionalFloatField,
  optionalListField,
  stringField,
  stringLiteralField,
  zeroOrOneField,
} from "../validation/pydantic.ts";

export const MAX_BATCH_SIZE = 100;

const POLLUTANT_DOC: Record<(typeof READING_FIELDS)[number], string> = {
  pm25: "PM2.5, ug/m3",
  pm10: "PM10, ug/m3",
  no2: "NO2, ug/m3",
  so2: "SO2, ug/m3",
  nh3: "NH3, ug/m3",
  co: "CO, mg/m3",
  o3: "Ozone, ug/m3",
};

/** One hourly reading of the station (the hour's mean concentrations, as CPCB publishes them). */
export const RecentHour = modelSchema(
  "RecentHour",
  {
    hours_before: intField(
      { ge: 1, le: MAX_RECENT_HOURS },
      {
        description: `How many hours before the predicted hour this reading's hour ends (1 to ${MAX_RECENT_HOURS}); unique within recent_hours`,
        example: 2,
      },
    ),
    ...(Object.fromEntries(
      READING_FIELDS.map((field) => [
        field,
        optionalFloatField(CONCENTRATION_BOUNDS[field], {
          description: `Optional: ${POLLUTANT_DOC[field]} (${CONCENTRATION_BOUNDS[field].ge} to ${CONCENTRATION_BOUNDS[field].le}); at least one concentration per reading`,
        }),
      ]),
    ) as Record<(typeof READING_FIELDS)[number], ReturnType<typeof optionalFloatField>>),
  },
  { description: "The station's mean concentrations over one hour" },
);

/** Field order is the declaration order pydantic reports errors in. */
export const PredictionRequest = modelSchema(
  "PredictionRequest",
  {
    station: stringField({
      description:
        "Station name. A name the model was not trained on is scored as the training station nearest to latitude/longitude (see `resolved_station`).",
      example: "Lodhi Road, Delhi - IITM",
    }),
    season: stringLiteralField(SEASONS, {
      description: "Exact, case-sensitive",
      example: "Winter",
    }),
    latitude: floatField(INPUT_BOUNDS.latitude, {
      description: `Degrees. The service covers Delhi: coordinates more than ${SERVICE_RADIUS_KM} km from every training station are refused (422)`,
      example: 28.5918,
    }),
    longitude: floatField(INPUT_BOUNDS.longitude, { description: "Degrees", example: 77.2273 }),
    temperature: floatField(INPUT_BOUNDS.temperature, {
      description: "Degrees Celsius",
      example: 14.5,
    }),
    humidity: floatField(INPUT_BOUNDS.humidity, { description: "Percent", example: 78 }),
    wind_speed: floatField(INPUT_BOUNDS.wind_speed, { description: "km/h", example: 4.2 }),
    visibility: floatField(INPUT_BOUNDS.visibility, {
      description: "km. Validated, but not a model input: no training source recorded it",
      example: 2.5,
    }),
    day: intField({ ge: 1, le: 31 }, { description: "Day of the month", example: 15 }),
    month: intField(
      { ge: 1, le: 12 },
      {
        description:
          "The season the model uses is this month's (IMD); a `season` that disagrees is replaced and the response says so",
        example: 1,
      },
    ),
    hour: intField({ ge: 0, le: 23 }, { example: 8 }),
    day_of_week: stringLiteralField(DAYS_OF_WEEK, {
      description: "Full English day name, exact and case-sensitive",
      example: "Monday",
    }),
    is_weekend: zeroOrOneField({ example: 0 }),
    recent_aqi: optionalFloatField(INPUT_BOUNDS.recent_aqi, {
      description:
        "Optional: the station's latest national (CPCB) AQI. With recent_aqi_age_hours (both or neither) the recent-reading model answers",
      example: 287,
    }),
    recent_aqi_age_hours: optionalFloatField(INPUT_BOUNDS.recent_aqi_age_hours, {
      description:
        "Optional: how many hours before the predicted hour recent_aqi was observed (0.5 to 72)",
      example: 3,
    }),
    recent_hours: optionalListField(RecentHour, 1, MAX_RECENT_HOURS, {
      description: `Optional: the station's hourly readings of up to ${MAX_RECENT_HOURS} hours before the predicted hour. The newest reading must be 1 to ${MAX_HORIZON_HOURS} hours before it (the horizon), and the readings must give a CPCB AQI at the newest reading (24-hour averages need 16 of 24 hours of PM2.5 or PM10; at least 3 pollutants). With it the recent-hours model answers; not together with recent_aqi`,
    }),
  },
  {
    description:
      "Weather and calendar at a station. Numbers may be sent as numeric strings; unknown fields are ignored.",
  },
);
export type PredictionRequest = z.infer<typeof PredictionRequest>;

export const BatchPredictionRequest = modelSchema("BatchPredictionRequest", {
  requests: listField(PredictionRequest, 1, MAX_BATCH_SIZE, {
    description: `1 to ${MAX_BATCH_SIZE} requests, scored together`,
  }),
});

const categoryLabels = AQI_CATEGORIES.map((category) => category.label) as [string, ...string[]];

export const PredictionResponse = z
  .object({
    aqi_predicted: z.number().openapi({
      description: "Model output on the AQI scale, rounded to 2 decimals, not clipped",
      example: 212.37,
    }),
    aqi_rounded: z.number().int().min(0).max(500).openapi({
      description: "aqi_predicted rounded half to even, clipped to 0..500",
      example: 212,
    }),
    category: z.enum(categoryLabels).openapi({
      description: "National (CPCB) category of aqi_rounded",
      example: "Poor",
    }),
    aqi_interval: z
      .object({
        low: z.number().openapi({ example: 121.4 }),
        high: z.number().openapi({ example: 318.9 }),
      })
      .openapi({
        description:
          "80% prediction interval (calibrated 0.1 and 0.9 quantile models), clipped to 0..500 and containing the point",
      }),
    model_version: z.string().openapi({
      description:
        "The model that answered: the weather-only model, the recent-reading model (aqi-reading-...) when recent_aqi was sent, or the recent-hours model (aqi-history-...) when recent_hours was sent",
      example: "aqi-1.0.0",
    }),
    inputs_used: z
      .object({
        variant: z.enum(["weather-only", "recent-reading", "recent-hours"]),
        recent_aqi: z.number().nullable(),
        recent_aqi_age_hours: z.number().nullable(),
        season: z.enum(SEASONS),
        season_derived_from_month: z.boolean(),
        recent_hours: z
          .object({
            readings: z.number().int().openapi({ description: "How many readings were sent" }),
            horizon_hours: z.number().int().openapi({
              description: "hours_before of the newest reading: how far ahead the forecast reaches",
            }),
            window_arithmetic_aqi: z.number().openapi({
              description:
                "The forecast without learning the model starts from: the predicted hour's windows with their measured hours kept and the unknown newest hours filled with each pollutant's mean of its newest three readings (from 24 h ahead: the AQI at the newest reading); 2 decimals",
            }),
          })
          .optional()
          .openapi({ description: "Only when recent_hours was sent" }),
      })
      .openapi({ description: "What the model was given" }),
    aqi_at_latest_reading: z
      .object({
        aqi: z.number().openapi({
          description:
            "National (CPCB) AQI at the newest reading: sub-indices of the 24-hour means and 8-hour maxima ending at it, the largest, capped at 500; 2 decimals",
          example: 287.5,
        }),
        aqi_rounded: z.number().int().min(0).max(500),
        category: z.enum(categoryLabels),
        dominant_pollutant: z.enum(["PM2.5", "PM10", "NO2", "SO2", "NH3", "CO", "O3"]),
        hours_before: z.number().int().openapi({ example: 2 }),
      })
      .optional()
      .openapi({ description: "Only when recent_hours was sent" }),
    notes: z.array(z.string()).openapi({
      description: "Adjustments made to the request (e.g. a season replaced by the month's)",
    }),
    prediction_timestamp: z.string().openapi({
      description: "UTC, ISO 8601 with milliseconds (JavaScript toISOString)",
      example: "2026-11-21T08:00:00.000Z",
    }),
    resolved_station: z
      .object({
        name: z.string().openapi({ example: "Lodhi Road, Delhi" }),
        matched_by: z.enum(["name", "nearest"]),
        distance_km: z.number().openapi({ example: 0.4 }),
      })
      .openapi({
        description:
          "The training station whose location features scored this request: matched by name, or the nearest one to the request's coordinates for a station the model has not seen",
      }),
  })
  .openapi("PredictionResponse");
export type PredictionResponse = z.infer<typeof PredictionResponse>;

export const BatchPredictionResponse = z
  .object({
    predictions: z.array(PredictionResponse),
    count: z.number().int(),
  })
  .openapi("BatchPredictionResponse");

export const HealthResponse = z
  .object({
    status: z.enum(["healthy", "degraded"]),
    model_loaded: z.boolean(),
    timestamp: z.string(),
  })
  .openapi("HealthResponse");

export const ModelInfoResponse = z
  .object({
    model_version: z.string().openapi({ example: "aqi-1.0.0" }),
    model_path: z.string().openapi({ description: "The artifact, relative to the repository" }),
    dataset_config: z.string().openapi({
      description:
        "The model card: preprocessing parameters, data provenance, metrics (relative to the repository)",
    }),
    aqi_categories: z.record(z.string(), z.string()).openapi({
      example: {
        "0-50": "Good",
        "51-100": "Satisfactory",
        "101-200": "Moderate",
        "201-300": "Poor",
        "301-400": "Very Poor",
        "401-500": "Severe",
      },
    }),
    features: z.array(z.string()).openapi({ description: "Model input columns, in order" }),
    training_stations: z.array(z.string()),
    session_create_ms: z.number().openapi({
      description: "Time this isolate took to create its onnxruntime-web session (once, lazily)",
    }),
    reading_model_version: z.string().nullable().openapi({
      description: "The model answering requests that carry recent_aqi (null when none is loaded)",
      example: "aqi-reading-1.2.0",
    }),
    history_model_version: z.string().nullable().openapi({
      description:
        "The model answering requests that carry recent_hours (null when none is loaded)",
      example: "aqi-history-1.0.0",
    }),
    service_radius_km: z.number().openapi({
      description: "Requests farther than this from every training station are refused",
    }),
  })
  .openapi("ModelInfoResponse");

export const HTTPError = z
  .object({ detail: z.string() })
  .openapi("HTTPError", { example: { detail: "Inference failed." } });

export const HTTPValidationError = z
  .object({
    detail: z.array(
      z
        .object({
          type: z.string(),
          loc: z.array(z.union([z.string(), z.number().int()])),
          msg: z.string(),
          input: z.unknown(),
          ctx: z.record(z.string(), z.unknown()).optional(),
        })
        .openapi("ValidationError"),
    ),
  })
  .openapi("HTTPValidationError");
