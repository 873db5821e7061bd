import { correlationId } from "@edge-platform/shared/http/correlation-id";
import { redocPage, swaggerUiPage } from "@edge-platform/shared/http/docs-pages";
import { bufferRequestBody, installErrorHandling } from "@edge-platform/shared/http/error-handling";
import { renderPortfolioProblem } from "@edge-platform/shared/http/error-shapes/portfolio";
import { requestId } from "@edge-platform/shared/http/request-id";
import { OpenAPIHono } from "@hono/zod-openapi";
import { cors } from "hono/cors";
import { secureHeaders } from "hono/secure-headers";
import type { AppEnv } from "./app-env.ts";
import { responseTime } from "./middleware/response-time.ts";
import { chatRoutes } from "./routes/chat.ts";
import { loadSettings } from "./routes/guards.ts";
import { healthRoutes } from "./routes/health.ts";
import { ingestRoutes } from "./routes/ingest.ts";
import { pageRoutes } from "./routes/page.ts";
import { SERVICE_VERSION } from "./version.ts";

const API_TITLE = "Portfolio Q&A API";

export function createApp() {
  const app = new OpenAPIHono<AppEnv>();
  app.use(requestId());
  app.use(responseTime());
  app.use(correlationId());
  app.use(
    cors({
      origin: ["http://localhost:3000", "http://localhost:5173"],
      credentials: true,
      exposeHeaders: ["X-Request-ID", "X-Response-Time"],
      maxAge: 600,
    }),
  );
  app.use(
    secureHeaders({
      xFrameOptions: "DENY",
      xXssProtection: "1; mode=block",
      contentSecurityPolicy: {
        defaultSrc: ["'none'"],
        baseUri: ["'self'"],
        frameAncestors: ["'none'"],
        imgSrc: ["'self'", "data:"],
        objectSrc: ["'none'"],
        scriptSrc: ["'self'", "'unsafe-inline'", "https://cdn.jsdelivr.net"],
        styleSrc: ["'self'", "'unsafe-inline'", "https://cdn.jsdelivr.net"],
        connectSrc: ["'self'"],
        fontSrc: ["'self'", "data:"],
        workerSrc: ["'self'", "blob:"],
      },
    }),
  );
  app.use(bufferRequestBody());
  installErrorHandling(app, renderPortfolioProblem);
  app.use(loadSettings);

  app.route("/v1", healthRoutes);
  app.route("/v1", chatRoutes);
  app.route("/v1", ingestRoutes);
  app.route("/", pageRoutes);

  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: { title: API_TITLE, version: SERVICE_VERSION },
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
  });
  app.get("/docs", swaggerUiPage("/openapi.json", API_TITLE));
  app.get("/redoc", redocPage("/openapi.json", API_TITLE));
  return app;
}
