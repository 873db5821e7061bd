import { describe, expect, it } from "vitest";
import { FreshnessBoundCache } from "./freshness-bound-cache.ts";

function cacheAt(start: number) {
  let now = start;
  const cache = new FreshnessBoundCache<string>({
    boundMs: 30_000,
    refreshAfterMs: 20_000,
    maxEntries: 3,
    clock: () => now,
  });
  return { cache, move: (ms: number) => (now += ms), at: () => now };
}

describe("FreshnessBoundCache", () => {
  it("serves an entry until its read is exactly the bound old, stale past the refresh age", () => {
    const { cache, move, at } = cacheAt(1_000_000);
    cache.put("k", "v", at());
    expect(cache.get("k")).toMatchObject({ value: "v", stale: false });
    move(20_000);
    expect(cache.get("k")).toMatchObject({ value: "v", stale: true });
    move(9_999);
    expect(cache.get("k")?.value).toBe("v");
    move(1);
    expect(cache.get("k")).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("bounds an entry by when it was read from the source, not when it was put here", () => {
    const { cache, move, at } = cacheAt(1_000_000);
    // Copied from a shared tier, where it had already spent 25 s.
    expect(cache.put("k", "v", at() - 25_000)).toBe(true);
    move(4_999);
    expect(cache.get("k")?.value).toBe("v");
    move(1);
    expect(cache.get("k")).toBeUndefined();
    expect(cache.put("late", "v", at() - 30_000)).toBe(false);
    expect(cache.get("late")).toBeUndefined();
  });

  it("after an eviction, refuses reads that started before it but takes later ones", () => {
    const { cache, move, at } = cacheAt(1_000_000);
    const before = at();
    move(10);
    cache.evict("k");
    expect(cache.put("k", "old", before)).toBe(false);
    expect(cache.get("k")).toBeUndefined();
    move(10);
    expect(cache.put("k", "new", at())).toBe(true);
    expect(cache.get("k")?.value).toBe("new");

    cache.put("a1", "tenant-a", at());
    cache.put("b1", "tenant-b", at());
    const racing = at();
    move(10);
    cache.evictWhere((value) => value === "tenant-a");
    expect(cache.get("a1")).toBeUndefined();
    expect(cache.get("b1")?.value).toBe("tenant-b");
    expect(cache.put("a2", "tenant-a", racing)).toBe(false);
    expect(cache.put("b2", "tenant-b", racing)).toBe(true);

    // A plain delete leaves no such mark.
    const plain = at();
    move(10);
    cache.delete("b2");
    expect(cache.put("b2", "tenant-b", plain)).toBe(true);
  });

  it("keeps the newer of two reads and drops the least recently used beyond its size", () => {
    const { cache, move, at } = cacheAt(1_000_000);
    const first = at();
    move(100);
    cache.put("k", "newer", at());
    cache.put("k", "older", first);
    expect(cache.get("k")?.value).toBe("newer");
    cache.put("a", "1", at());
    cache.put("b", "2", at());
    cache.get("k");
    cache.put("c", "3", at());
    expect(cache.size).toBe(3);
    expect(cache.get("a")).toBeUndefined();
    expect(cache.get("k")?.value).toBe("newer");
  });
});
