// The invoicing capability's only entry for the rest of the worker (what it owns: README.md).
export { BillingCycle, type BillingCycleOptions } from "./billing-cycle.ts";
export { allowanceShare, billableAllowance, type InvoiceDraft } from "./domain/invoice.ts";
export { issueProgressiveInvoice } from "./progressive-invoices.ts";
export type { InvoicingRouteServices } from "./route-services.ts";
export { invoiceRoutes } from "./routes.ts";
export type { InvoiceBody } from "./schemas.ts";
export { finalizeInvoice, InvoiceService } from "./service.ts";
export { draftInvoiceStatements } from "./storage.ts";
export { runSubscriptionJobs } from "./subscription-jobs.ts";
