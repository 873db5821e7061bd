/**
 * Per-client-IP quotas of the prediction routes (the reference service:
 * predict 60/minute, batch 20/minute). They are checked inside the handler,
 * after validation, so an invalid body costs no quota, as with slowapi
 * wrapping a FastAPI handler. Counters live in the RateLimiter Durable
 * Object (fixed one-minute windows), so they hold across isolates.
 *
 * The limits are vars (wrangler.toml) so a load test can raise them.
 */
import { ApiError } from "@edge-platform/shared/http/api-error";
import { clientIp, consumeRateLimit } from "@edge-platform/shared/rate-limit/middleware";
import type { Context } from "hono";
import type { AppEnv } from "../app-env.ts";

const WINDOW_SECONDS = 60;

export const RATE_LIMITED_ROUTES = {
  predict: { bucket: "aqi-predict", variable: "PREDICT_RATE_LIMIT_PER_MINUTE" },
  batch: { bucket: "aqi-batch", variable: "BATCH_RATE_LIMIT_PER_MINUTE" },
} as const;

export type RateLimitedRoute = keyof typeof RATE_LIMITED_ROUTES;

/** A var that is not a positive integer is a deployment mistake: fail loudly, never unlimited. */
export function limitFromVar(name: string, raw: string | undefined): number {
  const value = Number(raw);
  if (raw === undefined || !/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < 1) {
    throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  }
  return value;
}

export async function enforceRateLimit(c: Context<AppEnv>, route: RateLimitedRoute): Promise<void> {
  const { bucket, variable } = RATE_LIMITED_ROUTES[route];
  const limit = limitFromVar(variable, c.env[variable]);
  const decision = await consumeRateLimit(
    c.env.RATE_LIMITER,
    `${bucket}:${clientIp(c)}`,
    limit,
    WINDOW_SECONDS,
  );
  if (!decision.allowed) {
    throw new ApiError(429, `Rate limit exceeded: ${limit} per 1 minute`, {
      code: "rate_limited",
      headers: { "Retry-After": String(decision.retryAfterSeconds) },
    });
  }
}
