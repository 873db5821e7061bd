import { MAX_USAGE_AMOUNT } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import { type EventProperties, propertiesProblem } from "@edge-platform/shared/billing/meter";
import { z } from "zod";

// Ingestion rules for one batch of usage events. The batch as a whole must
// be well formed (the route's body schema: an object with `events`, or a
// bare array, of 1 to 1000 items, at most 1 MB); each event is then judged
// on its own, so one bad event never costs the others. Whether an event's
// feature is in the plan, its tenant is active and its timestamp is inside
// the accepted window is decided later, by the validation stage (the usage
// consumer), against the time the event was received.
//
// `properties` are the exception: a meter reads them to decide what an
// event counts for, so a batch with any malformed `properties` is refused
// as a whole (batchRefusal) rather than stored with some of its events
// missing the values the client meant them to be billed by.

export const MAX_EVENTS_PER_BATCH = 1000;
export const MAX_BATCH_BYTES = 1024 * 1024;
export const MAX_METADATA_BYTES = 4096;
export const MAX_EVENT_ID_LENGTH = 255;
export const MAX_FEATURE_LENGTH = 100;

/** Stable codes of the per-event rejections at ingestion. */
export const INGESTION_REJECTIONS = {
  invalidEvent: "INVALID_EVENT",
  missingFields: "MISSING_REQUIRED_FIELDS",
  invalidEventId: "INVALID_EVENT_ID",
  invalidFeature: "INVALID_FEATURE",
  invalidAmount: "INVALID_AMOUNT",
  invalidTimestamp: "INVALID_TIMESTAMP",
  invalidMetadata: "INVALID_METADATA",
  metadataTooLarge: "METADATA_TOO_LARGE",
  unknownField: "UNKNOWN_FIELD",
  /** Never answered per event: the whole batch is refused (batchRefusal). */
  invalidProperties: "INVALID_PROPERTIES",
} as const;

export type IngestionRejectionCode =
  (typeof INGESTION_REJECTIONS)[keyof typeof INGESTION_REJECTIONS];

/** The amount of an event that does not say: one use. */
export const DEFAULT_USAGE_AMOUNT = 1;

/** An event that passed the ingestion rules, normalised. */
export interface IncomingUsageEvent {
  eventId: string;
  feature: string;
  amount: number;
  /** ISO-8601 in UTC (`toISOString`). */
  timestamp: string;
  metadata: Record<string, unknown>;
  /** What meters read (shared/src/billing/meter.ts); {} when the event has none. */
  properties: EventProperties;
}

export type EventJudgement =
  | { ok: true; event: IncomingUsageEvent }
  | { ok: false; eventId: string | null; code: IngestionRejectionCode; message: string };

const KNOWN_FIELDS = new Set([
  "eventId",
  "feature",
  "amount",
  "timestamp",
  "metadata",
  "properties",
]);
const REQUIRED_FIELDS = ["eventId", "feature", "timestamp"] as const;

/** ISO-8601 date-time with an offset or Z (what `timestamp` must be). */
const isoDateTime = z.iso.datetime({ offset: true, local: false });

const encoder = new TextEncoder();

export function byteLength(text: string): number {
  return encoder.encode(text).byteLength;
}

type Rejection = Extract<EventJudgement, { ok: false }>;

function reject(eventId: string | null, code: IngestionRejectionCode, message: string): Rejection {
  return { ok: false, eventId, code, message };
}

/** A field's value once it passed its rule, or why it did not. */
type FieldJudgement<T> = { ok: true; value: T } | Rejection;

/** Judges one item of the batch. */
export function judgeEvent(item: unknown): EventJudgement {
  if (typeof item !== "object" || item === null || Array.isArray(item)) {
    return reject(null, INGESTION_REJECTIONS.invalidEvent, "event must be an object");
  }
  const record = item as Record<string, unknown>;
  // Kept when usable even if the event is rejected, so the caller can tell which one failed.
  const eventId = usableEventId(record.eventId);
  // First, so that an event failing another rule still has its properties checked.
  const properties = judgeProperties(eventId, record.properties);
  if (!properties.ok) return properties;
  const fieldSet = fieldSetRejection(record, eventId);
  if (fieldSet) return fieldSet;
  if (eventId === null) {
    return reject(
      null,
      INGESTION_REJECTIONS.invalidEventId,
      `eventId must be a string of 1 to ${MAX_EVENT_ID_LENGTH} characters`,
    );
  }
  const { feature } = record;
  // Absent only: a null amount is a bad one, not one use.
  const amount = record.amount === undefined ? DEFAULT_USAGE_AMOUNT : record.amount;
  if (!isFeature(feature)) {
    return reject(
      eventId,
      INGESTION_REJECTIONS.invalidFeature,
      `feature must be a string of 1 to ${MAX_FEATURE_LENGTH} characters`,
    );
  }
  if (!isAmount(amount)) {
    return reject(
      eventId,
      INGESTION_REJECTIONS.invalidAmount,
      `amount must be a positive integer of at most ${MAX_USAGE_AMOUNT}`,
    );
  }
  const instant = judgeTimestamp(eventId, record.timestamp);
  if (!instant.ok) return instant;
  const metadata = judgeMetadata(eventId, record.metadata);
  if (!metadata.ok) return metadata;
  return {
    ok: true,
    event: {
      eventId,
      feature,
      amount,
      timestamp: instant.value.toISOString(),
      metadata: metadata.value,
      properties: properties.value,
    },
  };
}

function usableEventId(value: unknown): string | null {
  return typeof value === "string" && value.length > 0 && value.length <= MAX_EVENT_ID_LENGTH
    ? value
    : null;
}

/** Missing required fields, then fields the event must not have; null when the set is right. */
function fieldSetRejection(
  record: Record<string, unknown>,
  eventId: string | null,
): Rejection | null {
  const missing = REQUIRED_FIELDS.filter(
    (field) => record[field] === undefined || record[field] === null,
  );
  if (missing.length > 0) {
    return reject(
      eventId,
      INGESTION_REJECTIONS.missingFields,
      `missing required field${missing.length > 1 ? "s" : ""}: ${missing.join(", ")}`,
    );
  }
  const unknown = Object.keys(record).filter((key) => !KNOWN_FIELDS.has(key));
  if (unknown.length > 0) {
    return reject(
      eventId,
      INGESTION_REJECTIONS.unknownField,
      unknown.map((key) => `property ${key} should not exist`).join("; "),
    );
  }
  return null;
}

function isFeature(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 && value.length <= MAX_FEATURE_LENGTH;
}

function isAmount(value: unknown): value is number {
  return (
    typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_USAGE_AMOUNT
  );
}

/** The instant of an ISO-8601 `timestamp`; the format check alone lets impossible dates through. */
function judgeTimestamp(eventId: string, value: unknown): FieldJudgement<Date> {
  if (typeof value !== "string" || !isoDateTime.safeParse(value).success) {
    return reject(
      eventId,
      INGESTION_REJECTIONS.invalidTimestamp,
      "timestamp must be an ISO-8601 date-time with a time zone (e.g. 2026-11-01T12:00:00Z)",
    );
  }
  const instant = new Date(value);
  if (Number.isNaN(instant.getTime())) {
    return reject(
      eventId,
      INGESTION_REJECTIONS.invalidTimestamp,
      "timestamp is not a real instant",
    );
  }
  return { ok: true, value: instant };
}

/** `properties` are optional: absent stands for none; null is not an object, so it is refused. */
function judgeProperties(eventId: string | null, value: unknown): FieldJudgement<EventProperties> {
  // The message names the key at fault (or `properties` itself).
  const problem = propertiesProblem(value);
  if (problem) return reject(eventId, INGESTION_REJECTIONS.invalidProperties, problem.message);
  return { ok: true, value: (value ?? {}) as EventProperties };
}

/** `metadata` is optional: absent or null stands for an empty object. */
function judgeMetadata(eventId: string, value: unknown): FieldJudgement<Record<string, unknown>> {
  const metadata = value ?? {};
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) {
    return reject(eventId, INGESTION_REJECTIONS.invalidMetadata, "metadata must be an object");
  }
  if (byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES) {
    return reject(
      eventId,
      INGESTION_REJECTIONS.metadataTooLarge,
      `metadata must be at most ${MAX_METADATA_BYTES} bytes as JSON`,
    );
  }
  return { ok: true, value: metadata as Record<string, unknown> };
}

/**
 * Why the batch cannot be taken at all: its first event with bad
 * `properties`, named by its eventId (or its index when it has no usable
 * one) with the key at fault; undefined when there is none.
 */
export function batchRefusal(outcomes: EventOutcome[]): string | undefined {
  const index = outcomes.findIndex(
    (outcome) =>
      outcome.status === "rejected" && outcome.reason === INGESTION_REJECTIONS.invalidProperties,
  );
  const outcome = outcomes[index];
  if (outcome?.status !== "rejected") return undefined;
  const event =
    outcome.eventId === null
      ? `event at index ${index}`
      : `event "${outcome.eventId.slice(0, 100)}" (index ${index})`;
  return `Invalid properties in ${event}: ${outcome.message}`;
}

export type EventOutcome =
  | { eventId: string | null; status: "accepted" }
  | { eventId: string | null; status: "duplicate" }
  | { eventId: string | null; status: "rejected"; reason: IngestionRejectionCode; message: string };

export interface BatchPlan {
  /** One slot per request item, in request order. */
  outcomes: EventOutcome[];
  /** The events to store, first occurrence of each eventId only. */
  candidates: { index: number; event: IncomingUsageEvent }[];
}

/**
 * Judges every item and marks repeats of an eventId inside the batch as
 * duplicates of its first occurrence (which alone is stored).
 */
export function planBatch(items: unknown[]): BatchPlan {
  const outcomes: EventOutcome[] = [];
  const candidates: BatchPlan["candidates"] = [];
  const seen = new Set<string>();
  items.forEach((item, index) => {
    const judgement = judgeEvent(item);
    if (!judgement.ok) {
      outcomes.push({
        eventId: judgement.eventId,
        status: "rejected",
        reason: judgement.code,
        message: judgement.message,
      });
      return;
    }
    if (seen.has(judgement.event.eventId)) {
      outcomes.push({ eventId: judgement.event.eventId, status: "duplicate" });
      return;
    }
    seen.add(judgement.event.eventId);
    outcomes.push({ eventId: judgement.event.eventId, status: "accepted" });
    candidates.push({ index, event: judgement.event });
  });
  return { outcomes, candidates };
}

/** The 202 body: `accepted` counts accepted and duplicate events (both are recorded once). */
export function summarise(outcomes: EventOutcome[]) {
  let stored = 0;
  let duplicates = 0;
  let rejected = 0;
  for (const outcome of outcomes) {
    if (outcome.status === "accepted") stored++;
    else if (outcome.status === "duplicate") duplicates++;
    else rejected++;
  }
  return {
    accepted: stored + duplicates,
    rejected,
    duplicates,
    events: outcomes.map((outcome) =>
      outcome.status === "rejected"
        ? {
            eventId: outcome.eventId,
            status: outcome.status,
            reason: outcome.reason,
            message: outcome.message,
          }
        : { eventId: outcome.eventId, status: outcome.status },
    ),
  };
}
