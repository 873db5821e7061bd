import { database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { type ApiKeyVerifier, isolateApiKeys } from "./api-key-verification.ts";
import type { AppEnv } from "./app-env.ts";
import { bearerToken } from "./auth.ts";
import { effectiveApiKeyStatus, looksLikeApiKey } from "./domain/api-key.ts";
import { constantTimeEqual } from "./domain/password.ts";
import { sha256Hex } from "./domain/secrets.ts";
import { idempotent } from "./idempotency.ts";

const INVALID_KEY = "API key not found or revoked";
const encoder = new TextEncoder();

/** The isolate's API-key verifier (an app built for a test may bring its own). */
export function apiKeyVerifier(c: Context<AppEnv>): ApiKeyVerifier {
  return c.get("apiKeyVerifier") ?? isolateApiKeys;
}

/**
 * Server-to-server authentication with `Authorization: Bearer <api key>`.
 * The request's tenant is the key's tenant; any `x-tenant-id` header is
 * ignored. Unknown, revoked and expired keys are 401; a key of a tenant
 * that is not ACTIVE is 403. Keys are looked up through the isolate's
 * verifier (platform/api-key-verification.ts): a revocation or a tenant
 * suspension takes effect in the isolate that made it at once, and in
 * every other within API_KEY_CACHE_BOUND_MS.
 */
export function authenticateApiKey() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const presented = bearerToken(c);
    if (!presented) throw new ApiError(401, "Authorization header is required");
    if (!looksLikeApiKey(presented)) throw new ApiError(401, "Invalid API key format");
    const hash = await sha256Hex(presented);
    const db = database(c.env.DB);
    const verifier = apiKeyVerifier(c);
    const background = (work: Promise<unknown>) => c.executionCtx.waitUntil(work);
    const found = await verifier.lookup(db, hash, background);
    // The lookup is by hash; comparing again in constant time keeps the decision
    // itself free of early exits on secret-derived data.
    if (!found || !constantTimeEqual(encoder.encode(found.key.keyHash), encoder.encode(hash))) {
      throw new ApiError(401, INVALID_KEY);
    }
    const status = effectiveApiKeyStatus(
      found.key.status,
      found.key.expiresAt,
      new Date(verifier.now()),
    );
    if (status === "REVOKED") throw new ApiError(401, INVALID_KEY);
    if (status === "EXPIRED") throw new ApiError(401, "API key has expired");
    if (found.tenantStatus !== "ACTIVE") {
      throw new ApiError(403, `Tenant is ${found.tenantStatus.toLowerCase()}`);
    }
    // lastUsedAt is bookkeeping (as the contract says, asynchronous): at most
    // one write per key per minute, after the response.
    verifier.recordUse(db, found.key, background);
    c.set("apiKey", found.key);
    await idempotent(c, next);
  });
}
