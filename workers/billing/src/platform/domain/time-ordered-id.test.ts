import { describe, expect, it } from "vitest";
import { z } from "zod";
import { timeOrderedUuid } from "./time-ordered-id.ts";

describe("timeOrderedUuid", () => {
  it("is a version 7 UUID whose first 48 bits are the milliseconds", () => {
    const id = timeOrderedUuid(Date.UTC(2026, 10, 23, 16, 30));
    expect(z.uuid().safeParse(id).success).toBe(true);
    expect(id[14]).toBe("7");
    expect(["8", "9", "a", "b"]).toContain(id[19]);
    expect(Number.parseInt(id.replace(/-/g, "").slice(0, 12), 16)).toBe(
      Date.UTC(2026, 10, 23, 16, 30),
    );
  });

  it("sorts by time across milliseconds, and differs within one", () => {
    const earlier = timeOrderedUuid(1_700_000_000_000);
    const later = timeOrderedUuid(1_700_000_000_001);
    expect(earlier < later).toBe(true);
    const same = new Set(Array.from({ length: 1000 }, () => timeOrderedUuid(1_700_000_000_000)));
    expect(same.size).toBe(1000);
  });
});
