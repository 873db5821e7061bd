import { ApiError } from "@edge-platform/shared/http/api-error";
import { clientIp, consumeRateLimit } from "@edge-platform/shared/rate-limit/middleware";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../app-env.ts";
import { secretsEqual } from "../domain/hashing.ts";
import { readSettings, type Settings } from "../domain/settings.ts";

/** Parses the configuration once per request. */
export const loadSettings = createMiddleware<AppEnv>(async (c, next) => {
  c.set("settings", readSettings(c.env as unknown as Record<string, unknown>));
  await next();
});

function assertConfigured(settings: Settings): void {
  if (!settings.apiToken || !settings.personaConfigured) {
    throw new ApiError(
      500,
      `The service is not configured yet. Please try again later${settings.persona.contactEmail ? ` or contact ${settings.persona.contactEmail}` : ""}.`,
      { code: "INTERNAL_ERROR" },
    );
  }
}

const BEARER_CHALLENGE = { "WWW-Authenticate": 'Bearer realm="portfolio"' };

/**
 * Checks a presented token against API_TOKEN in constant time. Order as the
 * original: unconfigured service (500), then missing (401 MISSING_TOKEN),
 * then mismatch (401 INVALID_TOKEN).
 */
export async function verifyToken(settings: Settings, token: string | undefined, hint: string) {
  assertConfigured(settings);
  if (!token)
    throw new ApiError(401, `An API token is required: ${hint}.`, {
      code: "MISSING_TOKEN",
      headers: BEARER_CHALLENGE,
    });
  if (!(await secretsEqual(token, settings.apiToken)))
    throw new ApiError(401, "Invalid API token. Check the token and try again.", {
      code: "INVALID_TOKEN",
      headers: BEARER_CHALLENGE,
    });
}

/** `Authorization: Bearer <API_TOKEN>` (scheme case-insensitive). Runs before body validation. */
export const bearerAuth = createMiddleware<AppEnv>(async (c, next) => {
  const header = c.req.header("authorization") ?? "";
  const match = /^bearer\s+(.+)$/i.exec(header.trim());
  await verifyToken(
    c.get("settings"),
    match?.[1]?.trim(),
    "send the header `Authorization: Bearer <your-token>`",
  );
  await next();
});

/** One hit against a per-client fixed window; 429 RATE_LIMITED with Retry-After when spent. */
export async function enforceRateLimit(c: Context<AppEnv>, bucket: string, perMinute: number) {
  const decision = await consumeRateLimit(
    c.env.RATE_LIMITER,
    `${bucket}:${clientIp(c)}`,
    perMinute,
    60,
  );
  if (!decision.allowed) {
    throw new ApiError(
      429,
      `Rate limit exceeded: ${perMinute} per 1 minute. Retry in ${decision.retryAfterSeconds} s.`,
      { code: "RATE_LIMITED", headers: { "Retry-After": String(decision.retryAfterSeconds) } },
    );
  }
}
