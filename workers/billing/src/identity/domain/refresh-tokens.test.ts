import { describe, expect, it } from "vitest";
import { REFRESH_REUSE_GRACE_MS, successorToken, withinReuseGrace } from "./refresh-tokens.ts";

const key = (fill: number) => new Uint8Array(new Array(32).fill(fill));

describe("refresh token successors", () => {
  it("are the same for the same token and key, and differ with either", async () => {
    const first = await successorToken(key(1), "token-a");
    expect(first).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await successorToken(key(1), "token-a")).toBe(first);
    expect(await successorToken(key(1), "token-b")).not.toBe(first);
    expect(await successorToken(key(2), "token-a")).not.toBe(first);
    expect(first).not.toBe("token-a");
  });

  it("the grace period is 30 s after the rotation", () => {
    const rotated = "2026-11-27T12:00:00.000Z";
    const at = (ms: number) => new Date(Date.parse(rotated) + ms);
    expect(REFRESH_REUSE_GRACE_MS).toBe(30_000);
    expect(withinReuseGrace(rotated, at(0))).toBe(true);
    expect(withinReuseGrace(rotated, at(30_000))).toBe(true);
    expect(withinReuseGrace(rotated, at(30_001))).toBe(false);
    expect(withinReuseGrace(rotated, at(-5))).toBe(true);
    expect(withinReuseGrace("not a date", at(0))).toBe(false);
  });
});
