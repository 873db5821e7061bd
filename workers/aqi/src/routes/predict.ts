import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import { enforceRateLimit } from "../http/rate-limits.ts";
import {
  type AqiModels,
  checkRequests,
  type Predictions,
  predictAqi,
} from "../inference/predictions.ts";
import {
  BatchPredictionRequest,
  BatchPredictionResponse,
  HTTPError,
  HTTPValidationError,
  MAX_BATCH_SIZE,
  PredictionRequest,
  PredictionResponse,
} from "../schemas/prediction.ts";
import { quickBatchPredictionRequest, quickPredictionRequest } from "../schemas/prediction-body.ts";
import { fastApiJsonBody, jsonBody, validatedBody } from "../validation/json-body.ts";

function errorResponses(limit: string) {
  return {
    422: {
      description: "Validation error (FastAPI/pydantic shape)",
      content: { "application/json": { schema: HTTPValidationError } },
    },
    429: {
      description: `More than ${limit} per client IP (with Retry-After)`,
      content: { "application/json": { schema: HTTPError } },
    },
    500: {
      description: "Scoring failed",
      content: { "application/json": { schema: HTTPError } },
    },
    503: {
      description: "No model loaded",
      content: { "application/json": { schema: HTTPError } },
    },
  } as const;
}

const predictRoute = createRoute({
  method: "post",
  path: "/predict",
  tags: ["prediction"],
  summary: "Predict the AQI for one station-hour",
  request: {
    body: { required: true, content: { "application/json": { schema: PredictionRequest } } },
  },
  responses: {
    200: {
      description: "Prediction with its 80% interval",
      content: { "application/json": { schema: PredictionResponse } },
    },
    ...errorResponses("60 requests per minute (PREDICT_RATE_LIMIT_PER_MINUTE)"),
  },
});

const batchRoute = createRoute({
  method: "post",
  path: "/predict/batch",
  tags: ["prediction"],
  summary: `Predict up to ${MAX_BATCH_SIZE} station-hours, one model run per model variant in the batch`,
  request: {
    body: {
      required: true,
      content: { "application/json": { schema: BatchPredictionRequest } },
    },
  },
  responses: {
    200: {
      description: "Predictions in input order",
      content: { "application/json": { schema: BatchPredictionResponse } },
    },
    ...errorResponses("20 requests per minute (BATCH_RATE_LIMIT_PER_MINUTE)"),
  },
});

/** Inference time inside this isolate, for clients and the benchmark (local workerd's clock runs during execution; deployed Workers coarsen it). */
function setServerTiming(c: Context<AppEnv>, result: Predictions): void {
  c.header(
    "Server-Timing",
    `encode;dur=${result.encodeMs.toFixed(3)}, inference;dur=${result.inferenceMs.toFixed(3)}`,
  );
}

/**
 * The routes are documented from their schemas as `openapi()` would document
 * them, but registered as plain handlers: `openapi()` puts zod's validator in
 * front, which walks every reading of a batch's recent_hours, and that cost
 * more than the rest of the request. The handlers validate with
 * `validatedBody` instead, which answers what the schemas answer.
 */
export function predictRoutes(models: AqiModels) {
  const app = new OpenAPIHono<AppEnv>();
  app.openAPIRegistry.registerPath(predictRoute);
  app.openAPIRegistry.registerPath(batchRoute);
  return app
    .post(predictRoute.path, fastApiJsonBody, async (c) => {
      const request = validatedBody(PredictionRequest, quickPredictionRequest, await jsonBody(c));
      const checked = await checkRequests(models, [request], () => ["body"]);
      await enforceRateLimit(c, "predict");
      const result = await predictAqi(models, checked, "Inference failed.");
      setServerTiming(c, result);
      return c.json(result.predictions[0]!, 200);
    })
    .post(batchRoute.path, fastApiJsonBody, async (c) => {
      const { requests } = validatedBody(
        BatchPredictionRequest,
        quickBatchPredictionRequest,
        await jsonBody(c),
      );
      const checked = await checkRequests(models, requests, (index) => ["body", "requests", index]);
      await enforceRateLimit(c, "batch");
      const result = await predictAqi(models, checked, "Batch inference failed.");
      setServerTiming(c, result);
      return c.json({ predictions: result.predictions, count: result.predictions.length }, 200);
    });
}
