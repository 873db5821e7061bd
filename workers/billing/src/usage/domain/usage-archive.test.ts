import { describe, expect, it } from "vitest";
import { DEFAULT_RETENTION_DAYS, retentionDays } from "./usage-archive.ts";

describe("usage log retention", () => {
  it("reads the retention in days, never below the validation window", () => {
    expect(retentionDays("40")).toBe(40);
    expect(retentionDays("3")).toBe(8);
    expect(retentionDays(undefined)).toBe(DEFAULT_RETENTION_DAYS);
    expect(retentionDays("a month")).toBe(DEFAULT_RETENTION_DAYS);
  });
});
