import { describe, expect, it } from "vitest";
import {
  DURABLE_OBJECT_MEMORY_BYTES,
  FILTER_BYTES_PER_ID,
  FILTERED_SECONDS,
  filterMemoryUse,
  growthFactor,
  PAST_DAY_RATIO,
  SHARD_GROWTH,
  shardCostFactor,
} from "./capacity-growth.ts";
import { measurePastDays, measureShardGrowth } from "./capacity-measure-growth.ts";

describe("a shard's cost as its log grows, in the capacity model", () => {
  const curve = [
    { ids: 0, ratio: 1 },
    { ids: 1_000, ratio: 1.1 },
    { ids: 3_000, ratio: 1.3 },
  ];

  it("reads the measured curve linearly between its points and carries its last slope on", () => {
    expect(growthFactor(0, curve)).toBe(1);
    expect(growthFactor(500, curve)).toBeCloseTo(1.05);
    expect(growthFactor(2_000, curve)).toBeCloseTo(1.2);
    expect(growthFactor(5_000, curve)).toBeCloseTo(1.5);
    // A falling last step never takes the factor below the last point.
    expect(growthFactor(9_000, [...curve, { ids: 4_000, ratio: 1.2 }])).toBe(1.2);
  });

  it("adds the past days' share to the day's and bounds the filters by the object's memory", () => {
    const rate = 100;
    expect(shardCostFactor(rate, 35)).toBeCloseTo(
      growthFactor(rate * FILTERED_SECONDS) + 34 * PAST_DAY_RATIO,
    );
    const halfMemoryIds = (DURABLE_OBJECT_MEMORY_BYTES / 2 / FILTER_BYTES_PER_ID) | 0;
    expect(filterMemoryUse(halfMemoryIds)).toBeCloseTo(0.5, 3);
  });

  it("keeps a measured curve from 0 to 10,000,000 ids", () => {
    expect(SHARD_GROWTH.map((point) => point.ids)).toEqual([
      0, 500_000, 1_000_000, 2_000_000, 3_000_000, 10_000_000,
    ]);
    for (const point of SHARD_GROWTH) expect(point.ratio).toBeGreaterThan(0.5);
  });
});

describe("the growth measurement", () => {
  it("grows a shard through its own index and times it against an empty one", async () => {
    const growth = await measureShardGrowth({
      sizes: [0, 20_000],
      rounds: 1,
      eventsPerRound: 2_000,
      passes: 1,
    });
    expect(growth.points.map((point) => point.storedIds)).toEqual([0, 20_000]);
    const [empty, grown] = growth.points;
    expect(grown?.fileBytes).toBeGreaterThan(empty?.fileBytes ?? 0);
    for (const point of growth.points) {
      expect(point.ratio).toBeGreaterThan(0);
      expect(point.msPerEvent.total).toBeGreaterThan(0);
      expect(point.msPerEvent.insert).toBeGreaterThan(0);
    }
    expect(growth.cacheKiB).toBe(2_000);
    const past = await measurePastDays({
      days: 2,
      idsPerDay: 10_000,
      rounds: 1,
      eventsPerRound: 2_000,
      passes: 1,
    });
    expect(past.ratio).toBeGreaterThan(0);
    expect(past.ratioPerDay).toBeCloseTo((past.ratio - 1) / 2);
  }, 60_000);
});
