import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticate,
  bearerSecurity,
  createRouter,
  errors,
  isPlatformAdmin,
  json,
  jsonBody,
  optionalAuthentication,
  requirePlatformAdmin,
  UuidParam,
  withAccessErrors,
} from "../platform/index.ts";
import type { CatalogRouteServices } from "./route-services.ts";
import {
  booleanQuery,
  CreatePlanBody,
  PlanSchema,
  PlanSlugSchema,
  UpdatePlanBody,
} from "./schemas.ts";

const admin = [authenticate(), requirePlatformAdmin()];
const IdParams = z.object({ id: UuidParam("id") });

const createPlan = createRoute({
  method: "post",
  path: "/plans",
  tags: ["catalog"],
  summary: "Creates a plan (platform admins)",
  security: bearerSecurity,
  middleware: admin,
  request: { body: jsonBody(CreatePlanBody) },
  responses: withAccessErrors("platformAdmin", {
    201: json(PlanSchema, "Created"),
    400: errors[400],
    409: errors[409],
  }),
});

const listPlans = createRoute({
  method: "get",
  path: "/plans",
  tags: ["catalog"],
  summary:
    "Public: ACTIVE plans by displayOrder, with their active prices (includeArchived adds ARCHIVED; unlisted plans only for platform admins)",
  middleware: [optionalAuthentication()] as const,
  request: { query: z.object({ includeArchived: booleanQuery("includeArchived") }).strict() },
  responses: withAccessErrors("public", {
    200: json(z.object({ data: z.array(PlanSchema) }), "Plans"),
    400: errors[400],
  }),
});

const planBySlug = createRoute({
  method: "get",
  path: "/plans/slug/{slug}",
  tags: ["catalog"],
  summary: "Public: a plan by slug, with its active prices",
  request: { params: z.object({ slug: PlanSlugSchema }) },
  responses: withAccessErrors("public", {
    200: json(PlanSchema, "The plan"),
    400: errors[400],
    404: errors[404],
  }),
});

const planById = createRoute({
  method: "get",
  path: "/plans/{id}",
  tags: ["catalog"],
  summary: "Public: a plan, with its active prices",
  request: { params: IdParams },
  responses: withAccessErrors("public", {
    200: json(PlanSchema, "The plan"),
    400: errors[400],
    404: errors[404],
  }),
});

const updatePlan = createRoute({
  method: "patch",
  path: "/plans/{id}",
  tags: ["catalog"],
  summary: "Changes a plan (platform admins); the slug is immutable, archive with status",
  security: bearerSecurity,
  middleware: admin,
  request: { params: IdParams, body: jsonBody(UpdatePlanBody) },
  responses: withAccessErrors("platformAdmin", {
    200: json(PlanSchema, "Updated"),
    400: errors[400],
    404: errors[404],
  }),
});

export const planRoutes = ({ planService }: CatalogRouteServices) =>
  createRouter()
    .openapi(createPlan, async (c) => c.json(await planService(c).create(c.req.valid("json")), 201))
    .openapi(listPlans, async (c) =>
      c.json(
        await planService(c).list({
          includeArchived: c.req.valid("query").includeArchived,
          includeNonPublic: isPlatformAdmin(c),
        }),
        200,
      ),
    )
    .openapi(planBySlug, async (c) =>
      c.json(await planService(c).getBySlug(c.req.valid("param").slug), 200),
    )
    .openapi(planById, async (c) => c.json(await planService(c).get(c.req.valid("param").id), 200))
    .openapi(updatePlan, async (c) => {
      const { slug: _slug, ...changes } = c.req.valid("json");
      return c.json(await planService(c).update(c.req.valid("param").id, changes), 200);
    });
