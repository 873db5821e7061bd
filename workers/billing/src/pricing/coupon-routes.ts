import { couponDurations, couponStatuses } from "@edge-platform/shared/db/schema/billing";
import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticate,
  bearerSecurity,
  createRouter,
  EVERY_ROLE,
  errors,
  integer,
  json,
  jsonBody,
  MANAGERS,
  requirePlatformAdmin,
  TenantHeaderSchema,
  tenantMembers,
  tenantWriters,
  UuidParam,
  withAccessErrors,
} from "../platform/index.ts";
import { CouponCodeSchema } from "./coupon-schemas.ts";
import type { PricingRouteServices } from "./route-services.ts";

const admin = [authenticate(), requirePlatformAdmin()];
const IdParams = z.object({ id: UuidParam("id") });
const MAX_PERIODS = 120;

const CreateCouponBody = z
  .object({
    code: CouponCodeSchema.transform((code) => code.toUpperCase()),
    percentOff: integer("percentOff", "an integer from 1 to 100", 1, 100).optional(),
    amountOff: integer(
      "amountOff",
      "a positive whole number of cents",
      1,
      Number.MAX_SAFE_INTEGER,
    ).optional(),
    currency: z
      .string({ message: "currency must be a string" })
      .regex(/^[A-Za-z]{3}$/, "currency must be a 3-letter ISO 4217 code")
      .transform((value) => value.toLowerCase())
      .optional(),
    duration: z.enum(couponDurations, { message: "duration must be once, repeating or forever" }),
    durationInPeriods: integer(
      "durationInPeriods",
      `an integer from 1 to ${MAX_PERIODS}`,
      1,
      MAX_PERIODS,
    ).optional(),
    maxRedemptions: integer(
      "maxRedemptions",
      "a positive whole number",
      1,
      Number.MAX_SAFE_INTEGER,
    ).optional(),
    redeemBy: z.iso
      .datetime({ message: "redeemBy must be an ISO-8601 date-time", offset: true })
      .transform((value) => new Date(value).toISOString())
      .optional(),
    reusable: z.boolean({ message: "reusable must be true or false" }).optional().openapi({
      description:
        "Default false: a tenant may redeem the coupon once, ever. True: again once its earlier redemption has ended.",
    }),
  })
  .strict()
  .superRefine((body, context) => {
    const problem = (message: string) => context.addIssue({ code: "custom", message });
    if ((body.percentOff === undefined) === (body.amountOff === undefined)) {
      problem("Give exactly one of percentOff and amountOff");
    }
    if (body.amountOff !== undefined && body.currency === undefined) {
      problem("amountOff needs a currency");
    }
    if (body.percentOff !== undefined && body.currency !== undefined) {
      problem("currency goes with amountOff only");
    }
    if (body.duration === "repeating" && body.durationInPeriods === undefined) {
      problem("duration repeating needs durationInPeriods");
    }
    if (body.duration !== "repeating" && body.durationInPeriods !== undefined) {
      problem("durationInPeriods goes with duration repeating only");
    }
    if (body.redeemBy !== undefined && body.redeemBy <= new Date().toISOString()) {
      problem("redeemBy must be in the future");
    }
  })
  .openapi("CreateCouponRequest");

const CouponSchema = z
  .object({
    id: z.string(),
    code: z.string(),
    percentOff: z.number().int().nullable(),
    amountOff: z.number().int().nullable().openapi({ description: "Cents" }),
    currency: z.string().nullable(),
    duration: z.enum(couponDurations),
    durationInPeriods: z.number().int().nullable(),
    maxRedemptions: z.number().int().nullable(),
    redeemBy: z.string().nullable(),
    timesRedeemed: z.number().int(),
    reusable: z.boolean(),
    status: z.enum(couponStatuses),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Coupon");

const RedemptionSchema = z
  .object({
    id: z.string(),
    couponId: z.string(),
    code: z.string(),
    tenantId: z.string(),
    subscriptionId: z.string(),
    invoicesDiscounted: z.number().int(),
    redeemedAt: z.string(),
    endedAt: z.string().nullable(),
  })
  .openapi("CouponRedemption");

const createCoupon = createRoute({
  method: "post",
  path: "/coupons",
  tags: ["coupons"],
  summary: "Creates a coupon (platform admins)",
  description:
    "`percentOff` (1-100) or `amountOff` cents with `currency`; `duration` once (one invoice), repeating (`durationInPeriods` invoices) or forever. A tenant may redeem a coupon once, ever, unless it is `reusable`. The discount is taken off each invoice's subtotal before tax, rounded half up once, never below zero.",
  security: bearerSecurity,
  middleware: admin,
  request: { body: jsonBody(CreateCouponBody) },
  responses: withAccessErrors("platformAdmin", {
    201: json(CouponSchema, "Created"),
    400: errors[400],
    409: errors[409],
  }),
});

const listCoupons = createRoute({
  method: "get",
  path: "/coupons",
  tags: ["coupons"],
  summary: "Every coupon, newest first (platform admins)",
  security: bearerSecurity,
  middleware: admin,
  responses: withAccessErrors("platformAdmin", {
    200: json(z.object({ data: z.array(CouponSchema) }), "Coupons"),
  }),
});

const archiveCoupon = createRoute({
  method: "post",
  path: "/coupons/{id}/archive",
  tags: ["coupons"],
  summary: "Archives a coupon: no new redemptions (platform admins)",
  security: bearerSecurity,
  middleware: admin,
  request: { params: IdParams },
  responses: withAccessErrors("platformAdmin", {
    201: json(CouponSchema, "Archived"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
  }),
});

const redeemCoupon = createRoute({
  method: "post",
  path: "/subscriptions/{id}/coupon",
  tags: ["subscriptions"],
  summary: "Redeems a coupon on the tenant's subscription (OWNER, ADMIN)",
  description:
    "One active coupon per tenant, and each coupon once per tenant unless it is `reusable`; 409 when the coupon is archived, past `redeemBy` or fully redeemed, the tenant already has an active one, or the tenant has redeemed this non-reusable coupon before.",
  security: bearerSecurity,
  middleware: tenantWriters(...MANAGERS),
  request: {
    headers: TenantHeaderSchema,
    params: IdParams,
    body: jsonBody(z.object({ couponCode: CouponCodeSchema }).strict()),
  },
  responses: withAccessErrors("tenantMember", {
    201: json(RedemptionSchema, "Redeemed"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
  }),
});

const activeCoupon = createRoute({
  method: "get",
  path: "/subscriptions/{id}/coupon",
  tags: ["subscriptions"],
  summary:
    "The tenant's active coupon: its code and how many invoices it has discounted (any member)",
  security: bearerSecurity,
  middleware: tenantMembers(...EVERY_ROLE),
  request: { headers: TenantHeaderSchema, params: IdParams },
  responses: withAccessErrors("tenantMember", {
    200: json(RedemptionSchema, "The active redemption"),
    400: errors[400],
    404: errors[404],
  }),
});

export const couponRoutes = ({ couponService: service }: PricingRouteServices) =>
  createRouter()
    .openapi(createCoupon, async (c) => c.json(await service(c).create(c.req.valid("json")), 201))
    .openapi(listCoupons, async (c) => c.json(await service(c).list(), 200))
    .openapi(archiveCoupon, async (c) =>
      c.json(await service(c).archive(c.req.valid("param").id), 201),
    )
    .openapi(activeCoupon, async (c) =>
      c.json(await service(c).active(c.var.tenantContext, c.req.valid("param").id), 200),
    )
    .openapi(redeemCoupon, async (c) =>
      c.json(
        await service(c).redeem(
          c.var.tenantContext,
          c.req.valid("param").id,
          c.req.valid("json").couponCode,
        ),
        201,
      ),
    );
