import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import type { ModelHost } from "../inference/model-host.ts";
import { HealthResponse } from "../schemas/prediction.ts";

const healthRoute = createRoute({
  method: "get",
  path: "/health",
  tags: ["health"],
  summary: "Service health",
  description:
    "Always 200. `model_loaded` is true only once this isolate has created its inference session; the first call creates it, so the answer is the truth rather than a guess.",
  responses: {
    200: {
      description: "`healthy` with a working model, `degraded` without one",
      content: { "application/json": { schema: HealthResponse } },
    },
  },
});

export function healthRoutes(model: ModelHost) {
  return new OpenAPIHono<AppEnv>().openapi(healthRoute, async (c) => {
    const loaded = (await model.state()).status === "ready";
    return c.json(
      {
        status: loaded ? ("healthy" as const) : ("degraded" as const),
        model_loaded: loaded,
        timestamp: new Date().toISOString(),
      },
      200,
    );
  });
}
