// The invoicing capability's only entry for the rest of the worker (what it owns: README.md).
export { BillingCycle, type BillingCycleOptions } from "./billing-cycle.ts";
export { billedParty, configuredSeller } from "./documents.ts";
export { allowanceShare, billableAllowance, type InvoiceDraft } from "./domain/invoice.ts";
// What invoice and credit-note PDFs share: page, fonts, parties, facts, totals, footers.
export * as documentPdf from "./domain/pdf-writer.ts";
export { type InvoiceParty, winAnsiSafe } from "./domain/pdf-writer.ts";
export { issueProgressiveInvoice } from "./progressive-invoices.ts";
export type { InvoicingRouteServices } from "./route-services.ts";
export { invoiceRoutes } from "./routes.ts";
export type { InvoiceBody } from "./schemas.ts";
export { amountDueOf, finalizeInvoice, InvoiceService } from "./service.ts";
export { draftInvoiceStatements } from "./storage.ts";
export { runSubscriptionJobs } from "./subscription-jobs.ts";
