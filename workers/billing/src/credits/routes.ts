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
  PageQuerySchema,
  pageOf,
  requireSettlementActor,
  requireWritableBillingTenant,
  TenantHeaderSchema,
  UuidParam,
  withAccessErrors,
} from "../platform/index.ts";
import { CREDIT_CATEGORIES, DEFAULT_GRANT_PRIORITY, MAX_GRANT_AMOUNT } from "./domain/credits.ts";
import type { CreditRouteServices } from "./route-services.ts";

const readers = moneyReaders();
const writers = [...readers, requireWritableBillingTenant()];
const administrators = [authenticate(), billingContext(), requireSettlementActor()];

const cents = (name: string) =>
  z
    .number({ message: `${name} must be a whole number of cents` })
    .int(`${name} must be a whole number of cents`)
    .min(1, `${name} must be from 1 to ${MAX_GRANT_AMOUNT.toLocaleString("en-US")} cents`)
    .max(
      MAX_GRANT_AMOUNT,
      `${name} must be from 1 to ${MAX_GRANT_AMOUNT.toLocaleString("en-US")} cents`,
    );

const CreateGrantBody = z
  .object({
    amount: cents("amount"),
    currency: z
      .string({ message: "currency must be a string" })
      .regex(/^[A-Za-z]{3}$/, "currency must be a 3-letter ISO 4217 code"),
    category: z.enum(CREDIT_CATEGORIES, { message: 'category must be "promotional" or "paid"' }),
    priority: z
      .number({ message: "priority must be an integer from 0 to 100" })
      .int("priority must be an integer from 0 to 100")
      .min(0, "priority must be an integer from 0 to 100")
      .max(100, "priority must be an integer from 0 to 100")
      .optional()
      .openapi({ description: `Lower is drawn first; default ${DEFAULT_GRANT_PRIORITY}` }),
    expiresAt: z.iso
      .datetime({ offset: true, message: "expiresAt must be an ISO-8601 instant" })
      .optional(),
    features: z
      .array(
        z
          .string({ message: "features must be feature lookup keys" })
          .min(1, "features must be feature lookup keys")
          .max(100, "a feature lookup key is at most 100 characters"),
        { message: "features must be a list of feature lookup keys" },
      )
      .min(1, "features must name at least one feature (leave it out for all priced usage)")
      .max(100, "features may name at most 100 features")
      .optional()
      .openapi({ description: "Lookup keys whose usage the grant may pay for; default all" }),
    paidAmount: cents("paidAmount")
      .optional()
      .openapi({ description: "Paid grants: what the tenant pays (default `amount`)" }),
  })
  .strict()
  .refine((body) => body.paidAmount === undefined || body.category === "paid", {
    message: "paidAmount is for paid grants only",
  })
  .openapi("CreateCreditGrantRequest");

const AutoTopUpBody = z
  .object({
    enabled: z.boolean({ message: "enabled must be a boolean" }),
    threshold: z
      .number({ message: "threshold must be a whole number of cents" })
      .int("threshold must be a whole number of cents")
      .min(0, "threshold must be from 0 to 1,000,000,000 cents")
      .max(MAX_GRANT_AMOUNT, "threshold must be from 0 to 1,000,000,000 cents")
      .openapi({ description: "A top-up starts when the balance falls below this many cents" }),
    amount: cents("amount").openapi({ description: "Cents of credit each top-up buys" }),
  })
  .strict()
  .openapi("AutoTopUpRequest");

const AutoTopUpSchema = z
  .object({
    enabled: z.boolean(),
    threshold: z.number().int(),
    amount: z.number().int(),
    disabledReason: z.string().nullable().openapi({
      description: "Why the rule turned itself off (a declined top-up charge)",
    }),
    updatedAt: z.string(),
  })
  .openapi("AutoTopUp");

const TopUpBody = z
  .object({ amount: cents("amount") })
  .strict()
  .openapi("CreditTopUpRequest");

const CreditGrantSchema = z
  .object({
    id: z.string(),
    amount: z.number().int().openapi({ description: "Cents granted" }),
    remaining: z.number().int().openapi({ description: "Cents left to draw (0 once ended)" }),
    currency: z.string(),
    category: z.enum(CREDIT_CATEGORIES),
    priority: z.number().int(),
    expiresAt: z.string().nullable(),
    features: z.array(z.string()).nullable(),
    status: z.enum(["PENDING", "ACTIVE", "EXHAUSTED", "EXPIRED", "VOIDED"]),
    paidAmount: z.number().int().nullable(),
    invoiceId: z.string().nullable().openapi({ description: "Paid grants: the TOP_UP invoice" }),
    writtenOff: z.number().int().openapi({ description: "Cents written off at void or expiry" }),
    createdAt: z.string(),
    endedAt: z.string().nullable(),
  })
  .openapi("CreditGrant");

const CreditBalanceSchema = z
  .object({
    balance: z.number().int().openapi({
      description: "Cents left on ACTIVE, unexpired grants in the subscription's currency",
    }),
    currency: z.string(),
    grants: z.array(CreditGrantSchema),
    autoTopUp: AutoTopUpSchema.nullable(),
  })
  .openapi("CreditBalance");

const create = createRoute({
  method: "post",
  path: "/credit-grants",
  tags: ["credits"],
  summary:
    "Grants credit to the tenant named by x-tenant-id (platform admins): promotional (ACTIVE at once) or paid (a TOP_UP invoice; ACTIVE when it is paid)",
  security: bearerSecurity,
  middleware: administrators,
  request: { headers: TenantHeaderSchema, body: jsonBody(CreateGrantBody) },
  responses: withAccessErrors("tenantMember", {
    201: json(CreditGrantSchema, "Created"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
  }),
});

const list = createRoute({
  method: "get",
  path: "/credit-grants",
  tags: ["credits"],
  summary: "The tenant's credit grants, newest first (OWNER, ADMIN, BILLING, platform admins)",
  security: bearerSecurity,
  middleware: readers,
  request: { headers: TenantHeaderSchema, query: PageQuerySchema },
  responses: withAccessErrors("tenantMember", {
    200: json(pageOf(CreditGrantSchema), "A page"),
    400: errors[400],
  }),
});

const voidGrant = createRoute({
  method: "post",
  path: "/credit-grants/{id}/void",
  tags: ["credits"],
  summary:
    "Ends an ACTIVE grant; what it still held is written off (platform admins). A PENDING paid grant is voided with its TOP_UP invoice",
  security: bearerSecurity,
  middleware: administrators,
  request: { headers: TenantHeaderSchema, params: z.object({ id: UuidParam("id") }) },
  responses: withAccessErrors("tenantMember", {
    200: json(CreditGrantSchema, "Voided"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
  }),
});

const balance = createRoute({
  method: "get",
  path: "/credits",
  tags: ["credits"],
  summary:
    "The credit balance and its grants in burn-down order (OWNER, ADMIN, BILLING, platform admins)",
  security: bearerSecurity,
  middleware: readers,
  request: { headers: TenantHeaderSchema },
  responses: withAccessErrors("tenantMember", {
    200: json(CreditBalanceSchema, "The balance"),
  }),
});

const topUp = createRoute({
  method: "post",
  path: "/credits/top-up",
  tags: ["credits"],
  summary:
    "Buys credit: a paid grant of `amount` cents in the subscription's currency, invoiced (TOP_UP) and charged now (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: readers,
  request: { headers: TenantHeaderSchema, body: jsonBody(TopUpBody) },
  responses: withAccessErrors("tenantMember", {
    201: json(CreditGrantSchema, "The grant (ACTIVE once its invoice is paid)"),
    400: errors[400],
    409: errors[409],
  }),
});

const autoTopUp = createRoute({
  method: "put",
  path: "/credits/auto-top-up",
  tags: ["credits"],
  summary:
    "Sets the automatic top-up: when the balance falls below `threshold`, one paid grant of `amount` is bought and charged (one at a time; a declined charge turns the rule off) (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: writers,
  request: { headers: TenantHeaderSchema, body: jsonBody(AutoTopUpBody) },
  responses: withAccessErrors("tenantMember", {
    200: json(AutoTopUpSchema, "The rule"),
    400: errors[400],
  }),
});

export const creditRoutes = ({ creditService: service }: CreditRouteServices) =>
  createRouter()
    .openapi(create, async (c) =>
      c.json(await service(c).create(c.var.billingContext, c.req.valid("json")), 201),
    )
    .openapi(list, async (c) => {
      const { page, limit } = c.req.valid("query");
      return c.json(await service(c).list(c.var.billingContext, { page, limit }), 200);
    })
    .openapi(voidGrant, async (c) =>
      c.json(await service(c).void(c.var.billingContext, c.req.valid("param").id), 200),
    )
    .openapi(balance, async (c) => c.json(await service(c).balance(c.var.billingContext), 200))
    .openapi(topUp, async (c) =>
      c.json(await service(c).topUp(c.var.billingContext, c.req.valid("json").amount), 201),
    )
    .openapi(autoTopUp, async (c) =>
      c.json(await service(c).setAutoTopUp(c.var.billingContext, c.req.valid("json")), 200),
    );
