import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "./app-env.ts";
import { checkHealth } from "./domain/health.ts";
import { withAccessErrors } from "./schemas.ts";

const DependencyStatusSchema = z
  .object({ status: z.enum(["up", "down"]), message: z.string().optional() })
  .openapi("DependencyStatus");
const DependencyMap = z.record(z.string(), DependencyStatusSchema);
const HealthSchema = z
  .object({
    status: z.enum(["ok", "error"]),
    info: DependencyMap,
    error: DependencyMap,
    details: DependencyMap,
  })
  .openapi("Health");

const LivenessSchema = z.object({ status: z.literal("ok") }).openapi("Liveness");

// Liveness only: answers from the isolate with no I/O, so that a load
// balancer's probe (and the benchmarks' baseline) measures the worker itself.
const livenessRoute = createRoute({
  method: "get",
  path: "/health/live",
  tags: ["health"],
  summary: "Liveness: the worker answers (no dependency is touched)",
  responses: withAccessErrors("public", {
    200: {
      description: "The worker is running",
      content: { "application/json": { schema: LivenessSchema } },
    },
  }),
});

const healthRoute = createRoute({
  method: "get",
  path: "/health",
  tags: ["health"],
  summary: "Readiness: checks D1 and the Durable Object layer",
  responses: withAccessErrors("public", {
    200: {
      description: "Every dependency is up",
      content: { "application/json": { schema: HealthSchema } },
    },
    503: {
      description: "At least one dependency is down; it is listed under `error`",
      content: { "application/json": { schema: HealthSchema } },
    },
  }),
});

export const healthRoutes = new OpenAPIHono<AppEnv>()
  .openapi(livenessRoute, (c) => c.json({ status: "ok" as const }, 200))
  .openapi(healthRoute, async (c) => {
    const report = await checkHealth({
      d1: () => c.env.DB.prepare("SELECT 1 AS ok").first(),
      durableObjects: async () => {
        const limiter = c.env.RATE_LIMITER;
        const answer = await limiter.get(limiter.idFromName("health-probe")).ping();
        if (answer !== "pong") throw new Error(`unexpected answer ${String(answer)}`);
      },
    });
    return c.json(report, report.status === "ok" ? 200 : 503);
  });
