/**
 * The service verbs behind /predict and /predict/batch: check the requests
 * against what the models can answer (both-or-neither reading, service
 * area), then score them, one `session.run` per model variant present in the
 * batch, and shape the responses. Failures come out as the contract's errors:
 * 422 in the pydantic shape, 503 without a model, 500 (with the route's
 * message) when scoring fails; nothing partial is ever returned.
 */
import { ApiError } from "@edge-platform/shared/http/api-error";
import type { FastApiValidationIssue } from "@edge-platform/shared/http/error-shapes/fastapi";
import { categoryForAqi } from "../domain/categories.ts";
import { checkRecentHours, type PreparedReadings, prepareReadings } from "../domain/history.ts";
import {
  clipToScale,
  interpretModelOutputs,
  roundHalfToEven,
  roundTo2Decimals,
} from "../domain/prediction.ts";
import {
  decideSeason,
  hasReading,
  hasRecentHours,
  readingPairIssue,
  recentHoursWithReadingIssue,
  type SeasonDecision,
  serviceAreaIssue,
} from "../domain/request-checks.ts";
import type { PredictionRequest, PredictionResponse } from "../schemas/prediction.ts";
import { validationError } from "../validation/json-body.ts";
import type { LoadedAqiModel, ModelHost, ScoredRow } from "./model-host.ts";

/** The contract's text (the reference service's own words). */
export const MODEL_NOT_LOADED = "Model is not loaded. Run 'make train' and restart the API.";
export const READING_MODEL_NOT_LOADED =
  "The recent-reading model is not loaded: send the request without recent_aqi and recent_aqi_age_hours, or retry later.";
export const HISTORY_MODEL_NOT_LOADED =
  "The recent-hours model is not loaded: send the request without recent_hours, or retry later.";

/** The isolate's models: the weather-only one, and the recent-reading and recent-hours ones when bundled. */
export interface AqiModels {
  readonly weatherOnly: ModelHost;
  readonly reading: ModelHost | null;
  readonly history?: ModelHost | null;
}

export async function loadedModelOr503(host: ModelHost): Promise<LoadedAqiModel> {
  const state = await host.state();
  if (state.status !== "ready") throw new ApiError(503, MODEL_NOT_LOADED);
  return state.model;
}

async function loadedOr503(host: ModelHost | null | undefined, message: string) {
  const state = host ? await host.state() : null;
  if (state?.status !== "ready") throw new ApiError(503, message);
  return state.model;
}

/** Requests that passed `checkRequests`, with what the checks worked out that scoring reuses. */
export interface CheckedRequests {
  readonly requests: readonly PredictionRequest[];
  /** Request i's recent_hours, laid out and prepared for scoring (null without recent_hours). */
  readonly prepared: readonly (PreparedReadings | null)[];
}

/**
 * 422 for what the field constraints cannot see: a reading without its age
 * (or the reverse), recent_hours that cannot be scored, and coordinates
 * outside the service area. Runs before the rate limit, like the field
 * validation, so refused bodies use no quota. `locOf(i)` is the request's
 * location in the body.
 */
export async function checkRequests(
  models: AqiModels,
  requests: readonly PredictionRequest[],
  locOf: (index: number) => (string | number)[],
): Promise<CheckedRequests> {
  const state = await models.weatherOnly.state();
  const stations = state.status === "ready" ? state.model.artifact.preprocessing.stations : null;
  const issues: FastApiValidationIssue[] = [];
  const prepared: (PreparedReadings | null)[] = new Array(requests.length).fill(null);
  requests.forEach((request, index) => {
    const pair = readingPairIssue(request, locOf(index));
    if (pair) issues.push(pair);
    const both = recentHoursWithReadingIssue(request, locOf(index));
    if (both) issues.push(both);
    if (request.recent_hours) {
      const checked = checkRecentHours(request.recent_hours, [...locOf(index), "recent_hours"]);
      issues.push(...checked.issues);
      prepared[index] = checked.prepared;
    }
    const area = stations ? serviceAreaIssue(request, stations, locOf(index)) : null;
    if (area) issues.push(area);
  });
  if (issues.length > 0) throw validationError(issues);
  return { requests, prepared };
}

export interface Predictions {
  predictions: PredictionResponse[];
  inferenceMs: number;
  encodeMs: number;
}

function respond(
  row: ScoredRow,
  request: PredictionRequest,
  season: SeasonDecision,
  model: LoadedAqiModel,
  prepared: PreparedReadings | null,
): PredictionResponse {
  const outputs = interpretModelOutputs(row.point, row.low, row.high);
  const reading = model.artifact.variant === "recent-reading";
  const history = model.artifact.variant === "recent-hours" ? request.recent_hours : null;
  const historyFields = history && prepared ? historyResponseFields(prepared) : null;
  return {
    aqi_predicted: outputs.aqi_predicted,
    aqi_rounded: outputs.aqi_rounded,
    category: outputs.category,
    aqi_interval: { low: outputs.aqi_interval.low, high: outputs.aqi_interval.high },
    model_version: model.artifact.version,
    inputs_used: {
      variant: model.artifact.variant,
      recent_aqi: reading ? (request.recent_aqi ?? null) : null,
      recent_aqi_age_hours: reading ? (request.recent_aqi_age_hours ?? null) : null,
      season: season.season,
      season_derived_from_month: season.derivedFromMonth,
      ...(historyFields ? { recent_hours: historyFields.inputs } : {}),
    },
    ...(historyFields ? { aqi_at_latest_reading: historyFields.latest } : {}),
    notes: season.note ? [season.note] : [],
    prediction_timestamp: new Date().toISOString(),
    resolved_station: {
      name: row.station.station.name,
      matched_by: row.station.matchedBy,
      distance_km: Math.round(row.station.distanceKm * 100) / 100,
    },
  };
}

/** What the response says about the readings: the AQI at the newest one, and what the model started from. */
function historyResponseFields(readings: PreparedReadings) {
  const latest = readings.latest;
  if (latest.aqi === null || latest.dominantPollutant === null) {
    throw new Error("recent_hours without a CPCB AQI at the newest reading reached scoring");
  }
  const rounded = clipToScale(roundHalfToEven(latest.aqi));
  return {
    latest: {
      aqi: roundTo2Decimals(latest.aqi),
      aqi_rounded: rounded,
      category: categoryForAqi(rounded),
      dominant_pollutant: latest.dominantPollutant,
      hours_before: readings.horizon,
    },
    inputs: {
      readings: readings.readings,
      horizon_hours: readings.horizon,
      window_arithmetic_aqi: roundTo2Decimals(readings.windowArithmetic.aqi),
    },
  };
}

/** Request i's readings prepared for scoring: as checked, else prepared now (throws when they cannot be scored). */
function preparedOf(checked: CheckedRequests, index: number): PreparedReadings {
  const readings = checked.requests[index]?.recent_hours;
  const prepared = checked.prepared[index] ?? (readings ? prepareReadings(readings) : null);
  if (!prepared) throw new Error("a request without recent_hours reached the recent-hours model");
  return prepared;
}

/**
 * Scores requests that passed `checkRequests`: its result, or the bare
 * requests (their readings are then prepared here).
 */
export async function predictAqi(
  models: AqiModels,
  checkedRequests: CheckedRequests | readonly PredictionRequest[],
  failureMessage: "Inference failed." | "Batch inference failed.",
): Promise<Predictions> {
  const checked: CheckedRequests =
    "prepared" in checkedRequests ? checkedRequests : { requests: checkedRequests, prepared: [] };
  const { requests } = checked;
  const weatherOnly = await loadedModelOr503(models.weatherOnly);
  const reading = requests.some(hasReading)
    ? await loadedOr503(models.reading, READING_MODEL_NOT_LOADED)
    : null;
  const history = requests.some(hasRecentHours)
    ? await loadedOr503(models.history, HISTORY_MODEL_NOT_LOADED)
    : null;
  const seasons = requests.map((request) => decideSeason(request.season, request.month));
  const inputs = requests.map((request, index) => ({ ...request, season: seasons[index]!.season }));
  // Each variant present scores all its rows in one run.
  const groups = {
    weatherOnly: { model: weatherOnly, indices: [] as number[] },
    reading: { model: reading, indices: [] as number[] },
    history: { model: history, indices: [] as number[] },
  };
  requests.forEach((request, index) => {
    const group = hasRecentHours(request)
      ? groups.history
      : hasReading(request)
        ? groups.reading
        : groups.weatherOnly;
    group.indices.push(index);
  });
  try {
    const predictions: PredictionResponse[] = new Array(requests.length);
    let inferenceMs = 0;
    let encodeMs = 0;
    for (const { model, indices } of Object.values(groups)) {
      if (model === null || indices.length === 0) continue;
      const readings =
        model.artifact.variant === "recent-hours"
          ? indices.map((index) => preparedOf(checked, index))
          : [];
      const scored = await model.score(
        indices.map((index) => inputs[index]!),
        readings,
      );
      inferenceMs += scored.inferenceMs;
      encodeMs += scored.encodeMs;
      scored.rows.forEach((row, position) => {
        const index = indices[position]!;
        predictions[index] = respond(
          row,
          requests[index]!,
          seasons[index]!,
          model,
          readings[position] ?? null,
        );
      });
    }
    return { predictions, inferenceMs, encodeMs };
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: failureMessage,
        model_version: weatherOnly.artifact.version,
        rows: requests.length,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      }),
    );
    throw new ApiError(500, failureMessage, { cause: error });
  }
}
