import { describe, expect, it } from "vitest";
import { busiestRawQueueMessages } from "./capacity-queues.ts";

const load = {
  queues: 10,
  hotMessages: 0,
  hotShards: 1,
  otherMessages: 0,
  otherTenants: 0,
  otherShards: 1,
};

describe("busiest usage-raw queue", () => {
  it("spreads a big tenant's shards over consecutive queues", () => {
    expect(busiestRawQueueMessages({ ...load, hotMessages: 1_000, hotShards: 1 })).toBe(1_000);
    expect(busiestRawQueueMessages({ ...load, hotMessages: 1_000, hotShards: 4 })).toBe(250);
    expect(busiestRawQueueMessages({ ...load, hotMessages: 1_000, hotShards: 10 })).toBe(100);
    // 110 shards over 10 queues: 11 on each.
    expect(busiestRawQueueMessages({ ...load, hotMessages: 1_100, hotShards: 110 })).toBeCloseTo(
      110,
    );
    // 15 over 10: two shards on five of the queues.
    expect(busiestRawQueueMessages({ ...load, hotMessages: 1_500, hotShards: 15 })).toBeCloseTo(
      200,
    );
  });

  it("gives one queue its hash share of the other tenants, with a margin for an uneven draw", () => {
    const one = busiestRawQueueMessages({
      ...load,
      otherMessages: 10_000,
      otherTenants: 999,
      otherShards: 1,
    });
    // Mean 1,000; two standard deviations of a binomial(999, 0.1) share above it.
    expect(one).toBeCloseTo(10_000 * (0.1 + (2 * Math.sqrt(999 * 0.1 * 0.9)) / 999), 6);
    // More shards per tenant: the same mean, a smaller spread.
    const four = busiestRawQueueMessages({
      ...load,
      otherMessages: 10_000,
      otherTenants: 999,
      otherShards: 4,
    });
    expect(four).toBeLessThan(one);
    expect(four).toBeGreaterThan(1_000);
    // As many shards as queues: an even share.
    expect(
      busiestRawQueueMessages({
        ...load,
        otherMessages: 10_000,
        otherTenants: 999,
        otherShards: 10,
      }),
    ).toBeCloseTo(1_000);
  });

  it("puts everything on the one queue when there is one", () => {
    expect(
      busiestRawQueueMessages({
        ...load,
        queues: 1,
        hotMessages: 50,
        hotShards: 8,
        otherMessages: 70,
        otherTenants: 3,
      }),
    ).toBe(120);
  });
});
