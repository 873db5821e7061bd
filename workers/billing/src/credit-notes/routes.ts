import { database } from "@edge-platform/shared/db/client";
import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticate,
  bearerSecurity,
  billingContext,
  createRouter,
  errors,
  json,
  jsonBody,
  moneyReaders,
  pdfAttachment,
  requireSettlementActor,
  TenantHeaderSchema,
  UuidParam,
  withAccessErrors,
} from "../platform/index.ts";
import { creditNotePdf } from "./documents.ts";
import type { CreditNoteRouteServices } from "./route-services.ts";
import {
  CreateCreditNoteBody,
  CreditNoteListQuery,
  CreditNotePageSchema,
  CreditNoteSchema,
} from "./schemas.ts";

/** Issuing is the platform's (administrators, any tenant via x-tenant-id); the tenant's money readers read. */
const issuers = [authenticate(), billingContext(), requireSettlementActor()];
const readers = moneyReaders();
const IdParams = z.object({ id: UuidParam("id") });

const create = createRoute({
  method: "post",
  path: "/invoices/{id}/credit-notes",
  tags: ["credit notes"],
  summary:
    "A credit note on an OPEN or PAID invoice: lines credited before tax, tax in proportion; settled by REDUCE (less due), REFUND (through the provider) or CREDIT (credit balance) (platform admins); 409 when it would credit more than is left",
  security: bearerSecurity,
  middleware: issuers,
  request: {
    headers: TenantHeaderSchema,
    params: IdParams,
    body: jsonBody(CreateCreditNoteBody),
  },
  responses: withAccessErrors("tenantMember", {
    201: json(CreditNoteSchema, "The credit note"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
  }),
});

const list = createRoute({
  method: "get",
  path: "/credit-notes",
  tags: ["credit notes"],
  summary: "The tenant's credit notes with their lines, newest first (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: readers,
  request: { headers: TenantHeaderSchema, query: CreditNoteListQuery },
  responses: withAccessErrors("tenantMember", {
    200: json(CreditNotePageSchema, "A page"),
    400: errors[400],
  }),
});

const getOne = createRoute({
  method: "get",
  path: "/credit-notes/{id}",
  tags: ["credit notes"],
  summary: "One credit note with its lines (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: readers,
  request: { headers: TenantHeaderSchema, params: IdParams },
  responses: withAccessErrors("tenantMember", {
    200: json(CreditNoteSchema, "The credit note"),
    400: errors[400],
    404: errors[404],
  }),
});

const pdf = createRoute({
  method: "get",
  path: "/credit-notes/{id}/pdf",
  tags: ["credit notes"],
  summary:
    "One credit note as a PDF: seller and tenant, number, the invoice it corrects, reason, settlement, lines, subtotal, tax and total (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: readers,
  request: { headers: TenantHeaderSchema, params: IdParams },
  responses: withAccessErrors("tenantMember", {
    200: {
      description: "The credit note as application/pdf (attachment named after its number)",
      content: { "application/pdf": { schema: z.string().openapi({ format: "binary" }) } },
    },
    400: errors[400],
    404: errors[404],
  }),
});

export const creditNoteRoutes = ({ creditNoteService }: CreditNoteRouteServices) =>
  createRouter()
    .openapi(create, async (c) =>
      c.json(
        await creditNoteService(c).create(
          c.var.billingContext,
          c.req.valid("param").id,
          c.req.valid("json"),
        ),
        201,
      ),
    )
    .openapi(list, async (c) => {
      const { page, limit, invoiceId } = c.req.valid("query");
      return c.json(
        await creditNoteService(c).list(c.var.billingContext, { page, limit }, { invoiceId }),
        200,
      );
    })
    .openapi(getOne, async (c) =>
      c.json(await creditNoteService(c).get(c.var.billingContext, c.req.valid("param").id), 200),
    )
    .openapi(pdf, async (c) =>
      pdfAttachment(
        c,
        await creditNotePdf(
          database(c.env.DB),
          creditNoteService(c),
          c.env,
          c.var.billingContext,
          c.req.valid("param").id,
        ),
      ),
    );
