import { database } from "@edge-platform/shared/db/client";
import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";
import { configuredPaymentProvider } from "../jobs/billing-cycle.ts";
import { auditContext } from "../middleware/audit-context.ts";
import { InvoiceService } from "../services/invoices.ts";
import { LedgerService } from "../services/ledger.ts";
import { PaymentService, refreshCreditsOf } from "../services/payments.ts";
import { WebhookService } from "../services/webhooks.ts";

export const paymentService = (c: Context<AppEnv>) =>
  new PaymentService(
    database(c.env.DB),
    c.env.DB,
    configuredPaymentProvider(c.env),
    auditContext(c),
    refreshCreditsOf(c.env),
  );
export const invoiceService = (c: Context<AppEnv>) =>
  new InvoiceService(
    database(c.env.DB),
    c.env.DB,
    c.env.ENTITLEMENT_COUNTER,
    paymentService(c),
    auditContext(c),
  );
export const ledgerService = (c: Context<AppEnv>) => new LedgerService(database(c.env.DB));
export const webhookService = (c: Context<AppEnv>) =>
  new WebhookService(database(c.env.DB), c.env.DB, c.env.WEBHOOK_EVENTS_QUEUE);
