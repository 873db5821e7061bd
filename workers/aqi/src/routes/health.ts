import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { modelStatus } from "../inference/model.ts";

const HealthResponse = z
  .object({
    status: z.enum(["healthy", "degraded"]),
    model_loaded: z.boolean(),
    timestamp: z.string(),
  })
  .openapi("HealthResponse");

const healthRoute = createRoute({
  method: "get",
  path: "/health",
  tags: ["health"],
  summary: "Service health; `degraded` while no model is loaded",
  responses: {
    200: {
      description: "Always 200: read `model_loaded`",
      content: { "application/json": { schema: HealthResponse } },
    },
  },
});

export const healthRoutes = new OpenAPIHono<AppEnv>().openapi(healthRoute, async (c) => {
  const { loaded } = await modelStatus();
  return c.json(
    {
      status: loaded ? "healthy" : "degraded",
      model_loaded: loaded,
      timestamp: new Date().toISOString(),
    },
    200,
  );
});
