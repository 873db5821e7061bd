import { database } from "@edge-platform/shared/db/client";
import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticate,
  bearerSecurity,
  billingContext,
  createRouter,
  enforceLimit,
  errors,
  json,
  jsonBody,
  moneyReaders,
  pdfAttachment,
  rateLimited,
  requireSettlementActor,
  TenantHeaderSchema,
  UuidParam,
  withAccessErrors,
} from "../platform/index.ts";
import { configuredSeller, invoicePdf } from "./documents.ts";
import type { InvoicingRouteServices } from "./route-services.ts";
import {
  GenerateInvoiceBody,
  InvoiceListQuery,
  InvoicePageSchema,
  InvoiceSchema,
  LineItemListSchema,
  UpcomingInvoiceSchema,
} from "./schemas.ts";

/** Tenant OWNER, ADMIN and BILLING read money (not DEVELOPER); platform administrators read any tenant's. */
/** Settlement is the platform's: platform administrators (any tenant, via x-tenant-id) and the billing cycle. */
const settlement = [authenticate(), billingContext(), requireSettlementActor()];
const reader = moneyReaders();
const IdParams = z.object({ id: UuidParam("id") });
const GENERATE_LIMIT = { bucket: "invoice-generate:tenant", limit: 5, windowSeconds: 60 };

const generate = createRoute({
  method: "post",
  path: "/invoices/generate",
  tags: ["invoices"],
  summary:
    "A DRAFT invoice for the current period of the tenant's subscription, or with replacesInvoiceId a replacement for a VOID invoice's period (platform admins; 5 a minute); 409 if the period has a live one",
  security: bearerSecurity,
  middleware: settlement,
  request: {
    headers: TenantHeaderSchema,
    body: { ...jsonBody(GenerateInvoiceBody), required: false },
  },
  responses: withAccessErrors(rateLimited("tenantMember"), {
    201: json(InvoiceSchema, "The DRAFT invoice"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
  }),
});

const list = createRoute({
  method: "get",
  path: "/invoices",
  tags: ["invoices"],
  summary: "The tenant's invoices with their lines, newest first (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: reader,
  request: { headers: TenantHeaderSchema, query: InvoiceListQuery },
  responses: withAccessErrors("tenantMember", {
    200: json(InvoicePageSchema, "A page"),
    400: errors[400],
  }),
});

const upcoming = createRoute({
  method: "get",
  path: "/invoices/upcoming",
  tags: ["invoices"],
  summary:
    "The invoice the current period would produce if it closed now, computed as the billing cycle does and never stored (OWNER, ADMIN, BILLING); 404 without a subscription, 409 in a trial, a pause, or once the period's invoice is issued",
  security: bearerSecurity,
  middleware: reader,
  request: { headers: TenantHeaderSchema },
  responses: withAccessErrors("tenantMember", {
    200: json(UpcomingInvoiceSchema, "The upcoming invoice"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
  }),
});

const getOne = createRoute({
  method: "get",
  path: "/invoices/{id}",
  tags: ["invoices"],
  summary: "One invoice with its lines (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: reader,
  request: { headers: TenantHeaderSchema, params: IdParams },
  responses: withAccessErrors("tenantMember", {
    200: json(InvoiceSchema, "The invoice"),
    400: errors[400],
    404: errors[404],
  }),
});

const lineItems = createRoute({
  method: "get",
  path: "/invoices/{id}/line-items",
  tags: ["invoices"],
  summary: "An invoice's lines in order (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: reader,
  request: { headers: TenantHeaderSchema, params: IdParams },
  responses: withAccessErrors("tenantMember", {
    200: json(LineItemListSchema, "The lines"),
    400: errors[400],
    404: errors[404],
  }),
});

const pdf = createRoute({
  method: "get",
  path: "/invoices/{id}/pdf",
  tags: ["invoices"],
  summary:
    "One invoice as a PDF: seller and tenant, number, dates, lines, subtotal, discount, tax, credit applied, total, currency and status (a VOID invoice says so on its face) (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: reader,
  request: { headers: TenantHeaderSchema, params: IdParams },
  responses: withAccessErrors("tenantMember", {
    200: {
      description: "The invoice as application/pdf (attachment named after its number)",
      content: { "application/pdf": { schema: z.string().openapi({ format: "binary" }) } },
    },
    400: errors[400],
    404: errors[404],
  }),
});

const action = (path: string, summary: string) =>
  createRoute({
    method: "post",
    path,
    tags: ["invoices"],
    summary,
    security: bearerSecurity,
    middleware: settlement,
    request: { headers: TenantHeaderSchema, params: IdParams },
    responses: withAccessErrors("tenantMember", {
      201: json(InvoiceSchema, "Done"),
      400: errors[400],
      404: errors[404],
    }),
  });

const finalize = action(
  "/invoices/{id}/finalize",
  "DRAFT -> OPEN: credit balance applied, number, CHARGE entry, then the first payment attempt (platform admins)",
);
const voidInvoice = action(
  "/invoices/{id}/void",
  "DRAFT, OPEN or UNCOLLECTIBLE -> VOID; a CREDIT reverses a CHARGE; the period can then be reissued (platform admins)",
);
const markPaid = action(
  "/invoices/{id}/mark-paid",
  "OPEN or UNCOLLECTIBLE -> PAID outside the provider, with a PAYMENT entry (platform admins)",
);

export const invoiceRoutes = ({ invoiceService }: InvoicingRouteServices) =>
  createRouter()
    .openapi(generate, async (c) => {
      await enforceLimit(c, GENERATE_LIMIT, c.var.billingContext.tenant.id);
      const body = c.req.valid("json") as { replacesInvoiceId?: string } | undefined;
      const service = invoiceService(c);
      return c.json(
        body?.replacesInvoiceId
          ? await service.reissue(c.var.billingContext, body.replacesInvoiceId)
          : await service.generate(c.var.billingContext),
        201,
      );
    })
    .openapi(list, async (c) => {
      const { page, limit, status } = c.req.valid("query");
      return c.json(
        await invoiceService(c).list(c.var.billingContext, { page, limit }, { status }),
        200,
      );
    })
    // Before /invoices/{id}, so "upcoming" is not read as an id.
    .openapi(upcoming, async (c) =>
      c.json(await invoiceService(c).upcoming(c.var.billingContext), 200),
    )
    .openapi(getOne, async (c) =>
      c.json(await invoiceService(c).get(c.var.billingContext, c.req.valid("param").id), 200),
    )
    .openapi(lineItems, async (c) =>
      c.json(await invoiceService(c).lineItems(c.var.billingContext, c.req.valid("param").id), 200),
    )
    .openapi(pdf, async (c) =>
      pdfAttachment(
        c,
        await invoicePdf(
          database(c.env.DB),
          invoiceService(c),
          configuredSeller(c.env),
          c.var.billingContext,
          c.req.valid("param").id,
        ),
      ),
    )
    .openapi(finalize, async (c) =>
      c.json(await invoiceService(c).finalize(c.var.billingContext, c.req.valid("param").id), 201),
    )
    .openapi(voidInvoice, async (c) =>
      c.json(await invoiceService(c).void(c.var.billingContext, c.req.valid("param").id), 201),
    )
    .openapi(markPaid, async (c) =>
      c.json(await invoiceService(c).markPaid(c.var.billingContext, c.req.valid("param").id), 201),
    );
