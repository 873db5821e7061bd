import { describe, expect, it } from "vitest";
import { eventIdHash } from "./event-id-hash.ts";

describe("eventIdHash", () => {
  it("is stable, 64 bits as a signed high half and an unsigned low half", () => {
    const id = "3f1c2a8e-6b7d-4c1e-9a2b-5d4e3f2a1b0c";
    const [hi, lo] = eventIdHash(id);
    expect(eventIdHash(id)).toEqual([hi, lo]);
    expect(Number.isInteger(hi) && hi >= -(2 ** 31) && hi < 2 ** 31).toBe(true);
    expect(Number.isInteger(lo) && lo >= 0 && lo < 2 ** 32).toBe(true);
  });

  it("spreads random UUIDs without repeats over 100,000 ids", () => {
    const seen = new Set<string>();
    for (let index = 0; index < 100_000; index++) {
      seen.add(eventIdHash(crypto.randomUUID()).join(":"));
    }
    expect(seen.size).toBe(100_000);
  });
});
