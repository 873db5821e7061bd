/**
 * FastAPI's reading of a JSON request body, in front of the zod validator:
 *
 * - `Content-Type` JSON (`application/json`, `application/*+json`): left to
 *   the validator (malformed JSON becomes `json_invalid` with its offset, an
 *   empty body `missing` at ["body"], via the shared error renderer);
 * - no `Content-Type` and a body: FastAPI parses it as JSON anyway, so the
 *   request is re-labelled as JSON and validated the same way;
 * - any other `Content-Type`: the body stays bytes, which is not an object
 *   (`model_attributes_type`, `input` the text); an empty body is `missing`.
 *
 * Without this gate @hono/zod-openapi would answer 415 (or validate `{}`).
 */
import { ApiError } from "@edge-platform/shared/http/api-error";
import type { FastApiValidationIssue } from "@edge-platform/shared/http/error-shapes/fastapi";
import type { Hook, z } from "@hono/zod-openapi";
import type { Env, MiddlewareHandler } from "hono";
import { pydanticErrors } from "./pydantic.ts";

// The media types @hono/zod-openapi's body validator treats as JSON.
const JSON_CONTENT_TYPE = /^application\/([a-z-.]+\+)?json(;\s*[a-zA-Z0-9-]+=([^;]+))*$/i;

export function validationError(detail: FastApiValidationIssue[]): ApiError {
  return new ApiError(422, "Validation failed", { code: "validation", details: detail });
}

export const fastApiJsonBody: MiddlewareHandler = async (c, next) => {
  const contentType = c.req.header("content-type");
  if (contentType && JSON_CONTENT_TYPE.test(contentType)) return next();
  const text = await c.req.text();
  if (text.length === 0) {
    throw validationError([{ type: "missing", loc: ["body"], msg: "Field required", input: null }]);
  }
  if (contentType) {
    throw validationError([
      {
        type: "model_attributes_type",
        loc: ["body"],
        msg: "Input should be a valid dictionary or object to extract fields from",
        input: text,
      },
    ]);
  }
  const headers = new Headers(c.req.raw.headers);
  headers.set("content-type", "application/json");
  c.req.raw = new Request(c.req.raw.url, { method: c.req.method, headers, body: text });
  return next();
};

/** The route hook: a zod failure becomes FastAPI's 422 with pydantic's entries. */
export function pydanticHook<T, E extends Env, P extends string>(
  schema: z.ZodType,
): Hook<T, E, P, undefined> {
  return (result) => {
    if (!result.success) {
      // @hono/zod-validator also hands the hook the raw input (`data`) on failure.
      const { data } = result as { data?: unknown };
      throw validationError(pydanticErrors(schema, result.error.issues, data));
    }
    return undefined;
  };
}
