import { createMiddleware } from "hono/factory";

export const REQUEST_ID_HEADER = "X-Request-ID";

export type RequestIdVariables = { requestId: string };

/** A short id (8 hex characters of a UUID v4) as the Python services used. */
export function newRequestId(): string {
  return crypto.randomUUID().slice(0, 8);
}

/** Sets `X-Request-ID` on every response and exposes it to error bodies. */
export function requestId() {
  return createMiddleware<{ Variables: RequestIdVariables }>(async (c, next) => {
    const id = newRequestId();
    c.set("requestId", id);
    await next();
    c.res.headers.set(REQUEST_ID_HEADER, id);
  });
}
