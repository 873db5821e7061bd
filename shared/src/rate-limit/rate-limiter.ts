import { DurableObject } from "cloudflare:workers";

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds at which the current window ends. */
  resetAt: number;
  /** Whole seconds (>= 1) a refused caller should wait. */
  retryAfterSeconds: number;
}

interface WindowState {
  windowStart: number;
  count: number;
}

/**
 * A fixed-window counter, one object per (bucket, client) key. `hit` reads
 * and writes synchronous storage with no `await` in between, so concurrent
 * requests for one key cannot both take the last slot, and the count holds
 * across isolates and restarts (isolate memory would not).
 */
export class RateLimiter extends DurableObject {
  hit(limit: number, windowSeconds: number, nowMs: number = Date.now()): RateLimitDecision {
    const nowSeconds = nowMs / 1000;
    const windowStart = Math.floor(nowSeconds / windowSeconds) * windowSeconds;
    const resetAt = windowStart + windowSeconds;
    const retryAfterSeconds = Math.max(1, Math.ceil(resetAt - nowSeconds));
    const stored = this.ctx.storage.kv.get<WindowState>("window");
    const count = stored && stored.windowStart === windowStart ? stored.count : 0;
    if (count >= limit) {
      return { allowed: false, limit, remaining: 0, resetAt, retryAfterSeconds };
    }
    this.ctx.storage.kv.put("window", { windowStart, count: count + 1 } satisfies WindowState);
    if (count === 0) {
      // Forget idle clients: without this every IP ever seen keeps a row.
      void this.ctx.storage.setAlarm((resetAt + 1) * 1000);
    }
    return { allowed: true, limit, remaining: limit - count - 1, resetAt, retryAfterSeconds };
  }

  override async alarm(): Promise<void> {
    const stored = this.ctx.storage.kv.get<WindowState>("window");
    if (!stored) return;
    if (Date.now() / 1000 >= stored.windowStart) await this.ctx.storage.deleteAll();
  }

  /** Liveness probe for health checks: proves the Durable Object layer answers. */
  ping(): "pong" {
    return "pong";
  }
}
