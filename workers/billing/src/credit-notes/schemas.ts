import {
  creditNoteReasons,
  creditNoteSettlements,
  refundStatuses,
} from "@edge-platform/shared/db/schema/billing";
import { z } from "@hono/zod-openapi";
import { CentsSchema, PageQuerySchema, pageOf, UuidParam } from "../platform/index.ts";

// Request and response schemas of the credit-note routes. Money is integer cents.

/** Lines one note may name (an invoice has at most this many charges worth crediting in one go). */
export const MAX_CREDIT_NOTE_LINES = 100;
const MAX_LINE_CENTS = 1_000_000_000_000;

const LineBody = z
  .object({
    lineItemId: z
      .string({ message: "lines[].lineItemId must be an invoice line's id" })
      .regex(
        /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
        "lines[].lineItemId must be an invoice line's id (a UUID)",
      )
      .transform((value) => value.toLowerCase()),
    amount: z
      .number({ message: "lines[].amount must be a whole number of cents" })
      .int("lines[].amount must be a whole number of cents")
      .min(1, "lines[].amount must be at least 1 cent")
      .max(MAX_LINE_CENTS, "lines[].amount is too large"),
  })
  .strict();

export const CreateCreditNoteBody = z
  .object({
    reason: z.enum(creditNoteReasons, {
      message: `reason must be one of: ${creditNoteReasons.join(", ")}`,
    }),
    settlement: z.enum(creditNoteSettlements, {
      message: `settlement must be one of: ${creditNoteSettlements.join(", ")}`,
    }),
    lines: z
      .array(LineBody, { message: "lines must be a list of {lineItemId, amount}" })
      .min(1, "lines must name at least one invoice line")
      .max(MAX_CREDIT_NOTE_LINES, `lines may name at most ${MAX_CREDIT_NOTE_LINES} invoice lines`)
      .openapi({ description: "The invoice's lines and the cents credited on each, before tax" }),
    memo: z
      .string({ message: "memo must be a string" })
      .max(500, "memo must be at most 500 characters")
      .optional(),
  })
  .strict()
  .openapi("CreateCreditNote");

export const CreditNoteListQuery = PageQuerySchema.extend({
  invoiceId: UuidParam("invoiceId")
    .optional()
    .openapi({ param: { name: "invoiceId", in: "query" } }),
}).strict();

export const CreditNoteSchema = z
  .object({
    id: z.string(),
    number: z.string().openapi({ example: "CN-2026-000001" }),
    invoiceId: z.string(),
    tenantId: z.string(),
    reason: z.enum(creditNoteReasons),
    settlement: z.enum(creditNoteSettlements),
    currency: z.string(),
    subtotal: CentsSchema.openapi({ description: "The lines credited, before tax" }),
    tax: CentsSchema.openapi({
      description: "The invoice's tax in proportion to the subtotal credited, rounded half up",
    }),
    total: CentsSchema,
    memo: z.string().nullable(),
    refundStatus: z.enum(refundStatuses).nullable().openapi({
      description:
        "REFUND notes: PENDING until the provider answers; FAILED leaves the total on the tenant's credit balance",
    }),
    refundFailureReason: z.string().nullable(),
    createdAt: z.string(),
    lines: z.array(
      z.object({
        id: z.string(),
        lineItemId: z.string(),
        description: z.string(),
        amount: CentsSchema,
      }),
    ),
  })
  .openapi("CreditNote");

export const CreditNotePageSchema = pageOf(CreditNoteSchema).openapi("CreditNotePage");
