import { rawQueueIndex } from "@edge-platform/shared/queues/usage";
import { describe, expect, it } from "vitest";
import { rawQueueBinding, rawQueueCount, usageRawQueue } from "./raw-queues.ts";

const fakeQueue = (name: string) => ({ name }) as unknown as Queue;

describe("usage-raw queue choice", () => {
  it("reads USAGE_RAW_QUEUES as a count from 1 to 64", () => {
    expect(rawQueueCount(undefined)).toBe(1);
    expect(rawQueueCount("")).toBe(1);
    expect(rawQueueCount("0")).toBe(1);
    expect(rawQueueCount("two")).toBe(1);
    expect(rawQueueCount("3")).toBe(3);
    expect(rawQueueCount("1000")).toBe(64);
    expect([0, 1, 5].map(rawQueueBinding)).toEqual([
      "USAGE_RAW_QUEUE",
      "USAGE_RAW_QUEUE_1",
      "USAGE_RAW_QUEUE_5",
    ]);
  });

  it("sends each tenant to the binding its hash picks, and to usage-raw when that binding is missing", () => {
    const queues = [fakeQueue("usage-raw"), fakeQueue("usage-raw-1")];
    const env = {
      USAGE_RAW_QUEUES: "2",
      USAGE_RAW_QUEUE: queues[0] as Queue,
      USAGE_RAW_QUEUE_1: queues[1] as Queue,
    };
    const tenants = Array.from({ length: 20 }, () => crypto.randomUUID());
    for (const tenantId of tenants) {
      expect(usageRawQueue(env, tenantId, 0)).toBe(queues[rawQueueIndex(tenantId, 2)]);
    }
    expect(new Set(tenants.map((tenantId) => usageRawQueue(env, tenantId, 0))).size).toBe(2);

    const misconfigured = { USAGE_RAW_QUEUES: "2", USAGE_RAW_QUEUE: queues[0] as Queue };
    for (const tenantId of tenants) {
      expect(usageRawQueue(misconfigured, tenantId, 1)).toBe(queues[0]);
    }
    const single = { USAGE_RAW_QUEUES: "1", USAGE_RAW_QUEUE: queues[0] as Queue };
    for (const tenantId of tenants) expect(usageRawQueue(single, tenantId, 3)).toBe(queues[0]);
  });

  it("spreads a tenant's shards over consecutive queues, each queue evenly", () => {
    for (const tenantId of Array.from({ length: 20 }, () => crypto.randomUUID())) {
      const start = rawQueueIndex(tenantId, 8);
      const four = [0, 1, 2, 3].map((shard) => rawQueueIndex(tenantId, 8, shard));
      expect(four).toEqual([0, 1, 2, 3].map((shard) => (start + shard) % 8));
      // Sixteen shards over eight queues: two on each.
      const perQueue = new Map<number, number>();
      for (let shard = 0; shard < 16; shard++) {
        const queue = rawQueueIndex(tenantId, 8, shard);
        perQueue.set(queue, (perQueue.get(queue) ?? 0) + 1);
      }
      expect([...perQueue.values()]).toEqual(Array(8).fill(2));
    }
  });
});
