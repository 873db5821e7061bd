import { correlationId } from "@edge-platform/shared/http/correlation-id";
import { redocPage, swaggerUiPage } from "@edge-platform/shared/http/docs-pages";
import { bufferRequestBody, installErrorHandling } from "@edge-platform/shared/http/error-handling";
import { renderFastApiProblem } from "@edge-platform/shared/http/error-shapes/fastapi";
import { requestId } from "@edge-platform/shared/http/request-id";
import { OpenAPIHono } from "@hono/zod-openapi";
import { cors } from "hono/cors";
import type { AppEnv } from "./app-env.ts";
import type { ModelHost } from "./inference/model-host.ts";
import { forecastPageRoutes } from "./page/forecast-page.ts";
import { healthRoutes } from "./routes/health.ts";
import { modelInfoRoutes } from "./routes/model-info.ts";
import { predictRoutes } from "./routes/predict.ts";

export const API_TITLE = "AirSense AQI API";
export const API_VERSION = "1.0.0";

export interface AppDependencies {
  /** This isolate's weather-only model (index.ts: the bundled artifact; tests: their own). */
  model: ModelHost;
  /** The recent-reading model, answering requests that carry recent_aqi (none: such requests get 503). */
  readingModel?: ModelHost | null;
  /** The recent-hours model, answering requests that carry recent_hours (none: such requests get 503). */
  historyModel?: ModelHost | null;
}

export function createApp({ model, readingModel = null, historyModel = null }: AppDependencies) {
  const models = { weatherOnly: model, reading: readingModel, history: historyModel };
  const app = new OpenAPIHono<AppEnv>();
  app.use(requestId());
  app.use(correlationId());
  app.use(
    cors({
      origin: ["http://localhost:3000", "http://localhost:5173"],
      credentials: true,
      exposeHeaders: ["X-Request-ID", "x-correlation-id", "Retry-After", "Server-Timing"],
    }),
  );
  // The forecast page (HTML, not API) reads its multipart form itself, so it comes before the
  // body buffering (which reads every body as text); a plain router keeps it out of the OpenAPI document.
  app.route("/", forecastPageRoutes(models));
  app.use(bufferRequestBody());
  installErrorHandling(app, renderFastApiProblem);

  app.route("/v1", healthRoutes(model));
  app.route("/v1", modelInfoRoutes(models));
  app.route("/v1", predictRoutes(models));

  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: API_TITLE,
      version: API_VERSION,
      description:
        "Hourly national (CPCB) AQI at a Delhi station from weather and calendar, or from the station's latest AQI reading or its last hours of pollutant readings when the request carries them, with an 80% interval. FastAPI-compatible wire format.",
    },
  });
  app.get("/docs", swaggerUiPage("/openapi.json", API_TITLE));
  app.get("/redoc", redocPage("/openapi.json", API_TITLE));
  return app;
}
