/**
 * FastAPI's reading of a JSON request body: `fastApiJsonBody` in front of a
 * route, then `jsonBody` and `validatedBody` in its handler.
 *
 * - `Content-Type` JSON (`application/json`, `application/*+json`): left to
 *   the validation (malformed JSON becomes `json_invalid` with its offset, an
 *   empty body `missing` at ["body"], via the shared error renderer);
 * - no `Content-Type` and a body: FastAPI parses it as JSON anyway, so the
 *   request is re-labelled as JSON and validated the same way;
 * - any other `Content-Type`: the body stays bytes, which is not an object
 *   (`model_attributes_type`, `input` the text); an empty body is `missing`.
 */
import { ApiError } from "@edge-platform/shared/http/api-error";
import type { FastApiValidationIssue } from "@edge-platform/shared/http/error-shapes/fastapi";
import type { z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { pydanticErrors } from "./pydantic.ts";

// hono's validator refuses a body that is not JSON with exactly this message.
const MALFORMED_JSON = "Malformed JSON in request body";

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

/**
 * The body as JSON, refused as hono's validator refuses it (the shared error
 * handler turns that into `json_invalid` with its offset). After
 * `fastApiJsonBody` the body is always labelled JSON.
 */
export async function jsonBody(c: Context): Promise<unknown> {
  try {
    return await c.req.json();
  } catch {
    throw new HTTPException(400, { message: MALFORMED_JSON });
  }
}

/**
 * A parsed body validated against `schema`: `quick` vouches for the plainly
 * valid bodies it recognises (and must yield what the schema would); any
 * other body goes through `schema`, and a failure there becomes FastAPI's 422
 * with pydantic's entries.
 */
export function validatedBody<T>(
  schema: z.ZodType,
  quick: (body: unknown) => T | undefined,
  body: unknown,
): T {
  const recognised = quick(body);
  if (recognised !== undefined) return recognised;
  const result = schema.safeParse(body);
  if (!result.success) throw validationError(pydanticErrors(schema, result.error.issues, body));
  return result.data as T;
}
