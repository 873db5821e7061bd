import type { Context } from "hono";
import type { Problem } from "../error-handling.ts";

const TYPE_BY_STATUS: Record<number, string> = {
  400: "INVALID_INPUT",
  401: "INVALID_TOKEN",
  403: "UNAUTHORIZED",
  404: "NOT_FOUND",
  405: "METHOD_NOT_ALLOWED",
  413: "VALIDATION_ERROR",
  415: "VALIDATION_ERROR",
  422: "VALIDATION_ERROR",
  429: "RATE_LIMITED",
  503: "SERVICE_UNAVAILABLE",
};

/** The portfolio envelope: `{error: {code, type, message, request_id}}`. */
export function renderPortfolioProblem(c: Context, problem: Problem): Response {
  let { status, message } = problem;
  let type = problem.code ?? TYPE_BY_STATUS[status] ?? "INTERNAL_ERROR";
  if (problem.kind === "malformed_json" && problem.jsonError) {
    status = 422;
    type = "VALIDATION_ERROR";
    message = problem.jsonError.emptyBody
      ? "Request validation failed: body: Field required"
      : `Request validation failed: body: JSON decode error (${problem.jsonError.reason} at position ${problem.jsonError.position})`;
  } else if (problem.kind === "not_found") {
    message = `No route for ${c.req.method} ${c.req.path}`;
  } else if (problem.kind === "method_not_allowed") {
    message = `Method ${c.req.method} is not allowed on ${c.req.path}`;
  } else if (problem.kind === "internal") {
    type = "INTERNAL_ERROR";
    message = "An unexpected error occurred. Please try again later.";
  }
  const requestId = c.get("requestId") as string | undefined;
  return c.json(
    {
      error: {
        code: status,
        type,
        message,
        ...(requestId ? { request_id: requestId } : {}),
      },
    },
    status,
    problem.headers,
  );
}
