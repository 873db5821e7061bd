import type { ContentfulStatusCode } from "hono/utils/http-status";

export interface ApiErrorOptions {
  /** Machine-readable error type, e.g. `MISSING_TOKEN` or `json_invalid`. */
  code?: string;
  /**
   * A structured payload some shapes carry instead of the plain message:
   * FastAPI's `detail` list, billing's `message` array for validation.
   */
  details?: unknown;
  headers?: Record<string, string>;
  cause?: unknown;
  /**
   * For an answer that is replayed (an Idempotency-Key): the correlation id
   * and time of the request that first received it, so the replay is the
   * same answer rather than a new one.
   */
  firstAnswer?: FirstAnswer;
  /** Fields a shape that allows them adds to its body (billing: `code`, `creditBalance`). */
  fields?: Record<string, unknown>;
}

export interface FirstAnswer {
  correlationId: string;
  /** ISO 8601. */
  timestamp: string;
}

/**
 * The one error type routes and services throw. Each worker's `onError`
 * renders it in that service's documented shape, so domain code never
 * builds response bodies for failures.
 */
export class ApiError extends Error {
  readonly status: ContentfulStatusCode;
  readonly code: string | undefined;
  readonly details: unknown;
  readonly headers: Record<string, string>;
  readonly firstAnswer: FirstAnswer | undefined;
  readonly fields: Record<string, unknown> | undefined;

  constructor(status: ContentfulStatusCode, message: string, options: ApiErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = "ApiError";
    this.status = status;
    this.code = options.code;
    this.details = options.details;
    this.headers = options.headers ?? {};
    this.firstAnswer = options.firstAnswer;
    this.fields = options.fields;
  }
}
