/**
 * The page's one way into the prediction service: a batch body in, the
 * answers or the 422 entries out, through exactly the steps POST
 * /v1/predict/batch takes (the body's validation with pydantic's messages,
 * the checks across fields, the batch rate limit, scoring). Refusals other
 * than validation (429, 503, 500) stay ApiErrors with the API's message.
 */
import { ApiError } from "@edge-platform/shared/http/api-error";
import type { FastApiValidationIssue } from "@edge-platform/shared/http/error-shapes/fastapi";
import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import { enforceRateLimit } from "../http/rate-limits.ts";
import { type AqiModels, checkRequests, predictAqi } from "../inference/predictions.ts";
import { BatchPredictionRequest, type PredictionResponse } from "../schemas/prediction.ts";
import { quickBatchPredictionRequest } from "../schemas/prediction-body.ts";
import { validatedBody } from "../validation/json-body.ts";

export type BatchOutcome =
  | { readonly ok: true; readonly predictions: PredictionResponse[] }
  | { readonly ok: false; readonly issues: FastApiValidationIssue[] };

function validationIssues(error: unknown): FastApiValidationIssue[] | null {
  if (error instanceof ApiError && error.status === 422 && Array.isArray(error.details)) {
    return error.details as FastApiValidationIssue[];
  }
  return null;
}

export async function predictBatch(
  c: Context<AppEnv>,
  models: AqiModels,
  body: unknown,
): Promise<BatchOutcome> {
  try {
    const { requests } = validatedBody(BatchPredictionRequest, quickBatchPredictionRequest, body);
    const checked = await checkRequests(models, requests, (index) => ["body", "requests", index]);
    await enforceRateLimit(c, "batch");
    const result = await predictAqi(models, checked, "Batch inference failed.");
    return { ok: true, predictions: result.predictions };
  } catch (error) {
    const issues = validationIssues(error);
    if (issues) return { ok: false, issues };
    throw error;
  }
}
