import { z } from "zod";
import { MAX_COUNTER_SHARDS } from "../billing/counter-shards.ts";
import { type EventProperties, eventPropertiesSchema } from "../billing/meter.ts";
import { fnv1a } from "../usage-log/client.ts";

// Wire contracts of the usage pipeline's queues, shared by the producer
// (the billing worker: the usage logs' outboxes and re-drive, and
// dead-letter retries) and the consumers (the usage-consumer worker). Every consumer
// parses what it receives with these schemas; a body that does not parse
// is a poison message and is dead-lettered with its reason, never retried.

export const USAGE_QUEUES = {
  raw: "usage-raw",
  validated: "usage-validated",
  duplicates: "usage-duplicates",
  rawDeadLetters: "usage-raw-dlq",
  validatedDeadLetters: "usage-validated-dlq",
  duplicatesDeadLetters: "usage-duplicates-dlq",
} as const;
export type UsageQueueName = (typeof USAGE_QUEUES)[keyof typeof USAGE_QUEUES];

/**
 * Raw events may be spread over several queues (USAGE_RAW_QUEUES): queue 0
 * is usage-raw, queue i > 0 is usage-raw-<i>, each with its own dead-letter
 * queue (<name>-dlq). Each usage-log shard of a tenant sends to its own
 * queue (rawQueueIndex), so each queue takes its share of Queues' per-queue
 * message rate, a big tenant's too; the validation stage consumes every one
 * of them alike.
 */
export function rawQueueName(index: number): string {
  return index === 0 ? USAGE_QUEUES.raw : `${USAGE_QUEUES.raw}-${index}`;
}

const RAW_QUEUE = /^usage-raw(-[1-9][0-9]*)?$/;

/** Whether a queue carries raw usage events (usage-raw or usage-raw-<i>). */
export function isRawUsageQueue(name: string): boolean {
  return RAW_QUEUE.test(name);
}

/** Whether a queue is the dead-letter queue of a raw usage queue. */
export function isRawDeadLetterQueue(name: string): boolean {
  return name.endsWith("-dlq") && isRawUsageQueue(name.slice(0, -"-dlq".length));
}

/**
 * The raw queue of a tenant's usage-log shard among `count`: FNV-1a of the
 * tenant's id, plus the shard, modulo the count. The tenant's shards take
 * consecutive queues from where its hash points, so a tenant with as many
 * shards as there are queues uses every queue evenly (hashing each shard
 * on its own would leave some queues with two of its shards and others
 * with none); different tenants start at different queues.
 */
export function rawQueueIndex(tenantId: string, count: number, shard = 0): number {
  const queues = Math.max(1, Math.floor(count));
  if (queues === 1) return 0;
  return (fnv1a(tenantId) + Math.max(0, Math.floor(shard))) % queues;
}

/** Queues accept at most 100 messages per sendBatch. */
export const QUEUE_SEND_BATCH_MAX = 100;

const isoInstant = z.iso.datetime({ offset: true });

/**
 * An event's properties (what meters read: shared/src/billing/meter.ts),
 * checked in full at ingestion. Absent stands for none: messages of
 * earlier releases carry none, and senders leave out an empty object.
 */
const eventProperties = eventPropertiesSchema;

/** `properties` as a message carries them: absent when there are none (messages stay small). */
export function propertiesField(properties: EventProperties | undefined): {
  properties?: EventProperties;
} {
  return properties && Object.keys(properties).length > 0 ? { properties } : {};
}

/**
 * The tenant's counter shard that counts the event (its usage-log shard
 * modulo the tenant's counter shards, as the billing worker sets them when
 * it sends the event; shared/src/billing/counter-shards.ts). Absent: 0.
 */
const counterShard = z
  .number()
  .int()
  .min(0)
  .max(MAX_COUNTER_SHARDS - 1)
  .optional();

/**
 * usage-raw: an accepted event, as its tenant's usage log stores it. `retryOf`
 * names the dead letter an administrator retried, so the stage can mark it
 * RESOLVED once the event gets through.
 */
export const rawUsageMessage = z.object({
  /** Our id for the event (names its usage-log shard: shared/src/usage-log/client.ts). */
  id: z.uuid(),
  tenantId: z.uuid(),
  eventId: z.string().min(1).max(255),
  feature: z.string().min(1).max(100),
  amount: z.number(),
  timestamp: z.string().min(1).max(64),
  receivedAt: isoInstant,
  properties: eventProperties.optional(),
  retryOf: z.uuid().optional(),
  counterShard,
});
export type RawUsageMessage = z.infer<typeof rawUsageMessage>;

/** A reset window as the EntitlementCounter names it (key = start instant, or `lifetime`). */
export const usageWindow = z.object({
  key: z.string().min(1).max(40),
  start: isoInstant,
  end: isoInstant.nullable(),
});
export type UsageWindow = z.infer<typeof usageWindow>;

/** usage-validated: an event that passed validation, with where its units count. */
export const validatedUsageMessage = z.object({
  id: z.uuid(),
  tenantId: z.uuid(),
  eventId: z.string().min(1).max(255),
  subscriptionId: z.uuid(),
  feature: z.string().min(1).max(100),
  amount: z.number().int().positive(),
  timestamp: isoInstant,
  receivedAt: isoInstant,
  window: usageWindow,
  validatedAt: isoInstant,
  properties: eventProperties.optional(),
  retryOf: z.uuid().optional(),
  counterShard,
});
export type ValidatedUsageMessage = z.infer<typeof validatedUsageMessage>;

/** usage-duplicates: a delivery of an event that was already processed (monitoring only). */
export const duplicateUsageMessage = z.object({
  id: z.uuid(),
  tenantId: z.uuid(),
  eventId: z.string().min(1).max(255),
  status: z.string(),
  stage: z.enum(["VALIDATION", "AGGREGATION"]),
  seenAt: isoInstant,
});
export type DuplicateUsageMessage = z.infer<typeof duplicateUsageMessage>;

/**
 * A dead-letter row id derived from what failed (stage and event), so the
 * same failure delivered twice is stored once, as a UUID (version 8 layout)
 * that the admin routes accept.
 */
export async function deadLetterIdFor(key: string): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`dead-letter:${key}`)),
  );
  const bytes = digest.slice(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x80;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Exponential backoff for message retries: 1, 2, 4, ... seconds, at most 60. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(60, 2 ** Math.max(0, attempts - 1));
}

/**
 * Several events in one queue message. Queues limit and bill per message
 * (5,000 messages/s per queue; a write, a read and a delete each), so the
 * pipeline sends a tenant's events in envelopes of up to
 * USAGE_ENVELOPE_MAX_EVENTS; each event inside is a message body of its
 * own (raw or validated). Consumers also take single-event bodies (the
 * administrators' dead-letter retries send those).
 */
export const USAGE_ENVELOPE_KIND = "usage-events";
/** 100 validated events without properties are about 45 KB. */
export const USAGE_ENVELOPE_MAX_EVENTS = 100;
/**
 * A queue message takes at most 128 KB. Events with many long properties
 * reach that long before 100 of them (20 properties of 256 characters make
 * an event of 6 KB or more), so an envelope is also cut at this many bytes
 * of JSON; one event alone stays far below it (about 33 KB at worst).
 */
export const USAGE_ENVELOPE_MAX_BYTES = 100_000;
/** sendBatch takes at most 256 KB in all; stay under it with room for overhead. */
export const QUEUE_SEND_BATCH_MAX_BYTES = 200_000;

export interface UsageEnvelope<T> {
  kind: typeof USAGE_ENVELOPE_KIND;
  events: T[];
}

export function isUsageEnvelope(body: unknown): body is UsageEnvelope<unknown> {
  return (
    typeof body === "object" &&
    body !== null &&
    (body as Record<string, unknown>).kind === USAGE_ENVELOPE_KIND &&
    Array.isArray((body as Record<string, unknown>).events)
  );
}

/** The event bodies a message carries: an envelope's events, or the body itself. */
export function envelopeItems(body: unknown): unknown[] {
  return isUsageEnvelope(body) ? body.events : [body];
}

const utf8 = new TextEncoder();

/** The size of a body as the queue counts it: UTF-8 bytes of its JSON. */
export function jsonBytes(body: unknown): number {
  return utf8.encode(JSON.stringify(body)).byteLength;
}

/** An envelope's JSON around its events. */
const ENVELOPE_OVERHEAD = jsonBytes({ kind: USAGE_ENVELOPE_KIND, events: [] });

/**
 * Groups bodies by tenant (order kept) into envelopes of at most `max`
 * events and `maxBytes` of JSON (a body larger than that alone gets an
 * envelope of its own).
 */
export function packEnvelopes<T extends { tenantId: string }>(
  bodies: T[],
  max: number = USAGE_ENVELOPE_MAX_EVENTS,
  maxBytes: number = USAGE_ENVELOPE_MAX_BYTES,
): T[][] {
  const byTenant = new Map<string, { groups: T[][]; bytes: number }>();
  for (const body of bodies) {
    // The body and the comma after it.
    const size = jsonBytes(body) + 1;
    const tenant = byTenant.get(body.tenantId) ?? { groups: [], bytes: 0 };
    let last = tenant.groups.at(-1);
    if (!last || last.length >= max || (last.length > 0 && tenant.bytes + size > maxBytes)) {
      last = [];
      tenant.groups.push(last);
      tenant.bytes = ENVELOPE_OVERHEAD;
    }
    last.push(body);
    tenant.bytes += size;
    byTenant.set(body.tenantId, tenant);
  }
  return [...byTenant.values()].flatMap((tenant) => tenant.groups);
}

/** Splits envelopes into sendBatch calls within the message-count and byte limits. */
export function sendBatches<T>(envelopes: UsageEnvelope<T>[]): UsageEnvelope<T>[][] {
  const batches: UsageEnvelope<T>[][] = [];
  let current: UsageEnvelope<T>[] = [];
  let bytes = 0;
  for (const envelope of envelopes) {
    const size = jsonBytes(envelope);
    if (
      current.length > 0 &&
      (current.length >= QUEUE_SEND_BATCH_MAX || bytes + size > QUEUE_SEND_BATCH_MAX_BYTES)
    ) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(envelope);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/** Envelopes of `bodies` (by tenant), ready for sendBatches. */
export function envelopesOf<T extends { tenantId: string }>(bodies: T[]): UsageEnvelope<T>[] {
  return packEnvelopes(bodies).map((events) => ({ kind: USAGE_ENVELOPE_KIND, events }));
}
