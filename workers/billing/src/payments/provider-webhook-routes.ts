import { ApiError } from "@edge-platform/shared/http/api-error";
import { createRoute, z } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../platform/index.ts";
import {
  createRouter,
  errors,
  json,
  jsonBody,
  SIGNATURE_HEADER,
  verifyWebhookSignature,
  withAccessErrors,
} from "../platform/index.ts";
import { isDevelopmentEnvironment } from "./providers/providers.ts";
import type { PaymentRouteServices } from "./route-services.ts";
import { FakeWebhookBody, WebhookReceivedSchema } from "./schemas.ts";

const SIGNATURE_FAILURES = {
  missing_secret: "Webhook signature cannot be verified: no webhook secret is configured",
  malformed: `Webhook signature missing or malformed (${SIGNATURE_HEADER}: t=<unix seconds>,v1=<hex HMAC-SHA256>)`,
  stale: "Webhook signature timestamp is outside the 300-second tolerance",
  mismatch: "Webhook signature does not match the payload",
} as const;

/** The fake webhook exists only in development and test; elsewhere it is an unknown route. */
const developmentOnly = () =>
  createMiddleware<AppEnv>(async (c, next) => {
    if (!isDevelopmentEnvironment(c.env.ENVIRONMENT)) throw new ApiError(404, "Not Found");
    await next();
  });

const payprovider = createRoute({
  method: "post",
  path: "/webhooks/payprovider",
  tags: ["webhooks"],
  summary:
    "Payment-provider events (Stripe format), signed with PAYPROVIDER_WEBHOOK_SECRET; stored, answered, then processed from a queue",
  request: {
    headers: z.object({ [SIGNATURE_HEADER]: z.string().optional() }),
  },
  responses: withAccessErrors("public", {
    200: json(WebhookReceivedSchema, "Stored (or already stored) and queued"),
    400: errors[400],
  }),
});

const fake = createRoute({
  method: "post",
  path: "/webhooks/fake",
  tags: ["webhooks"],
  summary:
    "Development and test only (404 elsewhere): an unsigned payment event, processed like a provider's",
  middleware: [developmentOnly()],
  request: { body: jsonBody(FakeWebhookBody) },
  responses: withAccessErrors("public", {
    200: json(WebhookReceivedSchema, "Stored and queued"),
    400: errors[400],
    404: errors[404],
  }),
});

export const webhookRoutes = ({ webhookService }: PaymentRouteServices) =>
  createRouter()
    .openapi(payprovider, async (c) => {
      // The exact bytes that were signed (buffered by bufferRequestBody).
      const raw = await c.req.text();
      const now = new Date();
      const check = await verifyWebhookSignature(
        c.env.PAYPROVIDER_WEBHOOK_SECRET,
        c.req.header(SIGNATURE_HEADER),
        raw,
        Math.floor(now.getTime() / 1000),
      );
      if (!check.ok) {
        if (check.reason === "missing_secret") {
          console.error(
            JSON.stringify({ level: "error", msg: "PAYPROVIDER_WEBHOOK_SECRET is not set" }),
          );
        }
        throw new ApiError(400, SIGNATURE_FAILURES[check.reason], { code: "invalid_signature" });
      }
      let event: { id?: unknown; type?: unknown };
      try {
        event = JSON.parse(raw);
      } catch {
        throw new ApiError(400, "Webhook body is not JSON");
      }
      if (
        !event ||
        typeof event !== "object" ||
        typeof event.id !== "string" ||
        event.id.length === 0 ||
        event.id.length > 255 ||
        typeof event.type !== "string" ||
        event.type.length > 100
      ) {
        throw new ApiError(400, "Webhook event needs a string id and type");
      }
      const received = await webhookService(c).receive({
        provider: "payprovider",
        providerEventId: event.id,
        eventType: event.type,
        rawPayload: raw,
        now,
      });
      return c.json(received, 200);
    })
    .openapi(fake, async (c) => {
      const body = c.req.valid("json");
      const providerEventId = body.id ?? `fake_evt_${crypto.randomUUID().replaceAll("-", "")}`;
      const received = await webhookService(c).receive({
        provider: "fake",
        providerEventId,
        eventType: body.type,
        rawPayload: JSON.stringify({ ...body, id: providerEventId }),
        now: new Date(),
      });
      return c.json(received, 200);
    });
