/**
 * The service verb behind /predict and /predict/batch: score validated
 * requests in one `session.run` and shape the responses. Failures come out
 * as the contract's errors: 503 without a model, 500 (with the route's
 * message) when scoring fails; nothing partial is ever returned.
 */
import { ApiError } from "@edge-platform/shared/http/api-error";
import { interpretModelOutputs } from "../domain/prediction.ts";
import type { PredictionRequest, PredictionResponse } from "../schemas/prediction.ts";
import type { LoadedAqiModel, ModelHost } from "./model-host.ts";

/** The contract's text (the reference service's own words). */
export const MODEL_NOT_LOADED = "Model is not loaded. Run 'make train' and restart the API.";

export async function loadedModelOr503(host: ModelHost): Promise<LoadedAqiModel> {
  const state = await host.state();
  if (state.status !== "ready") throw new ApiError(503, MODEL_NOT_LOADED);
  return state.model;
}

export interface Predictions {
  predictions: PredictionResponse[];
  inferenceMs: number;
  encodeMs: number;
}

export async function predictAqi(
  host: ModelHost,
  requests: readonly PredictionRequest[],
  failureMessage: "Inference failed." | "Batch inference failed.",
): Promise<Predictions> {
  const model = await loadedModelOr503(host);
  try {
    const scored = await model.score(requests);
    const predictions = scored.rows.map((row): PredictionResponse => {
      const outputs = interpretModelOutputs(row.point, row.low, row.high);
      return {
        aqi_predicted: outputs.aqi_predicted,
        aqi_rounded: outputs.aqi_rounded,
        category: outputs.category,
        aqi_interval: { low: outputs.aqi_interval.low, high: outputs.aqi_interval.high },
        model_version: model.artifact.version,
        prediction_timestamp: new Date().toISOString(),
        resolved_station: {
          name: row.station.station.name,
          matched_by: row.station.matchedBy,
          distance_km: Math.round(row.station.distanceKm * 100) / 100,
        },
      };
    });
    return { predictions, inferenceMs: scored.inferenceMs, encodeMs: scored.encodeMs };
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: failureMessage,
        model_version: model.artifact.version,
        rows: requests.length,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      }),
    );
    throw new ApiError(500, failureMessage, { cause: error });
  }
}
