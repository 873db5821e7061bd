import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticate,
  bearerSecurity,
  createRouter,
  errors,
  json,
  jsonBody,
  requirePlatformAdmin,
  UuidParam,
  withAccessErrors,
} from "../platform/index.ts";
import { percentToPpm } from "./domain/tax.ts";
import type { PricingRouteServices } from "./route-services.ts";

const admin = [authenticate(), requirePlatformAdmin()];
const IdParams = z.object({ id: UuidParam("id") });

const text = (field: string, max: number) =>
  z
    .string({ message: `${field} must be a string` })
    .trim()
    .min(1, `${field} should not be empty`)
    .max(max, `${field} must be at most ${max} characters`);
const optionalText = (field: string, max: number) => text(field, max).nullable().optional();

const AddressSchema = z
  .object({
    line1: text("address.line1", 200),
    line2: optionalText("address.line2", 200),
    city: text("address.city", 100),
    postalCode: optionalText("address.postalCode", 20),
    region: optionalText("address.region", 100),
    country: z
      .string({ message: "address.country must be a string" })
      .regex(/^[A-Za-z]{2}$/, "address.country must be a 2-letter ISO 3166-1 code")
      .transform((value) => value.toUpperCase()),
  })
  .strict();

const BillingDetailsBody = z
  .object({
    taxRate: z
      .number({ message: "taxRate must be a number (a percentage)" })
      .refine((value) => percentToPpm(value) !== null, {
        message: "taxRate must be a percentage from 0 to 100 with at most 4 decimals",
      })
      .openapi({ example: 10, description: "Percent, exclusive (added on top)" }),
    taxId: optionalText("taxId", 64),
    legalName: text("legalName", 255),
    address: AddressSchema,
  })
  .strict()
  .openapi("BillingDetailsRequest");

const BillingDetailsSchema = z
  .object({
    tenantId: z.string(),
    taxRate: z.number().openapi({ description: "Percent, exclusive" }),
    taxId: z.string().nullable(),
    legalName: z.string(),
    address: z.object({
      line1: z.string(),
      line2: z.string().nullable().optional(),
      city: z.string(),
      postalCode: z.string().nullable().optional(),
      region: z.string().nullable().optional(),
      country: z.string(),
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("BillingDetails");

const putDetails = createRoute({
  method: "put",
  path: "/tenants/{id}/billing-details",
  tags: ["tenants"],
  summary: "Sets a tenant's tax rate and legal details (platform admins)",
  description:
    "Replaces them all. `taxRate` is a percentage with up to 4 decimals, exclusive: invoices get a TAX line on the discounted amount, rounded half up once, at the rate in force when each is finalized.",
  security: bearerSecurity,
  middleware: admin,
  request: { params: IdParams, body: jsonBody(BillingDetailsBody) },
  responses: withAccessErrors("platformAdmin", {
    200: json(BillingDetailsSchema, "The billing details"),
    400: errors[400],
    404: errors[404],
  }),
});

const getDetails = createRoute({
  method: "get",
  path: "/tenants/{id}/billing-details",
  tags: ["tenants"],
  summary: "A tenant's tax rate and legal details (platform admins)",
  security: bearerSecurity,
  middleware: admin,
  request: { params: IdParams },
  responses: withAccessErrors("platformAdmin", {
    200: json(BillingDetailsSchema, "The billing details"),
    400: errors[400],
    404: errors[404],
  }),
});

export const billingDetailsRoutes = ({ billingDetailsService: service }: PricingRouteServices) =>
  createRouter()
    .openapi(putDetails, async (c) => {
      const body = c.req.valid("json");
      const details = await service(c).put(c.req.valid("param").id, {
        taxRatePpm: percentToPpm(body.taxRate) ?? 0,
        taxId: body.taxId ?? null,
        legalName: body.legalName,
        address: {
          line1: body.address.line1,
          line2: body.address.line2 ?? null,
          city: body.address.city,
          postalCode: body.address.postalCode ?? null,
          region: body.address.region ?? null,
          country: body.address.country,
        },
      });
      return c.json(details, 200);
    })
    .openapi(getDetails, async (c) => c.json(await service(c).get(c.req.valid("param").id), 200));
