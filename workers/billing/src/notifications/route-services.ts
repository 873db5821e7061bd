import type { Context } from "hono";
import type { AppEnv } from "../platform/index.ts";
import type { UsageAlertService } from "./usage-alert-service.ts";
import type { WebhookEndpointService } from "./webhook-endpoint-service.ts";

/**
 * What the notifications routes are handed: each builds a service for one request.
 * The worker's composition root (src/services.ts) implements it.
 */
export interface NotificationRouteServices {
  usageAlertService(c: Context<AppEnv>): UsageAlertService;
  webhookEndpointService(c: Context<AppEnv>): WebhookEndpointService;
}
