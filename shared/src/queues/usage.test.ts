import { describe, expect, it } from "vitest";
import {
  envelopeItems,
  envelopesOf,
  isRawDeadLetterQueue,
  isRawUsageQueue,
  isUsageEnvelope,
  packEnvelopes,
  QUEUE_SEND_BATCH_MAX_BYTES,
  rawQueueIndex,
  rawQueueName,
  sendBatches,
  USAGE_ENVELOPE_MAX_EVENTS,
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
