import { describe, expect, it } from "vitest";
import {
  envelopeItems,
  envelopesOf,
  isRawDeadLetterQueue,
  isRawUsageQueue,
  isUsageEnvelope,
  jsonBytes,
  packEnvelopes,
  propertiesField,
  QUEUE_SEND_BATCH_MAX_BYTES,
  rawQueueIndex,
  rawQueueName,
  rawUsageMessage,
  sendBatches,
  USAGE_ENVELOPE_MAX_BYTES,
  USAGE_ENVELOPE_MAX_EVENTS,
  type ValidatedUsageMessage,
  validatedUsageMessage,
} from "./usage.ts";

const body = (tenantId: string, n: number) => ({
  id: `${tenantId}-${n}`,
  tenantId,
  pad: "x".repeat(400),
});

describe("usage envelopes", () => {
  it("packs each tenant's events, in order, into envelopes of at most 100", () => {
    const bodies = [
      ...Array.from({ length: 250 }, (_, i) => body("a", i)),
      ...Array.from({ length: 3 }, (_, i) => body("b", i)),
    ];
    const groups = packEnvelopes([
      ...bodies.slice(0, 10),
      ...bodies.slice(250),
      ...bodies.slice(10, 250),
    ]);
    expect(groups.map((g) => g.length)).toEqual([100, 100, 50, 3]);
    expect(
      groups
        .slice(0, 3)
        .flat()
        .map((b) => b.id),
    ).toEqual(bodies.slice(0, 250).map((b) => b.id));
    expect(groups.every((g) => g.every((b) => b.tenantId === g[0]?.tenantId))).toBe(true);
    expect(USAGE_ENVELOPE_MAX_EVENTS).toBe(100);
  });

  it("opens an envelope, and takes a single-event body as it is", () => {
    const [envelope] = envelopesOf([body("a", 1), body("a", 2)]);
    expect(isUsageEnvelope(envelope)).toBe(true);
    expect(envelopeItems(envelope)).toEqual([body("a", 1), body("a", 2)]);
    expect(envelopeItems(body("a", 3))).toEqual([body("a", 3)]);
    expect(envelopeItems({ kind: "usage-events", events: "nope" })).toHaveLength(1);
  });

  it("splits sendBatch calls under the byte limit", () => {
    const envelopes = envelopesOf(Array.from({ length: 2000 }, (_, i) => body("a", i)));
    const batches = sendBatches(envelopes);
    expect(batches.flat()).toHaveLength(envelopes.length);
    for (const batch of batches) {
      expect(batch.length).toBeLessThanOrEqual(100);
      const bytes = batch.reduce((sum, envelope) => sum + JSON.stringify(envelope).length, 0);
      expect(bytes <= QUEUE_SEND_BATCH_MAX_BYTES || batch.length === 1).toBe(true);
    }
    expect(batches.length).toBeGreaterThan(1);
  });
});

/** A queue message's limit. */
const MESSAGE_MAX_BYTES = 128 * 1024;

/** A validated event as the pipeline sends it, with 20 properties of `value` (keys of 64 characters). */
function validatedEvent(n: number, value: (key: number) => string): ValidatedUsageMessage {
  return {
    id: crypto.randomUUID(),
    tenantId: "7c1f0d52-3f4e-4b8a-9a2e-5d6c7b8a9f01",
    eventId: `${n}`.padStart(255, "e"),
    subscriptionId: crypto.randomUUID(),
    feature: "f".repeat(100),
    amount: 1_000_000_000,
    timestamp: "2026-11-20T10:00:00.000Z",
    receivedAt: "2026-11-20T10:00:01.000Z",
    window: {
      key: "2026-11-05T08:00:00.000Z",
      start: "2026-11-05T08:00:00.000Z",
      end: "2026-12-05T08:00:00.000Z",
    },
    validatedAt: "2026-11-20T10:00:02.000Z",
    properties: Object.fromEntries(
      Array.from({ length: 20 }, (_, key) => [`${key}`.padStart(64, "k"), value(key)]),
    ),
    retryOf: crypto.randomUUID(),
  };
}

describe("usage envelopes of events with properties", () => {
  it.each([
    ["ASCII", () => "v".repeat(256)],
    ["three UTF-8 bytes a character", () => "€".repeat(256)],
    ["characters JSON escapes", () => "\u0001".repeat(256)],
  ])(
    "cuts envelopes of 100 events at the byte bound (%s), in order, each under the message limit",
    (_case, value) => {
      const events = Array.from({ length: 250 }, (_, n) => validatedEvent(n, value));
      // 100 such events would be far over the message limit.
      expect(jsonBytes({ kind: "usage-events", events: events.slice(0, 100) })).toBeGreaterThan(
        MESSAGE_MAX_BYTES,
      );
      const envelopes = envelopesOf(events);
      expect(envelopes.flatMap((envelope) => envelope.events)).toEqual(events);
      for (const envelope of envelopes) {
        expect(jsonBytes(envelope)).toBeLessThanOrEqual(USAGE_ENVELOPE_MAX_BYTES);
        expect(envelope.events.length).toBeGreaterThan(0);
      }
      for (const batch of sendBatches(envelopes)) {
        const bytes = batch.reduce((sum, envelope) => sum + jsonBytes(envelope), 0);
        expect(bytes <= QUEUE_SEND_BATCH_MAX_BYTES || batch.length === 1).toBe(true);
      }
    },
  );

  it("fits the largest event there can be in one envelope", () => {
    const largest = validatedEvent(1, () => "\u0001".repeat(256));
    expect(jsonBytes({ kind: "usage-events", events: [largest] })).toBeLessThan(
      USAGE_ENVELOPE_MAX_BYTES,
    );
    // A body over the bound alone still goes, in an envelope of its own.
    const groups = packEnvelopes(
      [body("a", 1), { ...body("a", 2), pad: "x".repeat(2_000) }, body("a", 3)],
      100,
      1_000,
    );
    expect(groups.map((group) => group.map((b) => b.id))).toEqual([["a-1"], ["a-2"], ["a-3"]]);
  });

  it("keeps 100 events without properties in one envelope", () => {
    const events = Array.from({ length: 100 }, (_, n) => {
      const { properties: _properties, ...event } = validatedEvent(n, () => "");
      return event;
    });
    expect(envelopesOf(events)).toHaveLength(1);
  });
});

describe("usage messages' properties", () => {
  it("parse with properties, and without them (messages of earlier releases)", () => {
    const event = validatedEvent(1, () => "v");
    expect(validatedUsageMessage.parse(event).properties).toEqual(event.properties);
    const { properties: _properties, ...old } = event;
    expect(validatedUsageMessage.safeParse(old).success).toBe(true);
    const raw = {
      id: event.id,
      tenantId: event.tenantId,
      eventId: "e-1",
      feature: "api_calls",
      amount: 1,
      timestamp: event.timestamp,
      receivedAt: event.receivedAt,
    };
    expect(rawUsageMessage.safeParse(raw).success).toBe(true);
    expect(rawUsageMessage.parse({ ...raw, properties: { a: 1, b: "x" } }).properties).toEqual({
      a: 1,
      b: "x",
    });
    expect(rawUsageMessage.safeParse({ ...raw, properties: { a: true } }).success).toBe(false);
  });

  it("leave out an empty set", () => {
    expect(propertiesField({})).toEqual({});
    expect(propertiesField(undefined)).toEqual({});
    expect(propertiesField({ a: 1 })).toEqual({ properties: { a: 1 } });
  });
});

describe("raw usage queues", () => {
  it("names queue 0 usage-raw and the others usage-raw-<i>, each with its -dlq", () => {
    expect([0, 1, 2].map(rawQueueName)).toEqual(["usage-raw", "usage-raw-1", "usage-raw-2"]);
    for (const name of ["usage-raw", "usage-raw-1", "usage-raw-12"]) {
      expect(isRawUsageQueue(name)).toBe(true);
      expect(isRawDeadLetterQueue(`${name}-dlq`)).toBe(true);
    }
    for (const name of ["usage-raw-dlq", "usage-raw-0", "usage-raw-x", "usage-validated"]) {
      expect(isRawUsageQueue(name)).toBe(false);
    }
    expect(isRawDeadLetterQueue("usage-validated-dlq")).toBe(false);
  });

  it("spreads tenants over the queues by a stable hash of their id", () => {
    const tenants = Array.from({ length: 400 }, (_, n) => `tenant-${n}`);
    expect(new Set(tenants.map((id) => rawQueueIndex(id, 1)))).toEqual(new Set([0]));
    const counts = [0, 0, 0, 0];
    for (const id of tenants) {
      const index = rawQueueIndex(id, 4);
      expect(rawQueueIndex(id, 4)).toBe(index);
      counts[index] = (counts[index] ?? 0) + 1;
    }
    for (const count of counts) expect(count).toBeGreaterThan(60);
  });
});
