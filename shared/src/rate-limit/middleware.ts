import type { Context, Env, MiddlewareHandler } from "hono";
import type { RateLimitDecision, RateLimiter } from "./rate-limiter.ts";

export interface RateLimitRule<E extends Env> {
  /** Names the counter, so that different routes do not share quota. */
  bucket: string;
  limit: number | ((c: Context<E>) => number);
  windowSeconds: number;
  namespace: (c: Context<E>) => DurableObjectNamespace<RateLimiter>;
  /** Who is counted; `undefined` means the request is not limited. */
  key: (c: Context<E>) => string | undefined | Promise<string | undefined>;
  /** Renders the refusal in the service's error shape (usually by throwing an ApiError). */
  onLimited: (c: Context<E>, decision: RateLimitDecision) => Response | Promise<Response>;
  /** Send `X-RateLimit-Limit/Remaining/Reset` on limited routes. */
  exposeHeaders?: boolean;
}

export function clientIp(c: Context): string {
  return (
    c.req.header("cf-connecting-ip") ??
    c.req.header("x-forwarded-for")?.split(",")[0]?.trim() ??
    "unknown"
  );
}

export async function consumeRateLimit(
  namespace: DurableObjectNamespace<RateLimiter>,
  key: string,
  limit: number,
  windowSeconds: number,
): Promise<RateLimitDecision> {
  const stub = namespace.get(namespace.idFromName(key));
  return stub.hit(limit, windowSeconds);
}

export function rateLimit<E extends Env>(rule: RateLimitRule<E>): MiddlewareHandler<E> {
  return async (c, next) => {
    const subject = await rule.key(c);
    if (subject === undefined) return next();
    const limit = typeof rule.limit === "function" ? rule.limit(c) : rule.limit;
    const decision = await consumeRateLimit(
      rule.namespace(c),
      `${rule.bucket}:${subject}`,
      limit,
      rule.windowSeconds,
    );
    if (rule.exposeHeaders) {
      c.header("X-RateLimit-Limit", String(decision.limit));
      c.header("X-RateLimit-Remaining", String(decision.remaining));
      c.header("X-RateLimit-Reset", String(decision.resetAt));
    }
    if (!decision.allowed) return rule.onLimited(c, decision);
    await next();
  };
}
