export type { BillingCycle, BillingSettleReport } from "./billing-cycle.ts";
export {
  configuredPaymentProvider,
  consumeWebhookBatch,
  isWebhookQueue,
  scheduledBillingCycle,
} from "./billing-cycle-job.ts";
export {
  dueTrialsIn,
  periodsToClose,
  type TenantScope,
  unbilledCancellations,
} from "./billing-cycle-storage.ts";
export { ledgerService, paymentService, webhookService } from "./context.ts";
export { allowanceShare, billableAllowance, type InvoiceDraft } from "./domain/invoice.ts";
export { issueProgressiveInvoice } from "./progressive-invoices.ts";
export { invoiceRoutes, moneyReader } from "./routes.ts";
export {
  BalanceQuery,
  BalanceSchema,
  FakeWebhookBody,
  type InvoiceBody,
  LedgerEntrySchema,
  LedgerQuery,
  PaymentAttemptDetailSchema,
  PaymentAttemptSchema,
  PaymentListQuery,
  WebhookReceivedSchema,
} from "./schemas.ts";
export { finalizeInvoice } from "./service.ts";
export {
  draftInvoiceStatements,
  findInvoiceById,
  type InvoiceRow,
  paymentReferenceOf,
  payStatements,
  receivedCreditStatements,
} from "./storage.ts";
