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
    "Each event is judged by itself: one with missing fields or a non-positive or non-integer amount is `rejected` with a reason code while the others go in (`amount` is 1 when absent). A repeat of an eventId (inside the batch, or already stored for the tenant) is `duplicate` and counted once. A malformed body, an empty or oversized batch, or a body over 1 MB is a 400 and stores nothing. Bad `properties` on any event (not an object, over 20 keys, a key not matching [a-z0-9_]{1,64}, a value that is not a string of at most 256 characters or a finite number) is a 422 naming the event and the key, and stores nothing of the batch. Accepted events are then validated and aggregated asynchronously: see GET /usage/events/{eventId}.",
  security: [{ apiKey: [] }],
  middleware: [authenticateApiKey(), limitBatchBody()] as const,
  request: { body: jsonBody(UsageBatchBody) },
  responses: withAccessErrors("apiKey", {
    202: json(IngestionResultSchema, "Accepted for processing"),
    400: errors[400],
    422: errors[422],
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
    "The tenant's usage events in the order they happened (`timestamp`, ties by `id`), from the usage log and its R2 archive (API key, or member JWT + x-tenant-id)",
  description:
    "`from` and `to` bound the event time (`timestamp`, as the client sent it), `receivedFrom` and `receivedTo` the time of receipt (`receivedAt`); each range includes its start and excludes its end, and all four combine with `feature` and `status`. At most `limit` (1-1000, default 100) per page. Pass `meta.nextCursor` as `cursor` (with the same filters) for the next page; it is null on the last. The cursor is the position (timestamp, id) of the page's last event and the next page lists what follows it: no event is listed twice or skipped, however many share a timestamp. An event that arrives later with an older timestamp than the cursor's (a late event) is not on the following pages; a listing from the start shows it. One request reads at most a set number of archive files (USAGE_LIST_MAX_FILES, 20): when a filter matches few events among many files, a page may hold fewer than `limit` events, or none, and still give `nextCursor`, which goes on from where the reading stopped; keep following it until it is null. Each event is the body GET /usage/events/{eventId} answers.",
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
  description:
    "One row per window. A plain feature's row answers its counted units; a feature with a meter answers the meter's quantity of the window, over all its groups. With `groupBy` (and `feature`, which it needs), a metered feature answers one row per window and combination of the named properties' values (`dimensions`), the overflow group (events beyond the meter's combination bound) as its own row with `dimensions: {}` and `overflow: true`; a window counted before the feature had a meter answers one row with its properties null. A coarser split merges the stored groups, so UNIQUE_COUNT counts a value seen in two groups once per group. `groupBy` without `feature`, or naming a property the feature's meter does not group by, is a 422.",
  security: eitherCredential,
  middleware: [memberOrApiKey()] as const,
  request: { query: AggregatesQuery },
  responses: withAccessErrors("memberOrApiKey", {
    200: json(z.object({ data: z.array(UsageAggregateSchema) }), "Aggregates"),
    400: errors[400],
    422: errors[422],
  }),
});

const timeseries = createRoute({
  method: "get",
  path: "/usage/timeseries",
  tags: ["usage"],
  summary:
    "One feature's usage over time in hour or UTC-day buckets (API key, or member JWT + x-tenant-id)",
  description:
    "Buckets cover [from, to) widened to whole buckets (from down to its bucket's start, to up to its bucket's end), every bucket listed, zero where nothing was used; at most 744 hour or 366 day buckets. Values come from the per-hour units stored with the aggregates by the same flush, so over any range a plain feature's buckets add up to the aggregates of the units used in it, across plan changes and reset windows. A feature with a meter answers its meter's quantity per bucket from the per-hour group summaries (see `value`), and with `groupBy` adds `series`, the same buckets per combination of the named properties' values. Units still being counted (a moment before their flush) are not in it yet. A `groupBy` property the feature's meter does not group by is a 422.",
  security: eitherCredential,
  middleware: [memberOrApiKey()] as const,
  request: { query: TimeseriesQuery },
  responses: withAccessErrors("memberOrApiKey", {
    200: json(TimeseriesSchema, "Buckets in time order"),
    400: errors[400],
    422: errors[422],
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
