export { billingRoutes } from "./billing-routes.ts";
export {
  GRACE_PERIOD_DAYS,
  PENDING_RECONCILE_AFTER_MINUTES,
  pendingReconcileMinutes,
} from "./domain/payment.ts";
export { LedgerService } from "./ledger-service.ts";
export { webhookRoutes } from "./provider-webhook-routes.ts";
export { finishWebhookEvent } from "./provider-webhook-storage.ts";
export {
  processWebhookEvent,
  type WebhookQueueMessage,
  WebhookService,
} from "./provider-webhooks.ts";
export { type PaymentProvider, ProviderUnavailableError } from "./providers/payment-provider.ts";
export { type PaymentProviderSettings, paymentProviderFromEnv } from "./providers/providers.ts";
export { PaymentService, refreshCreditsOf } from "./service.ts";
