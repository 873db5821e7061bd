import { ApiError } from "@edge-platform/shared/http/api-error";
import { clientIp, consumeRateLimit } from "@edge-platform/shared/rate-limit/middleware";
import type { Context } from "hono";
import type { AppEnv } from "./app-env.ts";
import { sha256Hex } from "./domain/secrets.ts";

export interface Limit {
  bucket: string;
  limit: number;
  windowSeconds: number;
}

/** Brute-force limits on the unauthenticated account routes (per minute). */
export const LIMITS = {
  loginPerIp: { bucket: "login:ip", limit: 10, windowSeconds: 60 },
  loginPerEmail: { bucket: "login:email", limit: 10, windowSeconds: 60 },
  forgotPerIp: { bucket: "forgot:ip", limit: 5, windowSeconds: 60 },
  forgotPerEmail: { bucket: "forgot:email", limit: 5, windowSeconds: 60 },
  registerPerIp: { bucket: "register:ip", limit: 5, windowSeconds: 60 },
  resetPerIp: { bucket: "reset:ip", limit: 10, windowSeconds: 60 },
  refreshPerIp: { bucket: "refresh:ip", limit: 60, windowSeconds: 60 },
  changePasswordPerUser: { bucket: "change-password:user", limit: 10, windowSeconds: 60 },
} satisfies Record<string, Limit>;

/**
 * Counts one attempt against a limit kept in the RateLimiter Durable Object
 * and throws a 429 with Retry-After once it is exhausted. Fails closed: if
 * the limiter cannot answer, the attempt is refused (503), never let through.
 */
export async function enforceLimit(c: Context<AppEnv>, rule: Limit, subject: string) {
  let decision: Awaited<ReturnType<typeof consumeRateLimit>>;
  try {
    decision = await consumeRateLimit(
      c.env.RATE_LIMITER,
      `${rule.bucket}:${subject}`,
      rule.limit,
      rule.windowSeconds,
    );
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "rate limiter unavailable",
        bucket: rule.bucket,
        error: String(error),
      }),
    );
    throw new ApiError(503, "Service temporarily unavailable, try again shortly");
  }
  if (!decision.allowed) {
    throw new ApiError(
      429,
      `Rate limit exceeded. Retry after ${decision.retryAfterSeconds} seconds.`,
      {
        code: "rate_limited",
        headers: {
          "Retry-After": String(decision.retryAfterSeconds),
          "X-RateLimit-Limit": String(decision.limit),
          "X-RateLimit-Remaining": "0",
          "X-RateLimit-Reset": String(decision.resetAt),
        },
      },
    );
  }
}

export function enforceIpLimit(c: Context<AppEnv>, rule: Limit) {
  return enforceLimit(c, rule, clientIp(c));
}

/** Keyed by a hash, so no address is kept in a Durable Object name. */
export async function enforceEmailLimit(c: Context<AppEnv>, rule: Limit, email: string) {
  return enforceLimit(c, rule, await sha256Hex(email));
}
