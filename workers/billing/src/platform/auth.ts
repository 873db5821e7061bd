import { database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { findUserById } from "./access-storage.ts";
import type { AppEnv } from "./app-env.ts";
import { SigningKeyError, signingKey, verifyAccessToken } from "./domain/access-token.ts";
import { idempotent } from "./idempotency.ts";

export const AUTHENTICATION_REQUIRED = "Authentication required";

/**
 * The JWT signing key, or a 503: with a missing or short secret the worker
 * serves no route that issues or checks tokens (a weak key is worse than
 * no service).
 */
export function requireSigningKey(c: Context<AppEnv>): Uint8Array<ArrayBuffer> {
  try {
    return signingKey(c.env.JWT_SECRET);
  } catch (error) {
    if (!(error instanceof SigningKeyError)) throw error;
    console.error(
      JSON.stringify({
        level: "error",
        msg: "refusing authenticated route",
        reason: error.message,
      }),
    );
    throw new ApiError(503, "Authentication is not configured on this server");
  }
}

export function bearerToken(c: Context): string | undefined {
  const header = c.req.header("authorization");
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1];
}

/**
 * Requires a valid access token for an active user whose sessions were not
 * ended after the token was issued (token version), and puts the user in
 * `c.var.user`.
 */
export function authenticate() {
  return createMiddleware<AppEnv>(async (c, next) => {
    const key = requireSigningKey(c);
    const token = bearerToken(c);
    if (!token) throw new ApiError(401, AUTHENTICATION_REQUIRED);
    const verified = await verifyAccessToken(key, token);
    if (!verified.ok) {
      throw new ApiError(
        401,
        verified.reason === "expired" ? "Token has expired" : AUTHENTICATION_REQUIRED,
      );
    }
    const user = await findUserById(database(c.env.DB), verified.claims.sub);
    if (!user?.isActive || user.tokenVersion !== verified.claims.ver) {
      throw new ApiError(401, AUTHENTICATION_REQUIRED);
    }
    c.set("user", user);
    await idempotent(c, next);
  });
}
