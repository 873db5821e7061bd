import { correlationId } from "@edge-platform/shared/http/correlation-id";
import { swaggerUiPage } from "@edge-platform/shared/http/docs-pages";
import { bufferRequestBody, installErrorHandling } from "@edge-platform/shared/http/error-handling";
import { renderBillingProblem } from "@edge-platform/shared/http/error-shapes/billing";
import { cors } from "hono/cors";
import { secureHeaders } from "hono/secure-headers";
import { auditEventRoutes } from "./audit/index.ts";
import {
  featureRoutes,
  planEntitlementRoutes,
  planPriceRoutes,
  planRoutes,
} from "./catalog/index.ts";
import { consoleRoutes } from "./console/index.ts";
import { creditNoteRoutes } from "./credit-notes/index.ts";
import { creditRoutes } from "./credits/index.ts";
import { entitlementRoutes } from "./entitlements/index.ts";
import {
  adminTenantRoutes,
  apiKeyRoutes,
  authRoutes,
  tenantRoutes,
  userRoutes,
} from "./identity/index.ts";
import { invoiceRoutes } from "./invoicing/index.ts";
import {
  relayTenantEventsQuietly,
  usageAlertRoutes,
  webhookEndpointRoutes,
} from "./notifications/index.ts";
import { billingRoutes, webhookRoutes } from "./payments/index.ts";
import type { ApiKeyVerifier } from "./platform/index.ts";
import {
  API_PREFIX,
  API_VERSION,
  createRouter,
  D1_BOOKMARK_HEADER,
  documentIdempotency,
  healthRoutes,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_PARAMETER_NAME,
  IDEMPOTENT_REPLAYED_HEADER,
  idempotencyKeyParameter,
  idempotencyKeys,
  inBackground,
  LoggingMailSender,
  type MailSender,
} from "./platform/index.ts";
import { billingDetailsRoutes, couponRoutes } from "./pricing/index.ts";
import { routeServices } from "./services.ts";
import { subscriptionRoutes } from "./subscriptions/index.ts";
import { usageDeadLetterRoutes, usageRoutes } from "./usage/index.ts";

/** Routes whose writes may add tenant events to the outbox (subscriptions, invoice settlement). */
const TENANT_EVENT_ROUTES = [
  `${API_PREFIX}/subscriptions`,
  `${API_PREFIX}/invoices`,
  `${API_PREFIX}/credit-grants`,
  `${API_PREFIX}/credits`,
];

function writesTenantEvents(path: string): boolean {
  return TENANT_EVENT_ROUTES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

export interface AppOptions {
  /** Where password-reset mail goes; the default logs a redacted line. */
  mailSender?: MailSender;
  /** Epoch milliseconds for Idempotency-Key expiry; tests move it forward. */
  idempotencyClock?: () => number;
  /**
   * API-key lookups and their caches; by default the isolate's own. A test
   * gives an app its own to stand for another isolate, or to move its clock.
   */
  apiKeyVerifier?: ApiKeyVerifier;
}

type App = ReturnType<typeof createRouter>;

/** Browser origins from CORS_ORIGINS; the headers a browser client sends and reads. */
const corsPolicy = cors({
  origin: (origin, c) => {
    const allowed = (c.env.CORS_ORIGINS ?? "").split(",").map((value: string) => value.trim());
    return allowed.includes(origin) ? origin : null;
  },
  allowMethods: ["GET", "POST", "PUT", "PATCH", "DELETE"],
  allowHeaders: [
    "Authorization",
    "Content-Type",
    "x-tenant-id",
    "x-correlation-id",
    IDEMPOTENCY_KEY_HEADER,
    D1_BOOKMARK_HEADER,
  ],
  credentials: true,
  exposeHeaders: [
    "x-correlation-id",
    "Retry-After",
    IDEMPOTENT_REPLAYED_HEADER,
    D1_BOOKMARK_HEADER,
  ],
});

function useMiddleware(app: App, options: AppOptions) {
  const mailSender = options.mailSender ?? new LoggingMailSender();
  const { apiKeyVerifier } = options;
  app.use(correlationId());
  app.use(secureHeaders());
  app.use(corsPolicy);
  app.use(bufferRequestBody());
  app.use(idempotencyKeys({ prefix: API_PREFIX, clock: options.idempotencyClock }));
  app.use(async (c, next) => {
    c.set("mailSender", mailSender);
    if (apiKeyVerifier) c.set("apiKeyVerifier", apiKeyVerifier);
    await next();
  });
  // Subscription and invoice writes put tenant events into the outbox (in
  // their own D1 batch); send them once the response is on its way. Only
  // those routes, so hot paths (usage ingestion, consume) pay nothing; the
  // cron sweep catches whatever this misses.
  app.use(async (c, next) => {
    await next();
    if (c.req.method !== "GET" && writesTenantEvents(c.req.path)) {
      await inBackground(c, relayTenantEventsQuietly(c.env));
    }
  });
}

/** Every capability's routes, in the order the OpenAPI document lists them. */
function mountApi(app: App) {
  app.route("/", healthRoutes);
  for (const routes of [
    authRoutes(routeServices.identity),
    userRoutes(routeServices.identity),
    tenantRoutes(routeServices.identity),
    billingDetailsRoutes(routeServices.pricing),
    couponRoutes(routeServices.pricing),
    apiKeyRoutes(routeServices.identity),
    planRoutes(routeServices.catalog),
    planPriceRoutes(routeServices.catalog),
    featureRoutes(routeServices.catalog),
    planEntitlementRoutes(routeServices.catalog),
    subscriptionRoutes(routeServices.subscriptions),
    entitlementRoutes(routeServices.entitlements),
    invoiceRoutes(routeServices.invoicing),
    creditRoutes(routeServices.credits),
    creditNoteRoutes(routeServices.creditNotes),
    billingRoutes(routeServices.payments),
    webhookRoutes(routeServices.payments),
    webhookEndpointRoutes(routeServices.notifications),
    usageRoutes(routeServices.usage),
    usageAlertRoutes(routeServices.notifications),
    usageDeadLetterRoutes(routeServices.usage),
    auditEventRoutes(routeServices.audit),
    adminTenantRoutes,
  ]) {
    app.route(API_PREFIX, routes);
  }
}

function mountDocs(app: App) {
  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "Access token from /api/v1/auth/login (15 minutes)",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "apiKey", {
    type: "http",
    scheme: "bearer",
    description: "Tenant API key (`mk_…`) for server-to-server routes",
  });
  app.openAPIRegistry.registerComponent(
    "parameters",
    IDEMPOTENCY_PARAMETER_NAME,
    idempotencyKeyParameter,
  );
  app.get("/api/docs-json", (c) =>
    c.json(
      documentIdempotency(
        app.getOpenAPI31Document({
          openapi: "3.1.0",
          info: { title: "Billing and usage API", version: API_VERSION },
        }),
        API_PREFIX,
      ),
    ),
  );
  app.get("/api/docs", swaggerUiPage("/api/docs-json", "Billing and usage API"));
  // A person who opens the bare origin in a browser wants the console.
  app.get("/", (c) => c.redirect("/console", 302));
}

/** Validation failures become 400s whose `message` lists every problem, as class-validator did. */
export function createApp(options: AppOptions = {}) {
  const app = createRouter();
  useMiddleware(app, options);
  installErrorHandling(app, renderBillingProblem);
  mountApi(app);
  // The browser console calls the routes above in-process, with the
  // session's access token, so every write keeps the API's rules.
  app.route(
    "/console",
    consoleRoutes((request, env, ctx) => app.fetch(request, env, ctx)),
  );
  mountDocs(app);
  return app;
}
