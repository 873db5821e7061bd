import {
  MAX_EVENT_PROPERTIES,
  MAX_GROUP_BY,
  MAX_GROUP_COMBINATIONS,
  MAX_PROPERTY_TEXT,
} from "@edge-platform/shared/billing/meter";
import { deadLetterStages, deadLetterStatuses } from "@edge-platform/shared/db/schema/usage";
import { usageEventStatuses } from "@edge-platform/shared/db/schema/usage-events";
import { z } from "@hono/zod-openapi";
import { pageOf } from "../platform/index.ts";
import { MAX_EVENTS_PER_BATCH } from "./domain/usage-events.ts";

const PROPERTIES_RULES = `at most ${MAX_EVENT_PROPERTIES} keys matching [a-z0-9_]{1,64}, each value a string of at most ${MAX_PROPERTY_TEXT} characters or a finite number`;

const propertiesSchema = z.record(z.string(), z.union([z.string(), z.number()]));

const UsageEventInSchema = z
  .object({
    eventId: z.string().openapi({ example: "6f1c7f0e-6a47-4d3e-9a57-1f1b7d1c2a10" }),
    feature: z.string().openapi({ example: "api_calls" }),
    amount: z
      .number()
      .int()
      .optional()
      .openapi({ example: 1, description: "Units used, a positive integer; 1 when absent" }),
    timestamp: z.string().openapi({ example: "2026-11-01T12:00:00Z" }),
    metadata: z.record(z.string(), z.unknown()).optional(),
    properties: propertiesSchema.optional().openapi({
      description: `What the feature's meter reads (filters, the aggregated property, groups): ${PROPERTIES_RULES}. Bad properties on any event refuse the whole batch with a 422.`,
      example: { region: "eu", model: "large", tokens: 1200 },
    }),
  })
  .openapi("UsageEventIn");

/**
 * The body as the route validates it: `{events: [...]}` or a bare array,
 * 1 to 1000 items. Items are judged one by one by the service (a bad item
 * is rejected by itself), so the schema only fixes the batch's shape.
 */
const eventList = z
  .array(z.unknown())
  .min(1, "events must contain at least 1 event")
  .max(MAX_EVENTS_PER_BATCH, `events must contain at most ${MAX_EVENTS_PER_BATCH} events`);

export const UsageBatchBody = z
  .preprocess(
    // A bare array is the same batch as {events: [...]}.
    (body) => (Array.isArray(body) ? { events: body } : body),
    z.strictObject({ events: eventList }),
  )
  .openapi("UsageBatch", {
    type: "object",
    description: `{"events": [UsageEventIn, ...]} or a bare array of UsageEventIn; 1-${MAX_EVENTS_PER_BATCH} events, at most 1 MB`,
    example: {
      events: [
        {
          eventId: "6f1c7f0e-6a47-4d3e-9a57-1f1b7d1c2a10",
          feature: "api_calls",
          amount: 1,
          timestamp: "2026-11-01T12:00:00Z",
          properties: { region: "eu" },
        },
      ],
    },
  });

export { UsageEventInSchema };

export const IngestionResultSchema = z
  .object({
    accepted: z
      .number()
      .int()
      .openapi({ description: "Events accepted now or before (duplicates)" }),
    rejected: z.number().int(),
    duplicates: z.number().int(),
    events: z.array(
      z.object({
        eventId: z.string().nullable(),
        status: z.enum(["accepted", "duplicate", "rejected"]),
        reason: z.string().optional().openapi({ example: "INVALID_AMOUNT" }),
        message: z.string().optional(),
      }),
    ),
  })
  .openapi("UsageIngestionResult");

export const UsageEventSchema = z
  .object({
    id: z.string(),
    eventId: z.string(),
    feature: z.string(),
    amount: z.number().int(),
    timestamp: z.string(),
    receivedAt: z.string(),
    status: z.enum(usageEventStatuses),
    reason: z.string().nullable().openapi({ example: "TIMESTAMP_TOO_OLD" }),
    message: z.string().nullable(),
    subscriptionId: z.string().nullable(),
    periodKey: z.string().nullable(),
    validatedAt: z.string().nullable(),
    aggregatedAt: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    properties: propertiesSchema.openapi({
      description: "The event's properties as sent ({} when it had none)",
      example: { region: "eu", tokens: 1200 },
    }),
  })
  .openapi("UsageEvent");

const listInstant = z.iso
  .datetime({ offset: true, error: "must be an ISO-8601 date-time with a time zone" })
  .optional();

export const UsageEventsQuery = z
  .object({
    from: listInstant.openapi({
      description: "Events whose `timestamp` (when the usage happened) is at or after this instant",
      example: "2026-11-01T00:00:00Z",
    }),
    to: listInstant.openapi({
      description: "Events whose `timestamp` is before this instant",
    }),
    receivedFrom: listInstant.openapi({
      description: "Events received (`receivedAt`) at or after this instant",
    }),
    receivedTo: listInstant.openapi({ description: "Events received before this instant" }),
    feature: z.string().min(1).max(100).optional(),
    status: z.enum(usageEventStatuses).optional(),
    limit: z.coerce
      .number()
      .int("limit must be an integer")
      .min(1, "limit must be at least 1")
      .max(1000, "limit must be at most 1000")
      .default(100),
    cursor: z.string().min(1).max(200).optional().openapi({
      description:
        "meta.nextCursor of the previous page (with the same filters): the page lists what follows it",
    }),
  })
  .strict();

export const UsageEventPageSchema = z
  .object({
    data: z.array(UsageEventSchema),
    meta: z.object({
      nextCursor: z.string().nullable().openapi({
        description:
          "The position of this page's last event (its timestamp and id), as the `cursor` of the next page; null on the last",
      }),
    }),
  })
  .openapi("UsageEventPage");

export const EventIdParam = z.object({
  eventId: z
    .string()
    .min(1, "eventId should not be empty")
    .max(255, "eventId must be at most 255 characters")
    .openapi({ param: { name: "eventId", in: "path" } }),
});

/** The values of the requested groupBy properties; null where the events had none. */
const dimensionsSchema = z.record(z.string(), z.union([z.string(), z.number(), z.null()]));

const GROUP_BY_RULES = `Comma-separated property names (at most ${MAX_GROUP_BY}, e.g. \`model,direction\`), each one the feature's meter groups by (its \`meter.groupBy\`); any other is a 422.`;

const groupByQuery = z
  .string()
  .max(300, "groupBy must be at most 300 characters")
  .optional()
  .openapi({ example: "model,direction" });

export const UsageAggregateSchema = z
  .object({
    subscriptionId: z.string(),
    feature: z.string(),
    periodKey: z.string(),
    periodStart: z.string(),
    periodEnd: z.string().nullable(),
    amount: z.number().openapi({
      description:
        "A plain feature's counted units (a whole number). A feature with a meter: the meter's quantity of the window (SUM, COUNT, UNIQUE_COUNT, MAX, MIN, AVG, LATEST, or WEIGHTED_SUM: the level carried in plus each change weighted by the share of the window it was held), which may be fractional.",
      example: 1200,
    }),
    lastEventAt: z.string().nullable(),
    updatedAt: z.string(),
    dimensions: dimensionsSchema.nullable().openapi({
      description:
        'With `groupBy`: the values of the requested properties that this row\'s events had ({"model": "large", "direction": "input"}); null for a property the events did not carry or were not split by when counted. `{}` for the overflow group (`overflow: true`). Null without `groupBy`.',
      example: { model: "large", direction: "input" },
    }),
    overflow: z
      .boolean()
      .optional()
      .openapi({
        description: `With \`groupBy\` only. true: the overflow group, the events of the window beyond the meter's ${MAX_GROUP_COMBINATIONS} combinations of groupBy values, counted together without their values (\`dimensions\` is {}).`,
      }),
  })
  .openapi("UsageAggregate");

export const AggregatesQuery = z
  .object({
    feature: z.string().min(1).max(100).optional(),
    periodKey: z.string().min(1).max(40).optional(),
    subscriptionId: z.uuid("subscriptionId must be a valid UUID").optional(),
    groupBy: groupByQuery.openapi({
      description: `One row per window and combination of these properties' values instead of one per window; needs \`feature\`. ${GROUP_BY_RULES}`,
    }),
  })
  .strict();

export const DeadLetterSchema = z
  .object({
    id: z.string(),
    sourceEventId: z.string().nullable(),
    tenantId: z.string().nullable(),
    topic: z.string(),
    failureStage: z.enum(deadLetterStages),
    failureReason: z.string(),
    originalPayload: z.unknown(),
    errorDetails: z.string().nullable(),
    retryCount: z.number().int(),
    status: z.enum(deadLetterStatuses),
    firstFailedAt: z.string(),
    lastAttemptedAt: z.string().nullable(),
    resolvedAt: z.string().nullable(),
    resolvedBy: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("DeadLetterEvent");

export const DeadLetterPageSchema = pageOf(DeadLetterSchema);

const instant = (name: string) =>
  z.iso
    .datetime({ offset: true, message: `${name} must be an ISO-8601 date-time` })
    .openapi({ example: name === "from" ? "2026-11-01T00:00:00Z" : "2026-11-02T00:00:00Z" });

export const TimeseriesQuery = z
  .object({
    feature: z
      .string({ message: "feature is required" })
      .min(1, "feature is required")
      .max(100, "feature must be at most 100 characters"),
    from: instant("from"),
    to: instant("to"),
    granularity: z
      .enum(["hour", "day"], { message: "granularity must be one of: hour, day" })
      .default("hour"),
    groupBy: groupByQuery.openapi({
      description: `Adds \`series\`: the same buckets per combination of these properties' values. ${GROUP_BY_RULES}`,
    }),
  })
  .strict();

const TimeseriesBucketSchema = z
  .object({
    start: z.string().openapi({ example: "2026-11-01T00:00:00.000Z" }),
    end: z.string().openapi({ example: "2026-11-01T01:00:00.000Z" }),
    value: z.number().openapi({
      description:
        "A plain feature's units used in the bucket (a whole number). A feature with a meter: its quantity in the bucket, by aggregation: SUM the sum of the values; COUNT the events; UNIQUE_COUNT the distinct values first seen (in their reset window) during the bucket; MAX, MIN, AVG and LATEST those of the bucket's events (0 without events); WEIGHTED_SUM the level at the bucket's end, the sum of every change stored up to then (kept through buckets without events). May be fractional.",
      example: 42,
    }),
  })
  .openapi("UsageTimeseriesBucket");

export const TimeseriesSchema = z
  .object({
    data: z.array(TimeseriesBucketSchema).openapi({
      description: "Every bucket of the range in time order: the feature's total",
    }),
    series: z
      .array(
        z.object({
          dimensions: dimensionsSchema.openapi({
            description:
              "The combination's values of the groupBy properties (null: the events had none); {} for the overflow group",
            example: { model: "large" },
          }),
          overflow: z.boolean().openapi({
            description: `true: the overflow group, events beyond the meter's ${MAX_GROUP_COMBINATIONS} combinations per window, counted without their values`,
          }),
          data: z.array(TimeseriesBucketSchema).openapi({
            description: "The same buckets as `data`, this combination's share",
          }),
        }),
      )
      .optional()
      .openapi({
        description:
          "With `groupBy` only: one series per combination that has usage in the range (or, for WEIGHTED_SUM, a level reached before it), ordered by its values with the overflow group last. Absent without groupBy.",
      }),
  })
  .openapi("UsageTimeseries");
