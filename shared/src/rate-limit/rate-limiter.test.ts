import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { consumeRateLimit } from "./middleware.ts";
import type { RateLimiter } from "./rate-limiter.ts";

const limiter = () =>
  (env as unknown as { RATE_LIMITER: DurableObjectNamespace<RateLimiter> }).RATE_LIMITER;

describe("RateLimiter", () => {
  it("allows exactly `limit` hits in a window, then refuses with a retry delay", async () => {
    const decisions = [];
    for (let i = 0; i < 4; i++)
      decisions.push(await consumeRateLimit(limiter(), "t:sequential", 3, 60));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0]);
    const refused = decisions[3]!;
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60);
  });

  it("never lets concurrent callers exceed the limit", async () => {
    const decisions = await Promise.all(
      Array.from({ length: 40 }, () => consumeRateLimit(limiter(), "t:parallel", 10, 60)),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
  });

  it("starts a fresh window once the previous one has ended", async () => {
    const stub = limiter().get(limiter().idFromName("t:windows"));
    const results = await runInDurableObject(stub, (instance: RateLimiter) => {
      const t0 = Date.UTC(2026, 0, 1, 0, 0, 0);
      return [
        instance.hit(1, 60, t0).allowed,
        instance.hit(1, 60, t0 + 59_000).allowed,
        instance.hit(1, 60, t0 + 60_000).allowed,
      ];
    });
    expect(results).toEqual([true, false, true]);
  });

  it("keeps separate counts per key", async () => {
    await consumeRateLimit(limiter(), "t:a", 1, 60);
    expect((await consumeRateLimit(limiter(), "t:a", 1, 60)).allowed).toBe(false);
    expect((await consumeRateLimit(limiter(), "t:b", 1, 60)).allowed).toBe(true);
  });
});
