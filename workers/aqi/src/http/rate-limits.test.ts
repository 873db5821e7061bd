import { describe, expect, it } from "vitest";
import { limitFromVar } from "./rate-limits.ts";

describe("limitFromVar", () => {
  it("reads a positive integer", () => {
    expect(limitFromVar("X", "60")).toBe(60);
    expect(limitFromVar("X", " 1000000000 ")).toBe(1_000_000_000);
  });

  it("refuses anything else rather than running unlimited", () => {
    for (const raw of [undefined, "", "0", "-5", "1.5", "sixty", "1e3"]) {
      expect(() => limitFromVar("PREDICT_RATE_LIMIT_PER_MINUTE", raw)).toThrow(
        /PREDICT_RATE_LIMIT_PER_MINUTE must be a positive integer/,
      );
    }
  });
});
