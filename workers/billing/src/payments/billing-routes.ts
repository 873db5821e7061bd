import { createRoute, z } from "@hono/zod-openapi";
import {
  bearerSecurity,
  createRouter,
  errors,
  json,
  moneyReaders,
  pageOf,
  TenantHeaderSchema,
  UuidParam,
  withAccessErrors,
} from "../platform/index.ts";
import type { PaymentRouteServices } from "./route-services.ts";
import {
  BalanceQuery,
  BalanceSchema,
  LedgerEntrySchema,
  LedgerQuery,
  PaymentAttemptDetailSchema,
  PaymentAttemptSchema,
  PaymentListQuery,
} from "./schemas.ts";

const reader = moneyReaders();

const ledger = createRoute({
  method: "get",
  path: "/billing/ledger",
  tags: ["billing"],
  summary: "The tenant's ledger entries, newest first (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: reader,
  request: { headers: TenantHeaderSchema, query: LedgerQuery },
  responses: withAccessErrors("tenantMember", {
    200: json(pageOf(LedgerEntrySchema), "A page"),
    400: errors[400],
  }),
});

const balance = createRoute({
  method: "get",
  path: "/billing/balance",
  tags: ["billing"],
  summary:
    "Σdebit − Σcredit of the tenant's entries in one currency (default usd); never summed across currencies",
  security: bearerSecurity,
  middleware: reader,
  request: { headers: TenantHeaderSchema, query: BalanceQuery },
  responses: withAccessErrors("tenantMember", {
    200: json(BalanceSchema, "The balance"),
    400: errors[400],
  }),
});

const payments = createRoute({
  method: "get",
  path: "/billing/payments",
  tags: ["billing"],
  summary: "The tenant's payment attempts, newest first (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: reader,
  request: { headers: TenantHeaderSchema, query: PaymentListQuery },
  responses: withAccessErrors("tenantMember", {
    200: json(pageOf(PaymentAttemptSchema), "A page"),
    400: errors[400],
  }),
});

const payment = createRoute({
  method: "get",
  path: "/billing/payments/{id}",
  tags: ["billing"],
  summary: "One payment attempt with the provider's response (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: reader,
  request: { headers: TenantHeaderSchema, params: z.object({ id: UuidParam("id") }) },
  responses: withAccessErrors("tenantMember", {
    200: json(PaymentAttemptDetailSchema, "The attempt"),
    400: errors[400],
    404: errors[404],
  }),
});

export const billingRoutes = ({ paymentService, ledgerService }: PaymentRouteServices) =>
  createRouter()
    .openapi(ledger, async (c) => {
      const { page, limit, type, currency } = c.req.valid("query");
      return c.json(
        await ledgerService(c).list(c.var.billingContext, { page, limit }, { type, currency }),
        200,
      );
    })
    .openapi(balance, async (c) =>
      c.json(
        await ledgerService(c).balance(c.var.billingContext, c.req.valid("query").currency),
        200,
      ),
    )
    .openapi(payments, async (c) => {
      const { page, limit, status } = c.req.valid("query");
      return c.json(
        await paymentService(c).list(c.var.billingContext, { page, limit }, { status }),
        200,
      );
    })
    .openapi(payment, async (c) =>
      c.json(await paymentService(c).get(c.var.billingContext, c.req.valid("param").id), 200),
    );
