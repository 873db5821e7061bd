import { ApiError } from "@edge-platform/shared/http/api-error";
import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticate,
  bearerSecurity,
  createRouter,
  describeIssue,
  errors,
  json,
  jsonBody,
  requirePlatformAdmin,
  UuidParam,
  validationHook,
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
const METER_REFUSED = "The meter breaks the meter rules, or a BOOLEAN feature was given one";
const IdParams = z.object({ id: UuidParam("id") });

type ValidationResult = Parameters<typeof validationHook>[0];

/**
 * A body whose only problems are in `meter` is well-formed but its meter
 * does not fit the rules: 422, like the meter problems the service finds
 * (resolveMeter). Anything else is the usual 400.
 */
function meterAwareHook(result: ValidationResult): undefined {
  const issues = result.success ? [] : (result.error?.issues ?? []);
  if (issues.length > 0 && issues.every((issue) => issue.path[0] === "meter")) {
    throw new ApiError(422, "Validation failed", {
      details: issues.flatMap(describeIssue),
      code: "meter_invalid",
    });
  }
  validationHook(result);
  return undefined;
}

const createFeature = createRoute({
  method: "post",
  path: "/features",
  tags: ["catalog"],
  summary: "Creates a feature (platform admins); lookupKey and type are fixed for good",
  description:
    "QUOTA and METERED features may have a `meter`: how their usage is measured from events (aggregation, property, filters, groupBy). A meter that breaks the meter rules, or any meter on a BOOLEAN feature, is a 422.",
  security: bearerSecurity,
  middleware: admin,
  request: { body: jsonBody(CreateFeatureBody) },
  responses: withAccessErrors("platformAdmin", {
    201: json(FeatureSchema, "Created"),
    400: errors[400],
    409: errors[409],
    422: {
      ...errors[422],
      description: `${METER_REFUSED}; or the Idempotency-Key was used with other parameters`,
    },
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
  description:
    "A new `meter` applies to subscriptions started afterwards (existing ones keep the meter of their snapshot). Its aggregation cannot change once the feature has usage (409), nor may its groupBy drop a property a plan's entitlement prices groups by (409); a meter that breaks the meter rules is a 422.",
  security: bearerSecurity,
  middleware: admin,
  request: { params: IdParams, body: jsonBody(UpdateFeatureBody) },
  responses: withAccessErrors("platformAdmin", {
    200: json(FeatureSchema, "Updated"),
    400: errors[400],
    404: errors[404],
    409: {
      ...errors[409],
      description:
        "The meter's aggregation would change while the feature has usage, or its groupBy would drop a property plans price groups by",
    },
    422: { ...errors[422], description: METER_REFUSED },
  }),
});

export const featureRoutes = ({ featureService }: CatalogRouteServices) =>
  createRouter()
    .openapi(
      createFeature,
      async (c) => c.json(await featureService(c).create(c.req.valid("json")), 201),
      meterAwareHook,
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
    .openapi(
      updateFeature,
      async (c) => {
        const { lookupKey: _key, type: _type, ...changes } = c.req.valid("json");
        return c.json(await featureService(c).update(c.req.valid("param").id, changes), 200);
      },
      meterAwareHook,
    );
