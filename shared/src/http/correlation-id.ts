import { createMiddleware } from "hono/factory";

export const CORRELATION_ID_HEADER = "x-correlation-id";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

export type CorrelationIdVariables = { correlationId: string };

/**
 * Reuses the caller's `x-correlation-id` only when it is a UUID (anything
 * else could be used to inject text into logs), otherwise mints a v4, and
 * echoes it on every response, errors included.
 */
export function correlationId() {
  return createMiddleware<{ Variables: CorrelationIdVariables }>(async (c, next) => {
    const incoming = c.req.header(CORRELATION_ID_HEADER);
    const id = incoming && UUID.test(incoming) ? incoming.toLowerCase() : crypto.randomUUID();
    c.set("correlationId", id);
    c.header(CORRELATION_ID_HEADER, id);
    await next();
    // onError builds a fresh Response, so set it again on whatever went out.
    c.res.headers.set(CORRELATION_ID_HEADER, id);
  });
}
