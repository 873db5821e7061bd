import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  takesIdempotencyKey,
} from "./domain/idempotency.ts";

// Idempotency-Key is handled by middleware for every write that takes one,
// so the document gets it here, as one reusable header parameter referenced
// by each such operation, instead of repeating it in every route.

export const IDEMPOTENCY_PARAMETER_NAME = "IdempotencyKey";

export const idempotencyKeyParameter = {
  name: IDEMPOTENCY_KEY_HEADER,
  in: "header" as const,
  required: false,
  description: `Optional. A retry with the same key and the same request (method, path, x-tenant-id, body) within 24 hours gets the first answer again, with \`${IDEMPOTENT_REPLAYED_HEADER}: true\`, and changes nothing; errors are kept too, except 5xx and 429. The same key with another request is a 422; a retry while the first is still running is a 409. Keys belong to the caller (the user, or the API key's tenant). A replayed \`POST /api-keys\` leaves out the raw key.`,
  schema: {
    type: "string" as const,
    minLength: 1,
    maxLength: MAX_IDEMPOTENCY_KEY_LENGTH,
    pattern: "^[\\x20-\\x7E]+$",
  },
};

interface OperationObject {
  parameters?: unknown[];
  responses?: Record<string, unknown>;
}

const errorRef = { $ref: "#/components/schemas/Error" };

/** Adds the parameter reference, and the 409 and 422 it can cause, to every keyed operation. */
export function documentIdempotency<T extends { paths?: object | undefined }>(
  document: T,
  prefix: string,
): T {
  const paths = (document.paths ?? {}) as Record<string, Record<string, unknown>>;
  for (const [path, item] of Object.entries(paths)) {
    for (const method of ["POST", "PUT"] as const) {
      const operation = item[method.toLowerCase()] as OperationObject | undefined;
      const relative = path.startsWith(prefix) ? path.slice(prefix.length) : path;
      if (operation && takesIdempotencyKey(method, relative)) documentKeyed(operation);
    }
  }
  return document;
}

function documentKeyed(operation: OperationObject) {
  {
    operation.parameters = [
      ...(operation.parameters ?? []),
      { $ref: `#/components/parameters/${IDEMPOTENCY_PARAMETER_NAME}` },
    ];
    const responses = operation.responses ?? {};
    const errorContent = { content: { "application/json": { schema: errorRef } } };
    responses["409"] ??= {
      description: "Conflict (also: a request with this Idempotency-Key is still running)",
      ...errorContent,
    };
    responses["422"] ??= {
      description: "The Idempotency-Key was used with other parameters",
      ...errorContent,
    };
    operation.responses = responses;
  }
}
