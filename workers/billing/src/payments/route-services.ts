import type { Context } from "hono";
import type { AppEnv } from "../platform/index.ts";
import type { LedgerService } from "./ledger-service.ts";
import type { WebhookService } from "./provider-webhooks.ts";
import type { PaymentService } from "./service.ts";

/**
 * What the payments routes are handed: each builds a service for one request.
 * The worker's composition root (src/services.ts) implements it.
 */
export interface PaymentRouteServices {
  paymentService(c: Context<AppEnv>): PaymentService;
  ledgerService(c: Context<AppEnv>): LedgerService;
  webhookService(c: Context<AppEnv>): WebhookService;
}
