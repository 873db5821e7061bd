import { ledgerEntryTypes, paymentAttemptStatuses } from "@edge-platform/shared/db/schema/billing";
import { z } from "@hono/zod-openapi";
import { CentsSchema, enumQuery, PageQuerySchema } from "../platform/index.ts";

// Request and response schemas of the ledger, balance, payment and provider
// webhook routes. Money is integer cents.

export const CurrencySchema = z
  .string()
  .regex(/^[A-Za-z]{3}$/, "currency must be a 3-letter ISO 4217 code")
  .transform((value) => value.toLowerCase())
  .openapi({ example: "usd" });

export const LedgerQuery = PageQuerySchema.extend({
  type: enumQuery("type", ledgerEntryTypes),
  currency: CurrencySchema.optional(),
}).strict();

export const BalanceQuery = z.object({ currency: CurrencySchema.optional() }).strict();

export const PaymentListQuery = PageQuerySchema.extend({
  status: enumQuery("status", paymentAttemptStatuses),
}).strict();

export const LedgerEntrySchema = z
  .object({
    id: z.string(),
    tenantId: z.string(),
    invoiceId: z.string().nullable(),
    type: z.enum(ledgerEntryTypes),
    description: z.string(),
    debit: CentsSchema,
    credit: CentsSchema,
    currency: z.string(),
    externalReference: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi("LedgerEntry");

export const BalanceSchema = z
  .object({
    tenantId: z.string(),
    currency: z.string(),
    balance: CentsSchema.openapi({
      description: "Σdebit − Σcredit; positive means the tenant owes",
    }),
    totalCharged: CentsSchema,
    totalPaid: CentsSchema,
    creditBalance: CentsSchema.openapi({
      description:
        "Money received that no invoice needed (a payment for a VOID or already PAID invoice), not yet applied; the next finalized invoice uses it",
    }),
    unit: z.literal("cents"),
    asOf: z.string(),
  })
  .openapi("Balance");

export const PaymentAttemptSchema = z
  .object({
    id: z.string(),
    invoiceId: z.string(),
    invoiceNumber: z.string().nullable(),
    tenantId: z.string(),
    providerPaymentId: z.string().nullable(),
    provider: z.string(),
    status: z.enum(paymentAttemptStatuses),
    amount: CentsSchema,
    currency: z.string(),
    failureReason: z.string().nullable(),
    attemptNumber: z.number().int(),
    retryOf: z.string().nullable(),
    nextRetryAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("PaymentAttempt");

export const PaymentAttemptDetailSchema = PaymentAttemptSchema.extend({
  providerResponse: z.record(z.string(), z.unknown()).nullable(),
}).openapi("PaymentAttemptDetail");

export const WebhookReceivedSchema = z
  .object({ received: z.literal(true), eventId: z.string(), duplicate: z.boolean() })
  .openapi("WebhookReceived");

export const FakeWebhookBody = z
  .object({
    id: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .openapi({ description: "Event id (dedup key); a random one when left out" }),
    type: z.string().min(1).max(100).openapi({ example: "payment.succeeded" }),
    providerPaymentId: z.string().min(1).max(255),
    amount: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    currency: CurrencySchema,
    failureReason: z.string().max(1000).optional(),
  })
  .strict();
