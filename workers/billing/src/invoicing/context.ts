import { database } from "@edge-platform/shared/db/client";
import type { Context } from "hono";
import { auditContext } from "../audit/index.ts";
import {
  LedgerService,
  PaymentService,
  refreshCreditsOf,
  WebhookService,
} from "../payments/index.ts";
import type { AppEnv } from "../platform/index.ts";
import { configuredPaymentProvider } from "./billing-cycle-job.ts";
import { InvoiceService } from "./service.ts";

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
