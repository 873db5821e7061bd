import type { Context } from "hono";
import type { Problem } from "../error-handling.ts";

/** One entry of FastAPI's 422 `detail` list. */
export interface FastApiValidationIssue {
  type: string;
  loc: (string | number)[];
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

/**
 * The AQI service's FastAPI-compatible bodies: `{detail: "text"}` for plain
 * errors and `{detail: [issues]}` for validation (422), malformed JSON
 * included, as FastAPI reports it.
 */
export function renderFastApiProblem(c: Context, problem: Problem): Response {
  if (problem.kind === "malformed_json" && problem.jsonError) {
    const { position, reason, emptyBody } = problem.jsonError;
    const detail: FastApiValidationIssue[] = emptyBody
      ? [{ type: "missing", loc: ["body"], msg: "Field required", input: null }]
      : [
          {
            type: "json_invalid",
            loc: ["body", position],
            msg: "JSON decode error",
            input: {},
            ctx: { error: reason },
          },
        ];
    return c.json({ detail }, 422);
  }
  if (problem.kind === "internal") {
    return c.json({ detail: "Internal Server Error" }, 500);
  }
  return c.json({ detail: problem.details ?? problem.message }, problem.status, problem.headers);
}
