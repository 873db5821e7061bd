import { deadLetterStages, deadLetterStatuses } from "@edge-platform/shared/db/schema/usage";
import { usageEventStatuses } from "@edge-platform/shared/db/schema/usage-events";
import { z } from "@hono/zod-openapi";
import { pageOf } from "../platform/index.ts";
import { MAX_EVENTS_PER_BATCH } from "./domain/usage-events.ts";

const UsageEventInSchema = z
  .object({
    eventId: z.string().openapi({ example: "6f1c7f0e-6a47-4d3e-9a57-1f1b7d1c2a10" }),
    feature: z.string().openapi({ example: "api_calls" }),
    amount: z.number().int().openapi({ example: 1 }),
    timestamp: z.string().openapi({ example: "2026-11-01T12:00:00Z" }),
    metadata: z.record(z.string(), z.unknown()).optional(),
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
  })
  .openapi("UsageEvent");

const listInstant = z.iso
  .datetime({ offset: true, error: "must be an ISO-8601 date-time with a time zone" })
  .optional();

export const UsageEventsQuery = z
  .object({
    from: listInstant.openapi({
      description: "Events received at or after this instant",
      example: "2026-11-01T00:00:00Z",
    }),
    to: listInstant.openapi({ description: "Events received before this instant" }),
    feature: z.string().min(1).max(100).optional(),
    status: z.enum(usageEventStatuses).optional(),
    limit: z.coerce
      .number()
      .int("limit must be an integer")
      .min(1, "limit must be at least 1")
      .max(1000, "limit must be at most 1000")
      .default(100),
    cursor: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .openapi({ description: "meta.nextCursor of the previous page" }),
  })
  .strict();

export const UsageEventPageSchema = z
  .object({
    data: z.array(UsageEventSchema),
    meta: z.object({ nextCursor: z.string().nullable() }),
  })
  .openapi("UsageEventPage");

export const EventIdParam = z.object({
  eventId: z
    .string()
    .min(1, "eventId should not be empty")
    .max(255, "eventId must be at most 255 characters")
    .openapi({ param: { name: "eventId", in: "path" } }),
});

export const UsageAggregateSchema = z
  .object({
    subscriptionId: z.string(),
    feature: z.string(),
    periodKey: z.string(),
    periodStart: z.string(),
    periodEnd: z.string().nullable(),
    amount: z.number().int(),
    lastEventAt: z.string().nullable(),
    updatedAt: z.string(),
  })
  .openapi("UsageAggregate");

export const AggregatesQuery = z
  .object({
    feature: z.string().min(1).max(100).optional(),
    periodKey: z.string().min(1).max(40).optional(),
    subscriptionId: z.uuid("subscriptionId must be a valid UUID").optional(),
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
  })
  .strict();

export const TimeseriesSchema = z
  .object({
    data: z.array(
      z.object({
        start: z.string().openapi({ example: "2026-11-01T00:00:00.000Z" }),
        end: z.string().openapi({ example: "2026-11-01T01:00:00.000Z" }),
        value: z.number().int().openapi({ example: 42 }),
      }),
    ),
  })
  .openapi("UsageTimeseries");
