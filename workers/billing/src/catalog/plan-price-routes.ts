import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticate,
  bearerSecurity,
  createRouter,
  errors,
  json,
  jsonBody,
  optionalJsonBody,
  requirePlatformAdmin,
  UuidParam,
  withAccessErrors,
} from "../platform/index.ts";
import type { CatalogRouteServices } from "./route-services.ts";
import { booleanQuery, CreatePriceBody, PriceSchema, UpdatePriceBody } from "./schemas.ts";

/** A price PATCH is two small fields; anything near this size is not one. */
const MAX_PRICE_PATCH_BYTES = 4096;

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
  responses: withAccessErrors("platformAdmin", {
    201: json(PriceSchema, "Created"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
  }),
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
  responses: withAccessErrors("public", {
    200: json(z.object({ data: z.array(PriceSchema) }), "Prices"),
    400: errors[400],
    404: errors[404],
  }),
});

const updatePrice = createRoute({
  method: "patch",
  path: "/plans/{planId}/prices/{id}",
  tags: ["catalog"],
  summary:
    "Changes a price (platform admins): `isActive: false` deactivates it for good (existing subscriptions keep it, new ones cannot pick it), `trialDays` (0-365 or null) sets its trial; no body at all deactivates",
  security: bearerSecurity,
  middleware: admin,
  description:
    "Body (optional, JSON): `{isActive?: false, trialDays?: 0-365 | null}`; unknown fields, malformed JSON, a non-JSON body or one over 4 KB are 400 and change nothing. The body is read by the handler itself (not declared here) so that every non-empty body, whatever its content type, is validated the same way.",
  request: { params: PriceParams },
  responses: withAccessErrors("platformAdmin", {
    200: json(PriceSchema, "Updated"),
    400: errors[400],
    404: errors[404],
  }),
});

export const planPriceRoutes = ({ planService }: CatalogRouteServices) =>
  createRouter()
    .openapi(createPrice, async (c) =>
      c.json(
        await planService(c).createPrice(c.req.valid("param").planId, c.req.valid("json")),
        201,
      ),
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
    .openapi(updatePrice, async (c) => {
      const { planId, id } = c.req.valid("param");
      const body = await optionalJsonBody(c, UpdatePriceBody, MAX_PRICE_PATCH_BYTES);
      return c.json(await planService(c).updatePrice(planId, id, body), 200);
    });
