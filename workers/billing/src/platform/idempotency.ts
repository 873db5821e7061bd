import { type Database, database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import type { Context, Next } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "./app-env.ts";
import {
  IDEMPOTENCY_IN_FLIGHT,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_REUSED,
  IDEMPOTENCY_LOCK_MS,
  IDEMPOTENCY_TTL_MS,
  IDEMPOTENT_REPLAYED_HEADER,
  INVALID_IDEMPOTENCY_KEY,
  keepsAnswer,
  type OnceShownSecrets,
  parseIdempotencyKey,
  recordedByCounter,
  requestFingerprint,
  storableBody,
  takesIdempotencyKey,
} from "./domain/idempotency.ts";
import { sha256Hex } from "./domain/secrets.ts";
import type { CounterIdempotency } from "./idempotency-state.ts";
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  findIdempotencyKey,
  releaseIdempotencyKey,
} from "./idempotency-storage.ts";
import { TENANT_HEADER } from "./tenant-header.ts";

/*
 * Idempotency-Key, in two steps because the key belongs to a caller and the
 * caller is only known after authentication:
 *   1. `idempotencyKeys()` (app-wide) reads and validates the header of a
 *      POST or PUT that takes one (400 for a malformed key) and leaves it in
 *      `c.var.idempotency`;
 *   2. `idempotent(c, next)`, which `authenticate()` and
 *      `authenticateApiKey()` call in place of `next()`, claims the key for
 *      the caller (user, or the API key's tenant) in D1 before anything else
 *      runs, then runs the rest (tenant checks, validation, handler) and
 *      stores the answer, or answers from what was stored.
 *
 * Why D1 and a claim row: the claim is one `INSERT ... ON CONFLICT DO
 * UPDATE ... WHERE` whose RETURNING tells which of racing requests won, so
 * exactly one runs the handler and the others see IN_FLIGHT (409) or the
 * stored answer; rows expire after 24 hours (pruned by the Cron Trigger).
 * A Durable Object per caller would serialise the same way but adds a hop
 * to another object on every keyed write, and D1 is where every other write
 * of the request goes anyway. The one gap of a separate claim row (the
 * handler committed, the isolate died before the answer was stored) is
 * avoided for consume, where it matters most: there the record lives in
 * the tenant's EntitlementCounter (`recordedByCounter`), which stores the
 * answer in the same step as the units, so the key costs no D1 write.
 */

export interface IdempotencyOptions {
  /** Epoch milliseconds; tests move it to see keys expire. */
  clock?: (() => number) | undefined;
  /** Path prefix of the API, stripped before deciding which routes take a key. */
  prefix: string;
}

export function idempotencyKeys(options: IdempotencyOptions) {
  const clock = options.clock ?? Date.now;
  return createMiddleware<AppEnv>(async (c, next) => {
    const path = c.req.path.startsWith(options.prefix)
      ? c.req.path.slice(options.prefix.length)
      : c.req.path;
    if (!takesIdempotencyKey(c.req.method, path)) return next();
    const parsed = parseIdempotencyKey(c.req.header(IDEMPOTENCY_KEY_HEADER));
    if (parsed.kind === "invalid") {
      throw new ApiError(400, INVALID_IDEMPOTENCY_KEY, { code: "idempotency_key_invalid" });
    }
    if (parsed.kind === "key") {
      c.set("idempotency", {
        key: parsed.key,
        inCounter: recordedByCounter(c.req.method, path),
        clock,
      });
    }
    await next();
  });
}

/** The caller a key belongs to: the signed-in user, or the tenant of the API key. */
function callerScope(c: Context<AppEnv>): string {
  const apiKey = c.get("apiKey");
  if (apiKey) return `tenant:${apiKey.tenantId}`;
  return `user:${c.var.user.id}`;
}

/** A claimed key, as the storage finishes or releases it. */
type Claim = { scope: string; key: string; createdAtMs: number };

/**
 * Runs `next` at most once per (caller, key) within 24 hours; see the top
 * of this file. Without a key it is just `next()`.
 */
export async function idempotent(c: Context<AppEnv>, next: Next): Promise<void> {
  const state = c.get("idempotency");
  if (!state || state.claimed) return next();
  state.claimed = true;
  const db = database(c.env.DB);
  const scope = callerScope(c);
  const requestHash = await requestHashOf(c);
  const nowMs = state.clock();
  if (state.inCounter) {
    state.counter = {
      requestId: await sha256Hex(`${scope}\n${state.key}`),
      requestHash,
      atMs: nowMs,
    };
    return next();
  }
  const claimed = await claimIdempotencyKey(db, {
    scope,
    key: state.key,
    requestHash,
    nowMs,
    ttlMs: IDEMPOTENCY_TTL_MS,
    lockMs: IDEMPOTENCY_LOCK_MS,
  });
  if (!claimed) {
    c.res = await storedAnswer(db, scope, state.key, requestHash);
    return;
  }

  const claim = { scope, key: state.key, createdAtMs: claimed.createdAtMs };
  try {
    await next();
  } catch (error) {
    await releaseIdempotencyKey(db, claim);
    throw error;
  }
  await keepAnswer(c, db, claim, state.onceShown);
}

/** The fingerprint of what was asked: the same key with another request is refused. */
async function requestHashOf(c: Context<AppEnv>): Promise<string> {
  const url = new URL(c.req.url);
  return sha256Hex(
    requestFingerprint({
      method: c.req.method,
      path: url.pathname + url.search,
      tenantHeader: c.req.header(TENANT_HEADER)?.trim().toLowerCase(),
      body: await c.req.text(),
    }),
  );
}

/**
 * The answer for a key another request holds: the stored one, replayed, or
 * a 409 while it runs, or a 422 when the key came with another request.
 */
async function storedAnswer(
  db: Database,
  scope: string,
  key: string,
  requestHash: string,
): Promise<Response> {
  const existing = await findIdempotencyKey(db, scope, key);
  // Gone between the two reads only if it expired and was pruned: a retry claims it.
  if (!existing) throw new ApiError(409, IDEMPOTENCY_IN_FLIGHT, { code: "idempotency_in_flight" });
  if (existing.requestHash !== requestHash) {
    throw new ApiError(422, IDEMPOTENCY_KEY_REUSED, { code: "idempotency_key_reused" });
  }
  if (existing.state === "IN_FLIGHT" || existing.responseStatus === null) {
    throw new ApiError(409, IDEMPOTENCY_IN_FLIGHT, { code: "idempotency_in_flight" });
  }
  return new Response(existing.responseBody ?? "", {
    status: existing.responseStatus,
    headers: {
      "content-type": existing.responseContentType ?? "application/json",
      [IDEMPOTENT_REPLAYED_HEADER]: "true",
    },
  });
}

/** Stores an answer worth replaying under the claim, or frees the key for a retry. */
async function keepAnswer(
  c: Context<AppEnv>,
  db: Database,
  claim: Claim,
  onceShown: OnceShownSecrets | undefined,
): Promise<void> {
  const response = c.res;
  try {
    if (keepsAnswer(response.status)) {
      const body = await response.clone().text();
      await completeIdempotencyKey(db, claim, {
        status: response.status,
        body: storableBody(body, onceShown),
        contentType: response.headers.get("content-type"),
      });
    } else {
      await releaseIdempotencyKey(db, claim);
    }
  } catch (error) {
    // The answer stands; the claim stays IN_FLIGHT until its lock lapses,
    // after which a retry runs again (consume is still counted once).
    console.error(
      JSON.stringify({
        level: "error",
        msg: "idempotency answer not stored",
        correlationId: c.get("correlationId"),
        error: String(error),
      }),
    );
  }
}

/**
 * For answers with a secret shown once (a new API key): the stored answer
 * leaves these fields out and carries `notice` instead.
 */
export function withholdOnReplay(c: Context<AppEnv>, secrets: OnceShownSecrets): void {
  const state = c.get("idempotency");
  if (state) state.onceShown = secrets;
}

/** A keyed consume's record, for its EntitlementCounter; undefined without a key. */
export function counterIdempotency(c: Context<AppEnv>): CounterIdempotency | undefined {
  return c.get("idempotency")?.counter;
}
