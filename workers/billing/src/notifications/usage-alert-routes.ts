import { createRoute, z } from "@hono/zod-openapi";
import {
  bearerSecurity,
  createRouter,
  EVERY_ROLE,
  errors,
  json,
  jsonBody,
  MONEY_READERS,
  PageQuerySchema,
  pageOf,
  TenantHeaderSchema,
  tenantMembers,
  tenantWriters,
  UuidParam,
  withAccessErrors,
} from "../platform/index.ts";
import { PERCENT_RANGE, UNITS_RANGE } from "./domain/usage-alerts.ts";
import type { NotificationRouteServices } from "./route-services.ts";

const readers = tenantMembers(...EVERY_ROLE);
const writers = tenantWriters(...MONEY_READERS);

const thresholdValue = (type: string, range: { min: number; max: number }) =>
  z
    .number({ message: `threshold.value must be an integer (${type})` })
    .int(`threshold.value must be an integer (${type})`)
    .min(range.min, `threshold.value must be from ${range.min} to ${range.max} (${type})`)
    .max(range.max, `threshold.value must be from ${range.min} to ${range.max} (${type})`);

const ThresholdSchema = z
  .discriminatedUnion(
    "type",
    [
      z.object({ type: z.literal("units"), value: thresholdValue("units", UNITS_RANGE) }).strict(),
      z
        .object({ type: z.literal("percent"), value: thresholdValue("percent", PERCENT_RANGE) })
        .strict(),
    ],
    { message: 'threshold.type must be "units" or "percent"' },
  )
  .openapi("UsageThreshold", {
    description:
      "`units`: reached at that many units in the feature's reset window. `percent` (1-1000): reached at ceil(limit or included amount x value / 100) on the tenant's current plan; above 100 only for SOFT and METERED features.",
  });

const CreateUsageAlertBody = z
  .object({
    featureLookupKey: z
      .string({ message: "featureLookupKey must be a string" })
      .min(1, "featureLookupKey must not be empty")
      .max(100, "featureLookupKey must be at most 100 characters"),
    threshold: ThresholdSchema,
  })
  .strict()
  .openapi("CreateUsageAlertRequest");

const UsageAlertSchema = z
  .object({
    id: z.string(),
    featureLookupKey: z.string(),
    threshold: ThresholdSchema,
    thresholdUnits: z.number().int().nullable().optional().openapi({
      description:
        "The units the threshold is reached at on the current plan; null when it cannot be (the feature is not on the plan)",
    }),
    createdAt: z.string(),
  })
  .openapi("UsageAlert");

const ListQuery = PageQuerySchema.extend({
  featureLookupKey: z.string().min(1).max(100).optional(),
}).strict();

const create = createRoute({
  method: "post",
  path: "/usage-alerts",
  tags: ["usage-alerts"],
  summary:
    "Defines a usage alert: a usage.threshold_reached event, once per reset window, when the feature's usage reaches the threshold (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: writers,
  request: { headers: TenantHeaderSchema, body: jsonBody(CreateUsageAlertBody) },
  responses: withAccessErrors("tenantMember", {
    201: json(UsageAlertSchema, "Created"),
    400: errors[400],
    409: errors[409],
    422: errors[422],
  }),
});

const list = createRoute({
  method: "get",
  path: "/usage-alerts",
  tags: ["usage-alerts"],
  summary: "The tenant's usage alerts, newest first (any member)",
  security: bearerSecurity,
  middleware: readers,
  request: { headers: TenantHeaderSchema, query: ListQuery },
  responses: withAccessErrors("tenantMember", {
    200: json(pageOf(UsageAlertSchema), "A page"),
    400: errors[400],
  }),
});

const remove = createRoute({
  method: "delete",
  path: "/usage-alerts/{id}",
  tags: ["usage-alerts"],
  summary: "Deletes a usage alert (OWNER, ADMIN, BILLING)",
  security: bearerSecurity,
  middleware: writers,
  request: { headers: TenantHeaderSchema, params: z.object({ id: UuidParam("id") }) },
  responses: withAccessErrors("tenantMember", {
    200: json(UsageAlertSchema, "Deleted"),
    400: errors[400],
    404: errors[404],
  }),
});

export const usageAlertRoutes = ({ usageAlertService: service }: NotificationRouteServices) =>
  createRouter()
    .openapi(create, async (c) =>
      c.json(await service(c).create(c.var.tenantContext, c.req.valid("json")), 201),
    )
    .openapi(list, async (c) => {
      const { page, limit, featureLookupKey } = c.req.valid("query");
      return c.json(
        await service(c).list(c.var.tenantContext, { page, limit }, { featureLookupKey }),
        200,
      );
    })
    .openapi(remove, async (c) =>
      c.json(await service(c).delete(c.var.tenantContext, c.req.valid("param").id), 200),
    );
