import { database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../app-env.ts";
import { findApiKeyByHash, touchApiKey } from "../db/api-keys.ts";
import { effectiveApiKeyStatus, looksLikeApiKey } from "../domain/api-key.ts";
import { constantTimeEqual } from "../domain/password.ts";
import { sha256Hex } from "../domain/secrets.ts";
import { bearerToken } from "./auth.ts";
import { idempotent } from "./idempotency.ts";

const INVALID_KEY = "API key not found or revoked";

/**
 * Server-to-server authentication with `Authorization: Bearer <api key>`.
 * The request's tenant is the key's tenant; any `x-tenant-id` header is
 * ignored. Unknown, revoked and expired keys are 401; a key of a tenant
 * that is not ACTIVE is 403.
 */
export function authenticateApiKey() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const presented = bearerToken(c);
    if (!presented) throw new ApiError(401, "Authorization header is required");
    if (!looksLikeApiKey(presented)) throw new ApiError(401, "Invalid API key format");
    const hash = await sha256Hex(presented);
    const db = database(c.env.DB);
    const found = await findApiKeyByHash(db, hash);
    const encoder = new TextEncoder();
    // The lookup is by hash; comparing again in constant time keeps the decision
    // itself free of early exits on secret-derived data.
    if (!found || !constantTimeEqual(encoder.encode(found.key.keyHash), encoder.encode(hash))) {
      throw new ApiError(401, INVALID_KEY);
    }
    const now = new Date();
    const status = effectiveApiKeyStatus(found.key.status, found.key.expiresAt, now);
    if (status === "REVOKED") throw new ApiError(401, INVALID_KEY);
    if (status === "EXPIRED") throw new ApiError(401, "API key has expired");
    if (found.tenantStatus !== "ACTIVE") {
      throw new ApiError(403, `Tenant is ${found.tenantStatus.toLowerCase()}`);
    }
    // lastUsedAt is bookkeeping, updated asynchronously (as the contract says):
    // the request does not wait for the write, and its failure is only logged.
    c.executionCtx.waitUntil(
      touchApiKey(db, found.key.id, now).then(
        () => undefined,
        (error: unknown) =>
          console.error(
            JSON.stringify({ level: "warn", msg: "api key touch failed", error: String(error) }),
          ),
      ),
    );
    c.set("apiKey", found.key);
    await idempotent(c, next);
  });
}
