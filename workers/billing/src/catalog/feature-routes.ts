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
import {
  booleanQuery,
  CreateFeatureBody,
  FeatureSchema,
  LookupKeySchema,
  UpdateFeatureBody,
} from "./schemas.ts";

const admin = [authenticate(), requirePlatformAdmin()];
const IdParams = z.object({ id: UuidParam("id") });

const createFeature = createRoute({
  method: "post",
  path: "/features",
  tags: ["catalog"],
  summary: "Creates a feature (platform admins); lookupKey and type are fixed for good",
  security: bearerSecurity,
  middleware: admin,
  request: { body: jsonBody(CreateFeatureBody) },
  responses: withAccessErrors("platformAdmin", {
    201: json(FeatureSchema, "Created"),
    400: errors[400],
    409: errors[409],
  }),
});

const listFeatures = createRoute({
  method: "get",
  path: "/features",
  tags: ["catalog"],
  summary: "Public: ACTIVE features by name (includeArchived adds ARCHIVED)",
  request: { query: z.object({ includeArchived: booleanQuery("includeArchived") }).strict() },
  responses: withAccessErrors("public", {
    200: json(z.object({ data: z.array(FeatureSchema) }), "Features"),
    400: errors[400],
  }),
});

const featureByLookupKey = createRoute({
  method: "get",
  path: "/features/lookup/{lookupKey}",
  tags: ["catalog"],
  summary: "Public: a feature by lookup key",
  request: { params: z.object({ lookupKey: LookupKeySchema("lookupKey") }) },
  responses: withAccessErrors("public", {
    200: json(FeatureSchema, "The feature"),
    400: errors[400],
    404: errors[404],
  }),
});

const featureById = createRoute({
  method: "get",
  path: "/features/{id}",
  tags: ["catalog"],
  summary: "Public: a feature",
  request: { params: IdParams },
  responses: withAccessErrors("public", {
    200: json(FeatureSchema, "The feature"),
    400: errors[400],
    404: errors[404],
  }),
});

const updateFeature = createRoute({
  method: "patch",
  path: "/features/{id}",
  tags: ["catalog"],
  summary: "Changes a feature (platform admins); archive with status",
  security: bearerSecurity,
  middleware: admin,
  request: { params: IdParams, body: jsonBody(UpdateFeatureBody) },
  responses: withAccessErrors("platformAdmin", {
    200: json(FeatureSchema, "Updated"),
    400: errors[400],
    404: errors[404],
  }),
});

export const featureRoutes = ({ featureService }: CatalogRouteServices) =>
  createRouter()
    .openapi(createFeature, async (c) =>
      c.json(await featureService(c).create(c.req.valid("json")), 201),
    )
    .openapi(listFeatures, async (c) =>
      c.json(await featureService(c).list(c.req.valid("query").includeArchived), 200),
    )
    .openapi(featureByLookupKey, async (c) =>
      c.json(await featureService(c).getByLookupKey(c.req.valid("param").lookupKey), 200),
    )
    .openapi(featureById, async (c) =>
      c.json(await featureService(c).get(c.req.valid("param").id), 200),
    )
    .openapi(updateFeature, async (c) => {
      const { lookupKey: _key, type: _type, ...changes } = c.req.valid("json");
      return c.json(await featureService(c).update(c.req.valid("param").id, changes), 200);
    });
