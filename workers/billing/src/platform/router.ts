import { ApiError } from "@edge-platform/shared/http/api-error";
import { OpenAPIHono, type z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "./app-env.ts";

type Issue = z.core.$ZodIssue;

/** One readable line per problem, in the spirit of class-validator's messages. */
export function describeIssue(issue: Issue): string[] {
  const field = issue.path.map(String).join(".");
  if (issue.code === "unrecognized_keys") {
    return issue.keys.map((key) => `property ${field ? `${field}.` : ""}${key} should not exist`);
  }
  if (!field) return [issue.message];
  if (issue.code === "invalid_type") {
    return issue.message.endsWith("received undefined")
      ? [`${field} is required`]
      : [`${field} must be ${EXPECTED_NAMES[issue.expected ?? ""] ?? `a ${issue.expected}`}`];
  }
  // Custom messages already name their field ("email must be an email").
  if (issue.message.startsWith(`${field} `)) return [issue.message];
  return [`${field}: ${issue.message}`];
}

const EXPECTED_NAMES: Record<string, string> = { object: "an object", int: "an integer" };

/** Validation failures become 400s whose `message` lists every problem. */
export function validationHook(result: { success: boolean; error?: { issues: Issue[] } }) {
  if (!result.success) {
    const messages = (result.error?.issues ?? []).flatMap(describeIssue);
    throw new ApiError(400, "Validation failed", { details: messages, code: "validation" });
  }
}

/** Every route group is built with the same validation hook (hooks do not inherit through `route`). */
export function createRouter() {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}

/**
 * A body that may be absent (undefined), but when present must be a JSON
 * object of `schema` with a JSON content type and at most `maxBytes`:
 * whatever the route's declared validator let through (a non-JSON content
 * type skips it) is checked here, so no body is ever acted on unread.
 */
export async function optionalJsonBody<T extends z.ZodType>(
  c: {
    req: { text(): Promise<string>; header(name: string): string | undefined };
  },
  schema: T,
  maxBytes: number,
): Promise<z.infer<T> | undefined> {
  const raw = await c.req.text();
  if (raw.trim() === "") return undefined;
  if (new TextEncoder().encode(raw).byteLength > maxBytes) {
    throw new ApiError(400, `Request body must be at most ${maxBytes} bytes`);
  }
  if (!/^application\/(?:[\w.+-]+\+)?json\b/i.test(c.req.header("content-type") ?? "")) {
    throw new ApiError(400, "Content-Type must be application/json");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ApiError(400, "Malformed JSON in request body", { code: "json_invalid" });
  }
  const result = schema.safeParse(parsed);
  validationHook(result as { success: boolean; error?: { issues: Issue[] } });
  return result.data as z.infer<T>;
}

/** A rendered document (invoice, credit note) as a private PDF download named after its number. */
export function pdfAttachment(
  c: Context<AppEnv>,
  document: { bytes: Uint8Array; fileName: string },
) {
  return c.body(document.bytes as Uint8Array<ArrayBuffer>, 200, {
    "content-type": "application/pdf",
    "content-disposition": `attachment; filename="${document.fileName}"`,
    "cache-control": "private, no-store",
  });
}
