import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { aqiCategoryRanges } from "../domain/categories.ts";
import { SERVICE_RADIUS_KM } from "../domain/request-checks.ts";
import { type AqiModels, loadedModelOr503 } from "../inference/predictions.ts";
import { HTTPError, ModelInfoResponse } from "../schemas/prediction.ts";

const modelInfoRoute = createRoute({
  method: "get",
  path: "/model/info",
  tags: ["model"],
  summary: "The loaded model",
  responses: {
    200: {
      description: "Version, artifact and card paths, category table, input layout",
      content: { "application/json": { schema: ModelInfoResponse } },
    },
    503: {
      description: "No model loaded",
      content: { "application/json": { schema: HTTPError } },
    },
  },
});

export function modelInfoRoutes(models: AqiModels) {
  return new OpenAPIHono<AppEnv>().openapi(modelInfoRoute, async (c) => {
    const model = await loadedModelOr503(models.weatherOnly);
    const reading = models.reading ? await models.reading.state() : null;
    const history = models.history ? await models.history.state() : null;
    const { artifact } = model;
    return c.json(
      {
        model_version: artifact.version,
        model_path: artifact.modelPath,
        dataset_config: artifact.cardPath,
        aqi_categories: aqiCategoryRanges(),
        features: [...artifact.preprocessing.featureNames],
        training_stations: artifact.preprocessing.stations.map((station) => station.name),
        session_create_ms: Math.round(model.sessionCreateMs * 10) / 10,
        reading_model_version: reading?.status === "ready" ? reading.model.artifact.version : null,
        history_model_version: history?.status === "ready" ? history.model.artifact.version : null,
        service_radius_km: SERVICE_RADIUS_KM,
      },
      200,
    );
  });
}
