import { ApiError } from "@edge-platform/shared/http/api-error";
import { z } from "@hono/zod-openapi";

export const ErrorResponse = z
  .object({
    error: z.object({
      code: z.number().int(),
      type: z.string(),
      message: z.string(),
      request_id: z.string(),
    }),
  })
  .openapi("Error");

interface Issue {
  code: string;
  path: PropertyKey[];
  message: string;
  keys?: string[];
}

/** `body.question: String should have at least 2 characters; body.x: Extra inputs are not permitted` */
export function describeIssues(target: string, issues: readonly Issue[]): string {
  const parts: string[] = [];
  for (const issue of issues) {
    const location = [target, ...issue.path.map(String)].join(".");
    if (issue.code === "unrecognized_keys" && issue.keys)
      for (const key of issue.keys)
        parts.push(`${location}.${key}: Extra inputs are not permitted`);
    else if (issue.code === "invalid_type" && issue.path.length === 0)
      parts.push(`${location}: Input should be a valid object`);
    else parts.push(`${location}: ${issue.message}`);
  }
  return parts.join("; ");
}

/** zod-openapi's hook: every validation failure is a 422 VALIDATION_ERROR with field detail. */
export function validationHook(result: {
  success: boolean;
  target: string;
  error?: { issues: readonly Issue[] };
}): void {
  if (result.success || !result.error) return;
  const target = result.target === "json" ? "body" : result.target;
  throw new ApiError(
    422,
    `Request validation failed: ${describeIssues(target, result.error.issues)}`,
    {
      code: "VALIDATION_ERROR",
    },
  );
}
