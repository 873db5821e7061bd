/**
 * The prediction request bodies, validated without zod walking every reading.
 *
 * A batch of 100 requests with recent_hours carries thousands of readings,
 * and zod checking each of their fields was most of such a request's cost.
 * So zod checks each request's own fields (the very field schemas of
 * `PredictionRequest`, so the same coercions) with `recent_hours` left raw,
 * and the readings are checked by hand: their shape here, their
 * concentrations as `prepareSentReadings` lays them out for scoring, so each
 * reading is read once. The hand check accepts only
 * what the `RecentHour` schema accepts and yields what it yields (fields in
 * the schema's order, unknown keys dropped); whatever it does not recognise
 * at once (numeric strings, values out of range, a missing hours_before, a
 * list too long, ...) sends the whole body through the full schema instead.
 * The answers, 422 bodies included, are therefore the schema's.
 */
import { z } from "@hono/zod-openapi";
import { MAX_RECENT_HOURS, prepareSentReadings, type SentReading } from "../domain/history.ts";
import { READING_FIELDS, type ReadingField, type RecentHour } from "../domain/recent-hours.ts";
import { MAX_BATCH_SIZE, PredictionRequest } from "./prediction.ts";

export type BatchPredictionBody = { requests: PredictionRequest[] };

/** `PredictionRequest` with `recent_hours` taken as it came. */
const RequestFields = z.object({
  ...PredictionRequest.shape,
  recent_hours: z.unknown().optional(),
});
const BatchFields = z.object({
  requests: z.array(RequestFields).min(1).max(MAX_BATCH_SIZE),
});

type MutableReading = { hours_before: number } & { [field in ReadingField]?: unknown };

/**
 * One reading as the `RecentHour` schema would yield it, its concentrations
 * still to be checked (`prepareSentReadings` reads them): an object whose
 * hours_before is an integer in range. Undefined otherwise.
 */
function quickReading(value: unknown): SentReading | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const hoursBefore = (value as { hours_before?: unknown }).hours_before;
  if (
    typeof hoursBefore !== "number" ||
    !Number.isInteger(hoursBefore) ||
    hoursBefore < 1 ||
    hoursBefore > MAX_RECENT_HOURS
  ) {
    return undefined;
  }
  // The usual reading sends the schema's fields in its order and nothing else: the schema
  // would yield an equal object, so the reading itself serves (no copy to allocate).
  if (inSchemaOrder(value)) return value as SentReading;
  const reading: MutableReading = { hours_before: hoursBefore };
  for (const field of READING_FIELDS) {
    // The schema leaves an absent field out (not undefined) and drops unknown keys.
    const concentration = (value as Record<string, unknown>)[field];
    if (concentration !== undefined) reading[field] = concentration;
  }
  return reading;
}

const READING_KEYS: readonly string[] = ["hours_before", ...READING_FIELDS];

/** Whether the object's keys are all schema fields, in the schema's order. */
function inSchemaOrder(value: object): boolean {
  let next = 0;
  for (const key in value) {
    while (next < READING_KEYS.length && READING_KEYS[next] !== key) next += 1;
    if (next === READING_KEYS.length) return false;
    next += 1;
  }
  return true;
}

/**
 * A `recent_hours` list as the schema would yield it, when it is 1 to 72
 * readings that are plainly valid (concentrations numbers within their
 * bounds, null or absent); undefined otherwise. Checking the concentrations
 * also prepares the readings for scoring (`prepareSentReadings`), so they are
 * read once.
 */
export function quickRecentHours(value: unknown): RecentHour[] | undefined {
  if (!Array.isArray(value) || value.length < 1 || value.length > MAX_RECENT_HOURS) {
    return undefined;
  }
  const readings: SentReading[] = new Array(value.length);
  for (let index = 0; index < value.length; index += 1) {
    const reading = quickReading(value[index]);
    if (reading === undefined) return undefined;
    readings[index] = reading;
  }
  return prepareSentReadings(readings) ? (readings as RecentHour[]) : undefined;
}

/** Puts the hand-checked readings in place of the raw ones; false when they are not plainly valid. */
function withReadings(request: Record<string, unknown>): boolean {
  const raw = request.recent_hours;
  // Absent stays absent and null stays null, as the optional, nullable list field yields them.
  if (raw === undefined || raw === null) return true;
  const readings = quickRecentHours(raw);
  if (readings === undefined) return false;
  request.recent_hours = readings;
  return true;
}

/** A /predict body as `PredictionRequest` would yield it, when plainly valid; undefined otherwise. */
export function quickPredictionRequest(body: unknown): PredictionRequest | undefined {
  const fields = RequestFields.safeParse(body);
  if (!fields.success || !withReadings(fields.data)) return undefined;
  return fields.data as PredictionRequest;
}

/** A /predict/batch body as `BatchPredictionRequest` would yield it, when plainly valid; undefined otherwise. */
export function quickBatchPredictionRequest(body: unknown): BatchPredictionBody | undefined {
  const fields = BatchFields.safeParse(body);
  if (!fields.success) return undefined;
  for (const request of fields.data.requests) {
    if (!withReadings(request)) return undefined;
  }
  return fields.data as BatchPredictionBody;
}
