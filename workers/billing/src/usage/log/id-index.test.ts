import { describe, expect, it } from "vitest";
import { compactedTableName, dayTableName, hashRange } from "./id-index.ts";

describe("the archived-id index's names and hash ranges", () => {
  it("names a day's segments and its merged table", () => {
    expect(dayTableName("2026-11-20")).toBe("event_ids_20261120_0001");
    expect(dayTableName("2026-11-20", 12)).toBe("event_ids_20261120_0012");
    expect(compactedTableName("2026-11-20")).toBe("event_ids_20261120_all");
    expect(() => dayTableName("20261120")).toThrow("not a day");
  });

  it("splits the signed 64-bit hash space into contiguous ranges that cover it exactly", () => {
    for (const count of [1, 3, 7, 160]) {
      const ranges = Array.from({ length: count }, (_, index) => hashRange(index, count));
      expect(ranges[0]?.[0]).toBe("-9223372036854775808");
      expect(ranges.at(-1)?.[1]).toBe("9223372036854775807");
      for (let index = 1; index < count; index++) {
        const previousHigh = BigInt(ranges[index - 1]?.[1] ?? "0");
        expect(BigInt(ranges[index]?.[0] ?? "0")).toBe(previousHigh + 1n);
      }
    }
  });
});
