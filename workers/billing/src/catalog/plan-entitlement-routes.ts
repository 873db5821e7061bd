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
import type { CatalogRouteServices } from "./route-services.ts";
import { CreateEntitlementBody, EntitlementSchema, UpdateEntitlementBody } from "./schemas.ts";

const admin = [authenticate(), requirePlatformAdmin()];
const NOT_GROUPED = "`dimensions` name a property the feature's meter does not group by";
const PlanParams = z.object({ planId: UuidParam("planId") });
const EntitlementParams = z.object({ planId: UuidParam("planId"), id: UuidParam("id") });

const TYPE_RULES =
  "BOOLEAN takes only `value`; QUOTA takes `limit`, `limitBehavior` (default HARD), `resetPeriod`, and a price when SOFT; METERED takes `includedAmount` (default 0), a price and `resetPeriod`. The price is one of `overagePrice` (whole micro-cents per unit; 1 cent = 100), `overagePriceDecimal` (the same as a decimal string, for prices below one micro-cent) or `pricing` (graduated or volume tiers, or packages); two are refused together. A SOFT quota or METERED feature whose meter has `groupBy` may price groups apart with `dimensions` (a match naming a property outside groupBy is a 422).";

const createEntitlement = createRoute({
  method: "post",
  path: "/plans/{planId}/entitlements",
  tags: ["catalog"],
  summary: "Grants a feature to a plan (platform admins)",
  description: TYPE_RULES,
  security: bearerSecurity,
  middleware: admin,
  request: { params: PlanParams, body: jsonBody(CreateEntitlementBody) },
  responses: withAccessErrors("platformAdmin", {
    201: json(EntitlementSchema, "Created"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
    422: {
      ...errors[422],
      description: `${NOT_GROUPED}; or the Idempotency-Key was used with other parameters`,
    },
  }),
});

const listEntitlements = createRoute({
  method: "get",
  path: "/plans/{planId}/entitlements",
  tags: ["catalog"],
  summary: "Public: what a plan grants, by feature name",
  request: { params: PlanParams },
  responses: withAccessErrors("public", {
    200: json(z.object({ data: z.array(EntitlementSchema) }), "Entitlements"),
    400: errors[400],
    404: errors[404],
  }),
});

const getEntitlement = createRoute({
  method: "get",
  path: "/plans/{planId}/entitlements/{id}",
  tags: ["catalog"],
  summary: "Public: one entitlement of a plan",
  request: { params: EntitlementParams },
  responses: withAccessErrors("public", {
    200: json(EntitlementSchema, "The entitlement"),
    400: errors[400],
    404: errors[404],
  }),
});

const updateEntitlement = createRoute({
  method: "patch",
  path: "/plans/{planId}/entitlements/{id}",
  tags: ["catalog"],
  summary: "Changes an entitlement (platform admins); existing subscribers keep their snapshots",
  description: `${TYPE_RULES} Sent fields are merged over the stored ones (null clears one) and the result must satisfy the rules.`,
  security: bearerSecurity,
  middleware: admin,
  request: { params: EntitlementParams, body: jsonBody(UpdateEntitlementBody) },
  responses: withAccessErrors("platformAdmin", {
    200: json(EntitlementSchema, "Updated"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
    422: { ...errors[422], description: NOT_GROUPED },
  }),
});

const deleteEntitlement = createRoute({
  method: "delete",
  path: "/plans/{planId}/entitlements/{id}",
  tags: ["catalog"],
  summary: "Removes an entitlement from a plan (platform admins); returns what was removed",
  security: bearerSecurity,
  middleware: admin,
  request: { params: EntitlementParams },
  responses: withAccessErrors("platformAdmin", {
    200: json(EntitlementSchema, "Removed"),
    400: errors[400],
    404: errors[404],
  }),
});

export const planEntitlementRoutes = ({ planEntitlementService }: CatalogRouteServices) =>
  createRouter()
    .openapi(createEntitlement, async (c) =>
      c.json(
        await planEntitlementService(c).create(c.req.valid("param").planId, c.req.valid("json")),
        201,
      ),
    )
    .openapi(listEntitlements, async (c) =>
      c.json(await planEntitlementService(c).list(c.req.valid("param").planId), 200),
    )
    .openapi(getEntitlement, async (c) => {
      const { planId, id } = c.req.valid("param");
      return c.json(await planEntitlementService(c).get(planId, id), 200);
    })
    .openapi(updateEntitlement, async (c) => {
      const { planId, id } = c.req.valid("param");
      const { featureId: _featureId, ...changes } = c.req.valid("json");
      return c.json(await planEntitlementService(c).update(planId, id, changes), 200);
    })
    .openapi(deleteEntitlement, async (c) => {
      const { planId, id } = c.req.valid("param");
      return c.json(await planEntitlementService(c).remove(planId, id), 200);
    });
