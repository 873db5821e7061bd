import { describe, expect, it } from "vitest";
import { eventIdHash } from "./event-id-hash.ts";
import { BITS_PER_ID, blocksFor, IdFilter } from "./id-filter.ts";

const hashes = (count: number) =>
  Array.from({ length: count }, () => eventIdHash(crypto.randomUUID()));

describe("the archived-id filter", () => {
  it("holds every id added, also after a round trip through its bytes", () => {
    const filter = new IdFilter({ ids: 5_000 });
    const added = hashes(5_000);
    for (const [hi, lo] of added) filter.add(hi, lo);
    const restored = new IdFilter({ bytes: filter.bytes().slice() });
    for (const [hi, lo] of added) {
      expect(filter.mayHold(hi, lo)).toBe(true);
      expect(restored.mayHold(hi, lo)).toBe(true);
    }
  });

  it("answers 'not here' for almost every other id when full", () => {
    const filter = new IdFilter({ ids: 20_000 });
    for (const [hi, lo] of hashes(filter.capacity)) filter.add(hi, lo);
    const probes = hashes(100_000);
    const falseHits = probes.filter(([hi, lo]) => filter.mayHold(hi, lo)).length;
    // 16 bits per id, 8 bits per key in a 512-bit block: about 0.1%.
    expect(falseHits / probes.length).toBeLessThan(0.003);
  });

  it("is sized in powers of two blocks for BITS_PER_ID bits per id", () => {
    expect(blocksFor(0)).toBe(16);
    expect(blocksFor(1_000)).toBe(32);
    const filter = new IdFilter({ ids: 250_000 });
    expect(filter.capacity).toBeGreaterThanOrEqual(250_000);
    expect(filter.bytes().byteLength).toBe((filter.capacity * BITS_PER_ID) / 8);
    expect(() => new IdFilter({ bytes: new Uint8Array(64 * 3) })).toThrow("2^n blocks");
  });
});
