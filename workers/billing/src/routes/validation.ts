import { ApiError } from "@edge-platform/shared/http/api-error";
import { OpenAPIHono, type z } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";

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
      : [`${field} must be ${issue.expected === "object" ? "an object" : `a ${issue.expected}`}`];
  }
  // Custom messages already name their field ("email must be an email").
  if (issue.message.startsWith(`${field} `)) return [issue.message];
  return [`${field}: ${issue.message}`];
}

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
