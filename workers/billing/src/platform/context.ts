import { database } from "@edge-platform/shared/db/client";
import type { Context } from "hono";
import { auditContext } from "../audit/index.ts";
import { ApiKeyService, SessionService, TenantService, UserService } from "../identity/index.ts";
import { apiKeyVerifier } from "./api-key.ts";
import type { AppEnv } from "./app-env.ts";
import { requireSigningKey } from "./auth.ts";

export const sessionService = (c: Context<AppEnv>) =>
  new SessionService(database(c.env.DB), requireSigningKey(c), auditContext(c));
export const userService = (c: Context<AppEnv>) =>
  new UserService(database(c.env.DB), auditContext(c));
export const tenantService = (c: Context<AppEnv>) =>
  new TenantService(database(c.env.DB), auditContext(c), apiKeyVerifier(c));
export const apiKeyService = (c: Context<AppEnv>) =>
  new ApiKeyService(database(c.env.DB), auditContext(c), apiKeyVerifier(c));

/**
 * Runs work after the response when the runtime allows it (so its duration
 * does not show in response times), inline otherwise.
 */
export async function inBackground(c: Context<AppEnv>, work: Promise<unknown>): Promise<void> {
  let executionCtx: { waitUntil(promise: Promise<unknown>): void } | undefined;
  try {
    executionCtx = c.executionCtx;
  } catch {
    executionCtx = undefined;
  }
  if (executionCtx) executionCtx.waitUntil(work);
  else await work;
}
