import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { SERVICE_VERSION } from "../version.ts";

const HealthResponse = z
  .object({ status: z.literal("healthy"), version: z.string(), timestamp: z.string() })
  .openapi("HealthResponse");

const healthRoute = createRoute({
  method: "get",
  path: "/health",
  tags: ["health"],
  summary: "Liveness",
  responses: {
    200: {
      description: "The service answers",
      content: { "application/json": { schema: HealthResponse } },
    },
  },
});

export const healthRoutes = new OpenAPIHono<AppEnv>().openapi(healthRoute, (c) =>
  c.json(
    { status: "healthy" as const, version: SERVICE_VERSION, timestamp: new Date().toISOString() },
    200,
  ),
);
