// The payments capability's only entry for the rest of the worker (what it owns: README.md).
export { billingRoutes } from "./billing-routes.ts";
export {
  GRACE_PERIOD_DAYS,
  PENDING_RECONCILE_AFTER_MINUTES,
  pendingReconcileMinutes,
} from "./domain/payment.ts";
export {
  findInvoiceById,
  type InvoiceRow,
  paymentReferenceOf,
  payStatements,
} from "./invoice-settlement-storage.ts";
export { LedgerService } from "./ledger-service.ts";
export {
  AVAILABLE_CREDIT_SQL,
  availableCreditOf,
  INSERT_LEDGER_FROM_INVOICE,
} from "./ledger-storage.ts";
export { consumeWebhookBatch, isWebhookQueue } from "./provider-webhook-job.ts";
export { webhookRoutes } from "./provider-webhook-routes.ts";
export { type WebhookQueueMessage, WebhookService } from "./provider-webhooks.ts";
export { type PaymentProvider, ProviderUnavailableError } from "./providers/payment-provider.ts";
export { type PaymentProviderSettings, paymentProviderFromEnv } from "./providers/providers.ts";
export { creditNoteEventRow, refundOutcomeStatements } from "./refund-storage.ts";
export type { PaymentRouteServices } from "./route-services.ts";
export { PaymentService, refreshCreditsOf } from "./service.ts";
