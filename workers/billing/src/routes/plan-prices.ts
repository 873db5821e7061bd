import { createRoute, z } from "@hono/zod-openapi";
import { authenticate } from "../middleware/auth.ts";
import { requirePlatformAdmin } from "../middleware/platform-admin.ts";
import { planService } from "./catalog-context.ts";
import { booleanQuery, CreatePriceBody, PriceSchema } from "./catalog-schemas.ts";
import { bearerSecurity, errors, json, jsonBody, UuidParam } from "./schemas.ts";
import { createRouter } from "./validation.ts";

const admin = [authenticate(), requirePlatformAdmin()];
const PlanParams = z.object({ planId: UuidParam("planId") });
const PriceParams = z.object({ planId: UuidParam("planId"), id: UuidParam("id") });

const createPrice = createRoute({
  method: "post",
  path: "/plans/{planId}/prices",
  tags: ["catalog"],
  summary:
    "Adds a price to a plan (platform admins); one active price per interval and currency (409)",
  security: bearerSecurity,
  middleware: admin,
  request: { params: PlanParams, body: jsonBody(CreatePriceBody) },
  responses: {
    201: json(PriceSchema, "Created"),
    400: errors[400],
    401: errors[401],
    403: errors[403],
    404: errors[404],
    409: errors[409],
  },
});

const listPrices = createRoute({
  method: "get",
  path: "/plans/{planId}/prices",
  tags: ["catalog"],
  summary:
    "Public: a plan's prices, MONTHLY before ANNUALLY (includeInactive adds deactivated ones)",
  request: {
    params: PlanParams,
    query: z.object({ includeInactive: booleanQuery("includeInactive") }).strict(),
  },
  responses: {
    200: json(z.object({ data: z.array(PriceSchema) }), "Prices"),
    400: errors[400],
    404: errors[404],
  },
});

const deactivatePrice = createRoute({
  method: "patch",
  path: "/plans/{planId}/prices/{id}",
  tags: ["catalog"],
  summary:
    "Deactivates a price for good (platform admins); existing subscriptions keep it, new ones cannot pick it",
  security: bearerSecurity,
  middleware: admin,
  request: { params: PriceParams },
  responses: {
    200: json(PriceSchema, "Deactivated"),
    400: errors[400],
    401: errors[401],
    403: errors[403],
    404: errors[404],
  },
});

export const planPriceRoutes = createRouter()
  .openapi(createPrice, async (c) =>
    c.json(await planService(c).createPrice(c.req.valid("param").planId, c.req.valid("json")), 201),
  )
  .openapi(listPrices, async (c) =>
    c.json(
      await planService(c).listPrices(
        c.req.valid("param").planId,
        c.req.valid("query").includeInactive,
      ),
      200,
    ),
  )
  .openapi(deactivatePrice, async (c) => {
    const { planId, id } = c.req.valid("param");
    return c.json(await planService(c).deactivatePrice(planId, id), 200);
  });
