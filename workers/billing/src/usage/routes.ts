import { database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { createRoute, z } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../platform/index.ts";
import {
  authenticateApiKey,
  callerTenant,
  createRouter,
  errors,
  json,
  jsonBody,
  memberOrApiKey,
  withAccessErrors,
} from "../platform/index.ts";
import { byteLength, MAX_BATCH_BYTES } from "./domain/usage-events.ts";
import { findUsageEvent, listUsageEvents } from "./log/service.ts";
import type { UsageRouteServices } from "./route-services.ts";
import {
  AggregatesQuery,
  EventIdParam,
  IngestionResultSchema,
  TimeseriesQuery,
  TimeseriesSchema,
  UsageAggregateSchema,
  UsageBatchBody,
  UsageEventPageSchema,
  UsageEventSchema,
  UsageEventsQuery,
} from "./schemas.ts";
import { usageTimeseries } from "./timeseries-service.ts";

const BODY_TOO_LARGE = `Request body must be at most ${MAX_BATCH_BYTES / (1024 * 1024)} MB`;

/** 1 MB per batch, checked on the declared length and on the body itself; nothing is stored. */
function limitBatchBody() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const declared = Number(c.req.header("content-length") ?? "0");
    if (declared > MAX_BATCH_BYTES) throw new ApiError(400, BODY_TOO_LARGE, { code: "too_large" });
    if (byteLength(await c.req.text()) > MAX_BATCH_BYTES) {
      throw new ApiError(400, BODY_TOO_LARGE, { code: "too_large" });
    }
    await next();
  });
}

/** Either credential: the tenant's API key, or a member's access token with x-tenant-id. */
const eitherCredential: Record<string, string[]>[] = [{ apiKey: [] }, { bearerAuth: [] }];

const ingest = createRoute({
  method: "post",
  path: "/usage/events",
  tags: ["usage"],
  summary: "Reports 1-1000 usage events (tenant API key only); 202 with each event's outcome",
  description:
    "Each event is judged by itself: one with missing fields or a non-positive or non-integer amount is `rejected` with a reason code while the others go in. A repeat of an eventId (inside the batch, or already stored for the tenant) is `duplicate` and counted once. A malformed body, an empty or oversized batch, or a body over 1 MB is a 400 and stores nothing. Accepted events are then validated and aggregated asynchronously: see GET /usage/events/{eventId}.",
  security: [{ apiKey: [] }],
  middleware: [authenticateApiKey(), limitBatchBody()] as const,
  request: { body: jsonBody(UsageBatchBody) },
  responses: withAccessErrors("apiKey", {
    202: json(IngestionResultSchema, "Accepted for processing"),
    400: errors[400],
    503: errors[503],
  }),
});

const getEvent = createRoute({
  method: "get",
  path: "/usage/events/{eventId}",
  tags: ["usage"],
  summary:
    "One usage event's status (PENDING, VALIDATED, AGGREGATED, REJECTED with reason) by the client's eventId (API key, or member JWT + x-tenant-id), throughout the retention window: from the tenant's usage log, or once archived from its Parquet file in R2, with the same body",
  security: eitherCredential,
  middleware: [memberOrApiKey()] as const,
  request: { params: EventIdParam },
  responses: withAccessErrors("memberOrApiKey", {
    200: json(UsageEventSchema, "The event"),
    400: errors[400],
    404: errors[404],
    503: errors[503],
  }),
});

const listEvents = createRoute({
  method: "get",
  path: "/usage/events",
  tags: ["usage"],
  summary:
    "The tenant's usage events in the order they were received, from the usage log and its R2 archive (API key, or member JWT + x-tenant-id)",
  description:
    "`from` and `to` bound when events were received (`to` excluded); `feature` and `status` filter; at most `limit` (1-1000, default 100) per page. Pass `meta.nextCursor` as `cursor` for the next page; it is null on the last. Each event is the body GET /usage/events/{eventId} answers.",
  security: eitherCredential,
  middleware: [memberOrApiKey()] as const,
  request: { query: UsageEventsQuery },
  responses: withAccessErrors("memberOrApiKey", {
    200: json(UsageEventPageSchema, "A page of events"),
    400: errors[400],
    503: errors[503],
  }),
});

const aggregates = createRoute({
  method: "get",
  path: "/usage/aggregates",
  tags: ["usage"],
  summary:
    "The tenant's aggregated usage by subscription, feature and reset window (API key, or member JWT + x-tenant-id)",
  security: eitherCredential,
  middleware: [memberOrApiKey()] as const,
  request: { query: AggregatesQuery },
  responses: withAccessErrors("memberOrApiKey", {
    200: json(z.object({ data: z.array(UsageAggregateSchema) }), "Aggregates"),
    400: errors[400],
  }),
});

const timeseries = createRoute({
  method: "get",
  path: "/usage/timeseries",
  tags: ["usage"],
  summary:
    "One feature's usage over time in hour or UTC-day buckets (API key, or member JWT + x-tenant-id)",
  description:
    "Buckets cover [from, to) widened to whole buckets (from down to its bucket's start, to up to its bucket's end), every bucket listed, zero where nothing was used; at most 744 hour or 366 day buckets. Values come from the per-hour units stored with the aggregates by the same flush, so over any range the buckets add up to the aggregates of the units used in it, across plan changes and reset windows. Units still being counted (a moment before their flush) are not in it yet.",
  security: eitherCredential,
  middleware: [memberOrApiKey()] as const,
  request: { query: TimeseriesQuery },
  responses: withAccessErrors("memberOrApiKey", {
    200: json(TimeseriesSchema, "Buckets in time order"),
    400: errors[400],
  }),
});

export function usageRoutes({
  usageViewService: views,
  usageIngestionService,
}: UsageRouteServices) {
  const usageRoutes = createRouter();

  usageRoutes.openapi(ingest, async (c) => {
    const items = c.req.valid("json").events;
    const service = usageIngestionService(c);
    return c.json(await service.ingest(c.var.apiKey.tenantId, items), 202);
  });

  usageRoutes.openapi(getEvent, async (c) =>
    c.json(await findUsageEvent(c.env, callerTenant(c).id, c.req.valid("param").eventId), 200),
  );

  usageRoutes.openapi(listEvents, async (c) =>
    c.json(await listUsageEvents(c.env, callerTenant(c).id, c.req.valid("query")), 200),
  );

  usageRoutes.openapi(aggregates, async (c) =>
    c.json(await views(c).aggregates(callerTenant(c).id, c.req.valid("query")), 200),
  );

  usageRoutes.openapi(timeseries, async (c) =>
    c.json(
      await usageTimeseries(database(c.env.DB), callerTenant(c).id, c.req.valid("query")),
      200,
    ),
  );
  return usageRoutes;
}
