import { ApiError } from "@edge-platform/shared/http/api-error";
import { correlationId } from "@edge-platform/shared/http/correlation-id";
import { bufferRequestBody, installErrorHandling } from "@edge-platform/shared/http/error-handling";
import { renderBillingProblem } from "@edge-platform/shared/http/error-shapes/billing";
import { swaggerUI } from "@hono/swagger-ui";
import { OpenAPIHono } from "@hono/zod-openapi";
import { cors } from "hono/cors";
import { secureHeaders } from "hono/secure-headers";
import type { AppEnv } from "./app-env.ts";
import { healthRoutes } from "./routes/health.ts";

export const API_VERSION = "1.0.0";

/** Validation failures become 400s whose `message` lists every problem, as class-validator did. */
export function createApp() {
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        const messages = result.error.issues.map((issue) =>
          issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message,
        );
        throw new ApiError(400, "Validation failed", { details: messages, code: "validation" });
      }
    },
  });

  app.use(correlationId());
  app.use(secureHeaders());
  app.use(
    cors({
      origin: (origin, c) => {
        const allowed = (c.env.CORS_ORIGINS ?? "").split(",").map((value: string) => value.trim());
        return allowed.includes(origin) ? origin : null;
      },
      allowMethods: ["GET", "POST", "PUT", "PATCH", "DELETE"],
      credentials: true,
      exposeHeaders: ["x-correlation-id"],
    }),
  );
  app.use(bufferRequestBody());
  installErrorHandling(app, renderBillingProblem);

  app.route("/", healthRoutes);

  app.doc31("/api/docs-json", {
    openapi: "3.1.0",
    info: { title: "Billing and usage API", version: API_VERSION },
  });
  app.get("/api/docs", swaggerUI({ url: "/api/docs-json", title: "Billing and usage API" }));
  return app;
}
