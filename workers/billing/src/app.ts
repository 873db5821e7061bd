import { correlationId } from "@edge-platform/shared/http/correlation-id";
import { swaggerUiPage } from "@edge-platform/shared/http/docs-pages";
import { bufferRequestBody, installErrorHandling } from "@edge-platform/shared/http/error-handling";
import { renderBillingProblem } from "@edge-platform/shared/http/error-shapes/billing";
import { cors } from "hono/cors";
import { secureHeaders } from "hono/secure-headers";
import { consoleRoutes } from "./console/routes.ts";
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from "./domain/idempotency.ts";
import { LoggingMailSender, type MailSender } from "./mail/mail-sender.ts";
import { idempotencyKeys } from "./middleware/idempotency.ts";
import { D1_BOOKMARK_HEADER } from "./middleware/replica-reads.ts";
import { adminTenantRoutes } from "./routes/admin-tenants.ts";
import { apiKeyRoutes } from "./routes/api-keys.ts";
import { auditEventRoutes } from "./routes/audit-events.ts";
import { authRoutes } from "./routes/auth.ts";
import { billingRoutes } from "./routes/billing.ts";
import { billingDetailsRoutes } from "./routes/billing-details.ts";
import { inBackground } from "./routes/context.ts";
import { couponRoutes } from "./routes/coupons.ts";
import { creditRoutes } from "./routes/credits.ts";
import { entitlementRoutes } from "./routes/entitlements.ts";
import { featureRoutes } from "./routes/features.ts";
import { healthRoutes } from "./routes/health.ts";
import { invoiceRoutes } from "./routes/invoices.ts";
import {
  documentIdempotency,
  IDEMPOTENCY_PARAMETER_NAME,
  idempotencyKeyParameter,
} from "./routes/openapi-idempotency.ts";
import { planEntitlementRoutes } from "./routes/plan-entitlements.ts";
import { planPriceRoutes } from "./routes/plan-prices.ts";
import { planRoutes } from "./routes/plans.ts";
import { subscriptionRoutes } from "./routes/subscriptions.ts";
import { tenantRoutes } from "./routes/tenants.ts";
import { usageRoutes } from "./routes/usage.ts";
import { usageAlertRoutes } from "./routes/usage-alerts.ts";
import { usageDeadLetterRoutes } from "./routes/usage-dead-letters.ts";
import { userRoutes } from "./routes/users.ts";
import { createRouter } from "./routes/validation.ts";
import { webhookEndpointRoutes } from "./routes/webhook-endpoints.ts";
import { webhookRoutes } from "./routes/webhooks.ts";
import type { ApiKeyVerifier } from "./services/api-key-verification.ts";
import { relayTenantEventsQuietly } from "./services/tenant-events.ts";

export const API_VERSION = "1.0.0";
export const API_PREFIX = "/api/v1";

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

/** Validation failures become 400s whose `message` lists every problem, as class-validator did. */
export function createApp(options: AppOptions = {}) {
  const mailSender = options.mailSender ?? new LoggingMailSender();
  const { apiKeyVerifier } = options;
  const app = createRouter();

  app.use(correlationId());
  app.use(secureHeaders());
  app.use(
    cors({
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
    }),
  );
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
  installErrorHandling(app, renderBillingProblem);

  app.route("/", healthRoutes);
  app.route(API_PREFIX, authRoutes);
  app.route(API_PREFIX, userRoutes);
  app.route(API_PREFIX, tenantRoutes);
  app.route(API_PREFIX, billingDetailsRoutes);
  app.route(API_PREFIX, couponRoutes);
  app.route(API_PREFIX, apiKeyRoutes);
  app.route(API_PREFIX, planRoutes);
  app.route(API_PREFIX, planPriceRoutes);
  app.route(API_PREFIX, featureRoutes);
  app.route(API_PREFIX, planEntitlementRoutes);
  app.route(API_PREFIX, subscriptionRoutes);
  app.route(API_PREFIX, entitlementRoutes);
  app.route(API_PREFIX, invoiceRoutes);
  app.route(API_PREFIX, creditRoutes);
  app.route(API_PREFIX, billingRoutes);
  app.route(API_PREFIX, webhookRoutes);
  app.route(API_PREFIX, webhookEndpointRoutes);
  app.route(API_PREFIX, usageRoutes);
  app.route(API_PREFIX, usageAlertRoutes);
  app.route(API_PREFIX, usageDeadLetterRoutes);
  app.route(API_PREFIX, auditEventRoutes);
  app.route(API_PREFIX, adminTenantRoutes);
  // The browser console calls the routes above in-process, with the
  // session's access token, so every write keeps the API's rules.
  app.route(
    "/console",
    consoleRoutes((request, env, ctx) => app.fetch(request, env, ctx)),
  );

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
  return app;
}
