import type { MiddlewareHandler } from "hono";
import { html } from "hono/html";
import type { ApiFetch } from "./api-fetch.ts";
import { barePage } from "./bare-page.ts";
import { checkCsrf, sameOriginRequest } from "./csrf.ts";
import { type ConsoleEnv, readSession } from "./session.ts";
import { formOf } from "./view.ts";

/**
 * Everything in the page comes from this origin: the stylesheet, the one
 * script and the SVG charts are the Worker's own.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Reads the session for the handlers, and sends every answer with the console's security headers. */
export function sessionAndSecurityHeaders(fetchApi: ApiFetch): MiddlewareHandler<ConsoleEnv> {
  return async (c, next) => {
    c.set("session", readSession(c, fetchApi));
    await next();
    c.header("content-security-policy", CONTENT_SECURITY_POLICY);
    c.header("cache-control", c.res.headers.get("cache-control") ?? "no-store");
    c.header("referrer-policy", "same-origin");
  };
}

/** Every state-changing request: same origin, and (once signed in) the session's form token. */
export const sameOriginWrites: MiddlewareHandler<ConsoleEnv> = async (c, next) => {
  if (c.req.method === "GET" || c.req.method === "HEAD") return next();
  const headers = {
    origin: c.req.header("origin"),
    secFetchSite: c.req.header("sec-fetch-site"),
  };
  const origin = new URL(c.req.url).origin;
  const verdict =
    c.req.path === "/console/login"
      ? sameOriginRequest(headers, origin)
      : checkCsrf(headers, origin, c.var.session.csrfToken, (await formOf(c))._csrf);
  if (!verdict.ok) {
    return barePage(
      c,
      "Request refused",
      html`<p>${verdict.reason}, so nothing was changed. Go back, reload the page and try again.</p><p><a href="/console/overview">Back to the console</a></p>`,
      403,
    );
  }
  await next();
};
