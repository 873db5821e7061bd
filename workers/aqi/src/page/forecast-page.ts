/**
 * The forecast page at `/`: a form that posts back to itself and a page
 * rendered from the answer. The forecast is the batch the API would answer
 * for the same input, through the same code as POST /v1/predict/batch: the
 * request schema's validation with pydantic's messages, `checkRequests`, the
 * batch rate limit and `predictAqi`. The page is HTML, not API: it stays out
 * of the OpenAPI document.
 */
import { ApiError } from "@edge-platform/shared/http/api-error";
import { type Context, Hono } from "hono";
import type { AppEnv } from "../app-env.ts";
import type { AqiCategoryLabel } from "../domain/categories.ts";
import type { TrainingStation } from "../domain/features.ts";
import { type AqiModels, MODEL_NOT_LOADED } from "../inference/predictions.ts";
import type { PredictionResponse } from "../schemas/prediction.ts";
import { predictBatch } from "./batch-forecast.ts";
import { addError, type FieldErrors, FORM_FIELDS, fieldErrorsOf } from "./field-errors.ts";
import { type ForecastBatch, forecastBatch, WEATHER_FIELDS } from "./forecast-requests.ts";
import { type Readings, readReadings } from "./readings-input.ts";
import { SAMPLE_DAYS, type SampleDay, sampleDay } from "./samples.ts";
import { FORECAST_CSS } from "./styles.ts";
import { type ForecastView, type FormState, forecastPage, STYLESHEET_PATH } from "./view.ts";

const DEFAULT_HOURS = "24";
/** The API requires visibility but no model reads it (no training source recorded it), so the form starts with a plausible figure. */
const DEFAULT_VISIBILITY = "4";
/** An upload larger than this is refused before it is read: a CPCB month of hourly rows is about 150 kB. */
const MAX_UPLOAD_BYTES = 1_000_000;

/**
 * Everything comes from the Worker itself; the page runs no script at all,
 * and its forms post only back to it.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'none'",
  "style-src 'self'",
  "img-src 'self' data:",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ");

interface Outcome {
  form: FormState;
  errors: FieldErrors;
  notes: string[];
  forecast?: ForecastView;
  /**
   * Input the form refuses is answered 200, like any re-rendered form: the
   * messages are the content, and browsers report a 4xx page as a failed load.
   */
  status: 200 | 429 | 500 | 503;
}

async function stationsOf(models: AqiModels): Promise<readonly TrainingStation[]> {
  for (const host of [models.history, models.weatherOnly]) {
    const state = host ? await host.state() : null;
    if (state?.status === "ready") return state.model.artifact.preprocessing.stations;
  }
  return [];
}

function emptyForm(stations: readonly TrainingStation[]): FormState {
  const form = Object.fromEntries(FORM_FIELDS.map((name) => [name, ""])) as FormState;
  return {
    ...form,
    sample: SAMPLE_DAYS[0]!.id,
    station: stations[0]?.name ?? "",
    visibility: DEFAULT_VISIBILITY,
    hours: DEFAULT_HOURS,
  };
}

function formOfSample(sample: SampleDay, base: FormState): FormState {
  return {
    ...base,
    sample: sample.id,
    station: sample.station,
    readings: sample.csv,
    newest: "",
    temperature: sample.borrowedTemperature ? String(sample.borrowedTemperature.value) : "",
    humidity: "",
    wind_speed: "",
  };
}

/** The posted form as typed; an uploaded file's text replaces the readings field. */
async function formOfPost(
  c: Context<AppEnv>,
  base: FormState,
): Promise<{ form: FormState; errors: FieldErrors }> {
  const body = await c.req.parseBody();
  const form = { ...base };
  for (const name of FORM_FIELDS) {
    const value = body[name];
    if (typeof value === "string") form[name] = value;
  }
  const errors: FieldErrors = {};
  const file = body.readings_file;
  if (file instanceof File && file.size > 0) {
    if (file.size > MAX_UPLOAD_BYTES) {
      addError(
        errors,
        "readings",
        `The file ${file.name} is larger than 1 MB: upload the last 72 hours of readings`,
      );
    } else form.readings = await file.text();
  }
  return { form, errors };
}

/** Blank weather fields take the CSV's newest values, and the page says so. */
function fillWeather(form: FormState, readings: Readings, notes: string[]): FormState {
  const filled = { ...form };
  const used: string[] = [];
  for (const name of ["temperature", "humidity", "wind_speed"] as const) {
    const value = readings.weather[name];
    if (filled[name].trim() === "" && value !== undefined) {
      filled[name] = String(value);
      used.push(name.replace("_", " "));
    }
  }
  if (used.length > 0)
    notes.push(`The ${used.join(", ")} of the CSV's newest hour filled the blank weather fields`);
  return filled;
}

function forecastView(
  station: string,
  predictions: readonly PredictionResponse[],
  batch: ForecastBatch,
  newestHourStart: string,
): ForecastView {
  const latest = predictions[0]!.aqi_at_latest_reading!;
  return {
    station,
    modelVersion: predictions[0]!.model_version,
    latest: {
      hourStart: newestHourStart,
      aqi: latest.aqi,
      aqiRounded: latest.aqi_rounded,
      category: latest.category as AqiCategoryLabel,
      dominantPollutant: latest.dominant_pollutant,
    },
    hours: predictions.map((prediction, index) => ({
      horizon: index + 1,
      hourStart: batch.hourStarts[index]!,
      aqi: prediction.aqi_predicted,
      aqiRounded: prediction.aqi_rounded,
      category: prediction.category as AqiCategoryLabel,
      low: prediction.aqi_interval.low,
      high: prediction.aqi_interval.high,
    })),
  };
}

/** The form's own checks: a known station, 1 to 48 hours, readings that can be read. */
function readForm(form: FormState, stations: readonly TrainingStation[], errors: FieldErrors) {
  const station = stations.find((candidate) => candidate.name === form.station);
  if (!station) addError(errors, "station", "Choose one of the listed stations");
  const hours = /^\d+$/.test(form.hours.trim()) ? Number(form.hours) : Number.NaN;
  if (!(hours >= 1 && hours <= 48)) addError(errors, "hours", "Choose 1 to 48 hours ahead");
  const readings = readReadings(form.readings, form.newest);
  if (!readings.ok) {
    for (const problem of readings.problems) addError(errors, problem.field, problem.message);
  }
  return { station, hours, readings: readings.ok ? readings.value : undefined };
}

/** The whole forecast: the form's checks, then the API's validation, rate limit and model. */
async function runForecast(
  c: Context<AppEnv>,
  models: AqiModels,
  typed: FormState,
  stations: readonly TrainingStation[],
  errors: FieldErrors,
): Promise<Outcome> {
  const notes: string[] = [];
  if (stations.length === 0) {
    addError(errors, "form", MODEL_NOT_LOADED);
    return { form: typed, errors, notes, status: 503 };
  }
  const { station, hours, readings } = readForm(typed, stations, errors);
  if (!station || !readings || Object.keys(errors).length > 0) {
    return { form: typed, errors, notes, status: 200 };
  }
  notes.push(...readings.notes);
  const form = fillWeather(typed, readings, notes);
  const weather = Object.fromEntries(WEATHER_FIELDS.map((name) => [name, form[name]]));
  const batch = forecastBatch({
    station,
    newestHourStart: readings.newestHourStart,
    hours,
    weather: weather as Record<(typeof WEATHER_FIELDS)[number], string>,
    recentHours: readings.recentHours,
  });
  try {
    const outcome = await predictBatch(c, models, batch.body);
    if (!outcome.ok) {
      const errors = fieldErrorsOf(outcome.issues, batch.readingIndex, readings.labels);
      return { form, errors, notes, status: 200 };
    }
    const view = forecastView(station.name, outcome.predictions, batch, readings.newestHourStart);
    return { form, errors, notes, forecast: view, status: 200 };
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    addError(errors, "form", error.message);
    return {
      form,
      errors,
      notes,
      status: error.status === 429 || error.status === 503 ? error.status : 500,
    };
  }
}

function respond(c: Context<AppEnv>, outcome: Outcome, stations: readonly TrainingStation[]) {
  c.header("content-security-policy", CONTENT_SECURITY_POLICY);
  c.header("cache-control", "no-store");
  c.header("referrer-policy", "same-origin");
  c.header("x-content-type-options", "nosniff");
  return c.html(
    forecastPage({
      form: outcome.form,
      stations,
      samples: SAMPLE_DAYS,
      errors: outcome.errors,
      notes: outcome.notes,
      forecast: outcome.forecast,
    }),
    outcome.status,
  );
}

export function forecastPageRoutes(models: AqiModels) {
  const app = new Hono<AppEnv>();

  app.get("/", async (c) => {
    const stations = await stationsOf(models);
    const base = { ...emptyForm(stations), hours: c.req.query("hours") ?? DEFAULT_HOURS };
    const id = c.req.query("sample");
    if (id === undefined) {
      return respond(c, { form: base, errors: {}, notes: [], status: 200 }, stations);
    }
    const sample = sampleDay(id);
    if (!sample) {
      const errors = { sample: ["There is no such sample day: choose one of the list"] };
      return respond(c, { form: base, errors, notes: [], status: 200 }, stations);
    }
    const outcome = await runForecast(c, models, formOfSample(sample, base), stations, {});
    if (sample.borrowedTemperature) {
      outcome.notes.push(
        `${sample.station.split(",")[0]} reports no air temperature: the temperature is ${sample.borrowedTemperature.from}, 7 km away, as in the model's training`,
      );
    }
    return respond(c, outcome, stations);
  });

  app.post("/", async (c) => {
    const stations = await stationsOf(models);
    const { form, errors } = await formOfPost(c, emptyForm(stations));
    return respond(c, await runForecast(c, models, form, stations, errors), stations);
  });

  app.get(STYLESHEET_PATH, (c) =>
    c.body(FORECAST_CSS, 200, {
      "content-type": "text/css; charset=utf-8",
      "cache-control": "public, max-age=300",
    }),
  );

  app.get("/samples/:file{[a-z0-9-]+\\.csv}", (c) => {
    const sample = sampleDay(c.req.param("file").replace(/\.csv$/, ""));
    if (!sample) throw new ApiError(404, "Not Found");
    return c.body(sample.csv, 200, {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": `attachment; filename="${sample.id}.csv"`,
      "cache-control": "public, max-age=3600",
    });
  });

  return app;
}
