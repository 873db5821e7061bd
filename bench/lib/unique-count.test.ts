import { describe, expect, it } from "vitest";
import { NEW_EVERY, strideFor, uniqueConsumeBody, userIdDraws } from "./unique-count.ts";

describe("userIdDraws", () => {
  it("draws one new value in NEW_EVERY and pool values otherwise", () => {
    const draws = userIdDraws(100, "u");
    const values = Array.from({ length: 10 * NEW_EVERY }, () => draws.next());
    const fresh = values.filter((value) => value.startsWith("u-new-"));
    expect(fresh).toHaveLength(10);
    expect(new Set(fresh).size).toBe(10);
    expect(draws.newDrawn()).toBe(10);
    const pool = new Set(draws.pool);
    expect(values.filter((value) => !value.startsWith("u-new-")).every((v) => pool.has(v))).toBe(
      true,
    );
  });

  it("visits every pool value once per cycle", () => {
    const draws = userIdDraws(1000, "u", 1_000_000);
    const cycle = Array.from({ length: 1000 }, () => draws.next());
    expect(new Set(cycle)).toEqual(new Set(draws.pool));
    expect(draws.newDrawn()).toBe(0);
  });

  it("never repeats a new value, and draws only new ones from an empty pool", () => {
    const draws = userIdDraws(0, "u");
    const values = Array.from({ length: 50 }, () => draws.next());
    expect(new Set(values).size).toBe(50);
    expect(draws.newDrawn()).toBe(50);
  });

  it("is deterministic", () => {
    const a = userIdDraws(37, "u");
    const b = userIdDraws(37, "u");
    expect(Array.from({ length: 200 }, () => a.next())).toEqual(
      Array.from({ length: 200 }, () => b.next()),
    );
  });
});

describe("strideFor", () => {
  it("shares no factor with the size", () => {
    const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
    for (const size of [8, 10, 21, 35, 1000, 1001, 2310]) {
      expect(gcd(strideFor(size), size)).toBe(1);
    }
    expect(strideFor(5)).toBe(1);
  });
});

describe("uniqueConsumeBody", () => {
  it("carries the value as properties.user_id", () => {
    expect(JSON.parse(uniqueConsumeBody("u-7"))).toEqual({ properties: { user_id: "u-7" } });
  });
});
