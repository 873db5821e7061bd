import type { Context, Env, Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { PatternRouter } from "hono/router/pattern-router";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ApiError, type FirstAnswer } from "./api-error.ts";
import { findJsonSyntaxError, type JsonSyntaxError } from "./json-syntax.ts";

/** A failure, normalised, before a service renders it in its own shape. */
export interface Problem {
  status: ContentfulStatusCode;
  message: string;
  /** Machine-readable type, when the thrower named one. */
  code?: string;
  details?: unknown;
  headers: Record<string, string>;
  kind: "api" | "malformed_json" | "not_found" | "method_not_allowed" | "internal";
  /** For `malformed_json`: where the body stops being JSON (empty body: position 0). */
  jsonError?: JsonSyntaxError & { emptyBody: boolean };
  allowedMethods?: string[];
  /** A replayed answer's original correlation id and time (ApiError's `firstAnswer`). */
  firstAnswer?: FirstAnswer;
  /** Extra body fields (ApiError's `fields`). */
  fields?: Record<string, unknown>;
}

export type ProblemRenderer<E extends Env> = (c: Context<E>, problem: Problem) => Response;

// hono's validator throws exactly this for a body that is not JSON.
const HONO_MALFORMED_JSON = "Malformed JSON in request body";

async function describeMalformedBody(c: Context): Promise<Problem["jsonError"]> {
  let text = "";
  try {
    text = await c.req.text();
  } catch {
    // The body was consumed by the failed parse; report what we can.
  }
  const syntax = findJsonSyntaxError(text) ?? { position: 0, reason: "Expecting value" };
  return { ...syntax, emptyBody: text.trim() === "" };
}

export async function problemFromError(error: unknown, c: Context): Promise<Problem> {
  if (error instanceof ApiError) {
    return {
      status: error.status,
      message: error.message,
      code: error.code,
      details: error.details,
      headers: error.headers,
      kind: error.code === "json_invalid" ? "malformed_json" : "api",
      ...(error.firstAnswer ? { firstAnswer: error.firstAnswer } : {}),
      ...(error.fields ? { fields: error.fields } : {}),
    };
  }
  if (error instanceof HTTPException) {
    if (error.status === 400 && error.message === HONO_MALFORMED_JSON) {
      return {
        status: 400,
        message: HONO_MALFORMED_JSON,
        headers: {},
        kind: "malformed_json",
        jsonError: await describeMalformedBody(c),
      };
    }
    const status = error.status as ContentfulStatusCode;
    return { status, message: error.message || "Error", headers: {}, kind: "api" };
  }
  console.error(
    JSON.stringify({
      level: "error",
      msg: "unhandled error",
      method: c.req.method,
      path: c.req.path,
      error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      stack: error instanceof Error ? error.stack : undefined,
    }),
  );
  return { status: 500, message: "Internal server error", headers: {}, kind: "internal" };
}

/** What 405 detection needs of an app: its registered routes. */
type RoutedApp = Pick<Hono, "routes">;

const routerCache = new WeakMap<object, PatternRouter<string>>();

/** Methods for which some route matches `path`: the `Allow` header of a 405. */
export function allowedMethods(app: RoutedApp, path: string): string[] {
  let router = routerCache.get(app);
  if (!router) {
    router = new PatternRouter<string>();
    for (const route of app.routes) {
      // `app.use` middleware registers as ALL; it does not make a path routable.
      if (route.method !== "ALL") router.add(route.method, route.path, route.method);
    }
    routerCache.set(app, router);
  }
  const methods = new Set<string>();
  for (const route of app.routes) {
    if (route.method === "ALL" || methods.has(route.method)) continue;
    const [matches] = router.match(route.method, path);
    if (matches.length > 0) methods.add(route.method);
  }
  if (methods.has("GET")) methods.add("HEAD");
  return [...methods].sort();
}

/**
 * Installs one `onError` and one `notFound` that render every failure (thrown
 * errors, unknown routes, wrong methods, malformed JSON, crashes) through the
 * service's renderer, so no response escapes in another shape.
 */
export function installErrorHandling<E extends Env>(
  app: Hono<E>,
  render: ProblemRenderer<E>,
): void {
  app.onError(async (error, c) => {
    const problem = await problemFromError(error, c);
    return render(c, problem);
  });
  app.notFound((c) => {
    const allowed = allowedMethods(app, c.req.path);
    if (allowed.length > 0) {
      return render(c, {
        status: 405,
        message: "Method Not Allowed",
        headers: { Allow: allowed.join(", ") },
        kind: "method_not_allowed",
        allowedMethods: allowed,
      });
    }
    return render(c, { status: 404, message: "Not Found", headers: {}, kind: "not_found" });
  });
}

/**
 * Reads the body once up front so a failed JSON parse can still be described
 * (position, reason), and so handlers that need the raw bytes (webhook
 * signatures) and validators share one read.
 */
export function bufferRequestBody<E extends Env>() {
  return async (c: Context<E>, next: () => Promise<void>) => {
    if (c.req.method !== "GET" && c.req.method !== "HEAD") await c.req.text();
    await next();
  };
}
