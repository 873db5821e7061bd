// Idempotency-Key rules (Stripe's semantics): which requests take a key,
// what a valid key is, which answers are kept for replay and how a stored
// answer drops secrets that are shown only once.

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
export const IDEMPOTENT_REPLAYED_HEADER = "Idempotent-Replayed";

/** How long the first answer is kept and replayed. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * An IN_FLIGHT claim older than this belongs to a request that died before
 * recording its answer (the isolate was evicted); a retry may then run it.
 * Far above any request's running time.
 */
export const IDEMPOTENCY_LOCK_MS = 2 * 60 * 1000;

export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

export const INVALID_IDEMPOTENCY_KEY = `${IDEMPOTENCY_KEY_HEADER} must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters`;
export const IDEMPOTENCY_KEY_REUSED =
  "Keys for idempotent requests can only be used with the same parameters they were first used with: this Idempotency-Key was used with other parameters";
export const IDEMPOTENCY_IN_FLIGHT =
  "A request with this Idempotency-Key is still being processed; retry later";

/** A header value that is a usable key, or why not. */
export function parseIdempotencyKey(
  value: string | undefined,
): { kind: "absent" } | { kind: "key"; key: string } | { kind: "invalid" } {
  if (value === undefined) return { kind: "absent" };
  if (value.length < 1 || value.length > MAX_IDEMPOTENCY_KEY_LENGTH) return { kind: "invalid" };
  if (!PRINTABLE_ASCII.test(value)) return { kind: "invalid" };
  return { kind: "key", key: value };
}

/**
 * Writes take a key, except `/auth/*` (their answers carry tokens that must
 * never be replayed) and provider webhooks (deduplicated by the provider's
 * own event ids). `path` is relative to the API prefix.
 */
export function takesIdempotencyKey(method: string, path: string): boolean {
  if (method !== "POST" && method !== "PUT") return false;
  return !path.startsWith("/auth/") && !path.startsWith("/webhooks/");
}

const CONSUME_PATH = /^\/entitlements\/[^/]+\/consume$/;

/**
 * A consume's key is recorded by the tenant's EntitlementCounter, next to
 * the count it protects (one write, in the same step as the units), rather
 * than by a claim and an answer in D1. `path` is relative to the API prefix.
 */
export function recordedByCounter(method: string, path: string): boolean {
  return method === "POST" && CONSUME_PATH.test(path);
}

/**
 * 5xx and 429 are not kept: the retry may do the work. Everything else,
 * errors included (a 403 quota refusal replays as 403), is the answer.
 */
export function keepsAnswer(status: number): boolean {
  return status < 500 && status !== 429;
}

/** The text hashed to tell "the same request" from "other parameters". */
export function requestFingerprint(request: {
  method: string;
  path: string;
  tenantHeader: string | undefined;
  body: string;
}): string {
  return [request.method, request.path, request.tenantHeader ?? "", request.body].join("\n");
}

export interface OnceShownSecrets {
  /** Top-level fields of the JSON body that are shown once and never stored. */
  fields: string[];
  /** Put in the stored body's `notice`, so a replay says why the fields are missing. */
  notice: string;
}

/** The body to store: the first answer without its once-shown secrets. */
export function storableBody(body: string, secrets: OnceShownSecrets | undefined): string {
  if (!secrets) return body;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return body;
  const kept: Record<string, unknown> = {};
  let removed = false;
  for (const [name, value] of Object.entries(parsed)) {
    if (secrets.fields.includes(name)) removed = true;
    else kept[name] = value;
  }
  if (removed) kept.notice = secrets.notice;
  return JSON.stringify(kept);
}
