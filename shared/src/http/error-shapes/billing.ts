import type { Context } from "hono";
import type { Problem } from "../error-handling.ts";
import { statusName } from "../status.ts";

/**
 * Billing's error body: `{statusCode, message, error, correlationId,
 * timestamp, path}`, `error` being the HTTP status name and `message` a
 * string, or a string[] for validation failures; a refusal may add fields
 * of its own after them (402 CREDITS_EXHAUSTED: `code`, `creditBalance`).
 */
export function renderBillingProblem(c: Context, problem: Problem): Response {
  const url = new URL(c.req.url);
  let message: string | string[] = problem.message;
  if (problem.kind === "not_found" || problem.kind === "method_not_allowed") {
    message = `Cannot ${c.req.method} ${url.pathname}`;
  } else if (problem.kind === "malformed_json" && problem.jsonError) {
    const { reason, position, emptyBody } = problem.jsonError;
    message = emptyBody
      ? "Request body must be a JSON document"
      : `Malformed JSON in request body: ${reason} at position ${position}`;
  } else if (Array.isArray(problem.details)) {
    message = problem.details as string[];
  }
  const status = problem.kind === "malformed_json" ? 400 : problem.status;
  return c.json(
    {
      statusCode: status,
      message,
      error: statusName(status),
      correlationId:
        problem.firstAnswer?.correlationId ??
        (c.get("correlationId") as string | undefined) ??
        "unknown",
      timestamp: problem.firstAnswer?.timestamp ?? new Date().toISOString(),
      path: url.pathname + url.search,
      ...problem.fields,
    },
    status,
    problem.headers,
  );
}
