import { deadLetterStages, deadLetterStatuses } from "@edge-platform/shared/db/schema/usage";
import { createRoute, z } from "@hono/zod-openapi";
import {
  authenticate,
  bearerSecurity,
  createRouter,
  errors,
  json,
  positiveInteger,
  requirePlatformAdmin,
  UuidParam,
  withAccessErrors,
} from "../platform/index.ts";
import type { UsageRouteServices } from "./route-services.ts";
import { DeadLetterPageSchema, DeadLetterSchema } from "./schemas.ts";

const admin = [authenticate(), requirePlatformAdmin()];
const IdParams = z.object({ id: UuidParam("id") });

const DeadLetterQuery = z
  .object({
    page: positiveInteger("page").optional().default(1).openapi({ type: "integer", example: 1 }),
    limit: positiveInteger("limit", 100)
      .optional()
      .default(50)
      .openapi({ type: "integer", example: 50 }),
    status: z
      .enum(deadLetterStatuses, {
        message: `status must be one of ${deadLetterStatuses.join(", ")}`,
      })
      .optional(),
    failureStage: z
      .enum(deadLetterStages, {
        message: `failureStage must be one of ${deadLetterStages.join(", ")}`,
      })
      .optional(),
    tenantId: z.uuid("tenantId must be a valid UUID").optional(),
  })
  .strict();

const list = createRoute({
  method: "get",
  path: "/admin/dead-letter",
  tags: ["admin"],
  summary: "Dead-lettered usage messages, newest first (platform admin)",
  security: bearerSecurity,
  middleware: admin,
  request: { query: DeadLetterQuery },
  responses: withAccessErrors("platformAdmin", {
    200: json(DeadLetterPageSchema, "A page"),
    400: errors[400],
  }),
});

const getOne = createRoute({
  method: "get",
  path: "/admin/dead-letter/{id}",
  tags: ["admin"],
  summary: "One dead letter (platform admin)",
  security: bearerSecurity,
  middleware: admin,
  request: { params: IdParams },
  responses: withAccessErrors("platformAdmin", {
    200: json(DeadLetterSchema, "The dead letter"),
    400: errors[400],
    404: errors[404],
  }),
});

const retry = createRoute({
  method: "post",
  path: "/admin/dead-letter/{id}/retry",
  tags: ["admin"],
  summary:
    "Sends the message again to the queue it failed on; the row becomes RETRYING, then RESOLVED once the event gets through (platform admin)",
  security: bearerSecurity,
  middleware: admin,
  request: { params: IdParams },
  responses: withAccessErrors("platformAdmin", {
    201: json(DeadLetterSchema, "Retrying"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
    503: errors[503],
  }),
});

const discard = createRoute({
  method: "post",
  path: "/admin/dead-letter/{id}/discard",
  tags: ["admin"],
  summary: "Gives a dead letter up (platform admin)",
  security: bearerSecurity,
  middleware: admin,
  request: { params: IdParams },
  responses: withAccessErrors("platformAdmin", {
    201: json(DeadLetterSchema, "Discarded"),
    400: errors[400],
    404: errors[404],
    409: errors[409],
  }),
});

export const usageDeadLetterRoutes = ({ usageDeadLetterService: service }: UsageRouteServices) =>
  createRouter()
    .openapi(list, async (c) => {
      const { page, limit, ...filter } = c.req.valid("query");
      return c.json(await service(c).list(filter, { page, limit }), 200);
    })
    .openapi(getOne, async (c) => c.json(await service(c).get(c.req.valid("param").id), 200))
    .openapi(retry, async (c) =>
      c.json(await service(c).retry(c.req.valid("param").id, c.var.user.id), 201),
    )
    .openapi(discard, async (c) =>
      c.json(await service(c).discard(c.req.valid("param").id, c.var.user.id), 201),
    );
