import { createMiddleware } from "hono/factory";

/**
 * `X-Response-Time: <ms with one decimal>ms` on every response, as the
 * original service sent it. For a stream it measures the time until the
 * response starts (its headers), not the whole stream. workerd's clock only
 * moves across I/O, so fast pure-CPU answers read as 0.0ms.
 */
export function responseTime() {
  return createMiddleware(async (c, next) => {
    const started = performance.now();
    await next();
    c.res.headers.set("X-Response-Time", `${(performance.now() - started).toFixed(1)}ms`);
  });
}
