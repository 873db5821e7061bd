import {
  invoiceKinds,
  invoiceStatuses,
  lineItemKinds,
} from "@edge-platform/shared/db/schema/billing";
import { chargeModels } from "@edge-platform/shared/db/schema/catalog";
import { z } from "@hono/zod-openapi";
import { CentsSchema, enumQuery, PageQuerySchema, pageOf } from "../platform/index.ts";

// Request and response schemas of the invoice, billing and webhook routes.
// Money is integer cents; unit prices are integer micro-cents.

export const GenerateInvoiceBody = z
  .object({
    replacesInvoiceId: z
      .string({ message: "replacesInvoiceId must be a string" })
      .regex(
        // Both cases without a regex flag (the pattern is published in the OpenAPI document).
        /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
        "replacesInvoiceId must be a UUID",
      )
      .optional()
      .openapi({
        description:
          "A VOID invoice of the tenant: the replacement covers the same subscription, kind and period, with a new number",
      }),
  })
  .strict()
  .openapi("GenerateInvoiceRequest");

/** How a tiered or package USAGE line was priced (null on every other line). */
export const BilledChargeSchema = z
  .object({
    model: z.enum(chargeModels),
    tiers: z
      .array(
        z.object({
          from: z.number().int().openapi({ description: "The tier's first billed unit" }),
          upTo: z.number().int().nullable(),
          units: z.number().int().openapi({ description: "Units this line billed in the tier" }),
          unitPrice: z.number().int().openapi({ description: "Micro-cents per unit" }),
          flatFee: z
            .number()
            .int()
            .openapi({ description: "Cents this line charged as the tier's flat fee" }),
        }),
      )
      .optional(),
    packages: z
      .object({
        count: z.number().int(),
        packageSize: z.number().int(),
        packagePrice: z.number().int().openapi({ description: "Cents" }),
      })
      .optional(),
  })
  .nullable()
  .openapi("BilledCharge");

export const LineItemSchema = z
  .object({
    id: z.string(),
    invoiceId: z.string(),
    kind: z.enum(lineItemKinds),
    description: z.string(),
    featureLookupKey: z.string().nullable(),
    usageWindowKey: z.string().nullable(),
    quantity: z.number().openapi({
      description:
        "Units billed; a fraction for meters whose quantity is one (AVG, WEIGHTED_SUM, SUM of fractional values)",
    }),
    unitPriceMicroCents: z.number().int().openapi({
      description: "Price per unit in micro-cents (1/100 cent); a decimal price rounded half up",
    }),
    unitPriceDecimal: z.string().nullable().openapi({
      description:
        "USAGE lines priced by overagePriceDecimal: the exact price per unit in micro-cents",
      example: "0.15",
    }),
    dimensions: z
      .record(z.string(), z.union([z.string(), z.number(), z.null()]))
      .nullable()
      .openapi({
        description:
          "USAGE lines of a feature whose meter has groupBy: the group's property values (one line per combination); {} for the overflow group",
        example: { model: "large", direction: "input" },
      }),
    amount: CentsSchema,
    sortOrder: z.number().int(),
    pricing: BilledChargeSchema,
    creditGrantId: z.string().nullable().openapi({
      description: "CREDITS lines: the credit grant whose draws the line takes off",
    }),
    createdAt: z.string(),
  })
  .openapi("InvoiceLineItem");

export const InvoiceSchema = z
  .object({
    id: z.string(),
    tenantId: z.string(),
    subscriptionId: z.string(),
    kind: z.enum(invoiceKinds),
    invoiceNumber: z.string().nullable().openapi({ example: "INV-2026-000001" }),
    status: z.enum(invoiceStatuses),
    currency: z.string(),
    subtotal: CentsSchema.openapi({ description: "The charges, before discount, tax and credit" }),
    discount: CentsSchema.openapi({ description: "Cents a coupon took off the subtotal" }),
    tax: CentsSchema.openapi({ description: "Cents of tax on subtotal - discount" }),
    taxRate: z.number().nullable().openapi({
      description: "The tax rate (percent) in force when the invoice was finalized; null: none",
    }),
    total: CentsSchema.openapi({ description: "subtotal - discount + tax - credit applied" }),
    creditedTotal: CentsSchema.openapi({
      description: "Cents of the invoice's credit notes, every settlement (never above total)",
    }),
    amountDue: CentsSchema.openapi({
      description:
        "What is still to be paid: total less REDUCE credit notes while OPEN or UNCOLLECTIBLE (DRAFT: total; PAID and VOID: 0)",
    }),
    periodStart: z.string(),
    periodEnd: z.string(),
    dueDate: z.string().nullable(),
    finalizedAt: z.string().nullable(),
    paidAt: z.string().nullable(),
    voidedAt: z.string().nullable(),
    uncollectibleAt: z.string().nullable(),
    notes: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    lineItems: z.array(LineItemSchema),
  })
  .openapi("Invoice");

/** An invoice as the API answers it (the console renders this body). */
export type InvoiceBody = z.infer<typeof InvoiceSchema>;

export const UpcomingInvoiceSchema = z
  .object({
    tenantId: z.string(),
    subscriptionId: z.string(),
    kind: z.enum(invoiceKinds),
    currency: z.string(),
    subtotal: CentsSchema,
    discount: CentsSchema,
    tax: CentsSchema.openapi({ description: "At the tenant's tax rate now" }),
    taxRate: z.number().nullable(),
    total: CentsSchema.openapi({
      description: "Integer cents, after the discount, tax and credit balance finalize would apply",
    }),
    periodStart: z.string(),
    periodEnd: z.string(),
    notes: z.string().nullable(),
    asOf: z
      .string()
      .openapi({ description: "When it was computed; usage after this is not on it" }),
    lineItems: z.array(
      LineItemSchema.omit({ id: true, invoiceId: true, createdAt: true }).openapi(
        "UpcomingInvoiceLineItem",
      ),
    ),
  })
  .openapi("UpcomingInvoice");

export const InvoicePageSchema = pageOf(InvoiceSchema);
export const LineItemListSchema = z.object({ data: z.array(LineItemSchema) });

export const InvoiceListQuery = PageQuerySchema.extend({
  status: enumQuery("status", invoiceStatuses),
}).strict();
