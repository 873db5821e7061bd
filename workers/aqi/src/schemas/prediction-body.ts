/**
 * The prediction request bodies, validated without zod walking every reading.
 *
 * A batch of 100 requests with recent_hours carries thousands of readings,
 * and zod checking each of their fields was most of such a request's cost.
 * So zod checks each request's own fields (the very field schemas of
 * `PredictionRequest`, so the same coercions) with `recent_hours` left raw,
 * and the readings are checked here by hand. The hand check accepts only
 * what the `RecentHour` schema accepts and yields what it yields (fields in
 * the schema's order, unknown keys dropped); whatever it does not recognise
 * at once (numeric strings, values out of range, a missing hours_before, a
 * list too long, ...) sends the whole body through the full schema instead.
 * The answers, 422 bodies included, are therefore the schema's.
 */
import { z } from "@hono/zod-openapi";
import { CONCENTRATION_BOUNDS, MAX_RECENT_HOURS } from "../domain/history.ts";
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

type MutableReading = { hours_before: number } & { [field in ReadingField]?: number | null };

/** A reading's fields as JSON gives them (named, so each is read with a fixed property name). */
interface RawReading {
  readonly hours_before?: unknown;
  readonly pm25?: unknown;
  readonly pm10?: unknown;
  readonly no2?: unknown;
  readonly so2?: unknown;
  readonly nh3?: unknown;
  readonly co?: unknown;
  readonly o3?: unknown;
}

const { pm25, pm10, no2, so2, nh3, co, o3 } = CONCENTRATION_BOUNDS;

/** Absent, null, or a number within the bounds (NaN and the infinities fail both comparisons). */
function plainConcentration(value: unknown, bounds: { ge: number; le: number }): boolean {
  return (
    value === undefined ||
    value === null ||
    (typeof value === "number" && value >= bounds.ge && value <= bounds.le)
  );
}

/**
 * One reading as the `RecentHour` schema would yield it, when it is plainly
 * valid: an object whose hours_before is an integer in range and whose
 * concentrations are absent, null or numbers in range. Undefined otherwise.
 */
export function quickReading(value: unknown): RecentHour | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const raw = value as RawReading;
  const hoursBefore = raw.hours_before;
  if (
    typeof hoursBefore !== "number" ||
    !Number.isInteger(hoursBefore) ||
    hoursBefore < 1 ||
    hoursBefore > MAX_RECENT_HOURS
  ) {
    return undefined;
  }
  // Each field read by name: reading them by a computed key cost more than the rest.
  if (
    !plainConcentration(raw.pm25, pm25) ||
    !plainConcentration(raw.pm10, pm10) ||
    !plainConcentration(raw.no2, no2) ||
    !plainConcentration(raw.so2, so2) ||
    !plainConcentration(raw.nh3, nh3) ||
    !plainConcentration(raw.co, co) ||
    !plainConcentration(raw.o3, o3)
  ) {
    return undefined;
  }
  // The usual reading sends the schema's fields in its order and nothing else: the schema
  // would yield an equal object, so the reading itself serves (no copy to allocate).
  if (inSchemaOrder(value)) return value as RecentHour;
  return schemaCopy(raw, hoursBefore);
}

/** The schema's copy of a reading: its fields in its order, an absent one left out (not undefined), unknown keys dropped. */
function schemaCopy(raw: RawReading, hoursBefore: number): RecentHour {
  const reading: MutableReading = { hours_before: hoursBefore };
  for (const field of READING_FIELDS) {
    const concentration = raw[field];
    if (concentration !== undefined) reading[field] = concentration as number | null;
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

/** A `recent_hours` list as the schema would yield it, when every reading is plainly valid; undefined otherwise. */
export function quickRecentHours(value: unknown): RecentHour[] | undefined {
  if (!Array.isArray(value) || value.length < 1 || value.length > MAX_RECENT_HOURS) {
    return undefined;
  }
  const readings: RecentHour[] = new Array(value.length);
  for (let index = 0; index < value.length; index += 1) {
    const reading = quickReading(value[index]);
    if (reading === undefined) return undefined;
    readings[index] = reading;
  }
  return readings;
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
