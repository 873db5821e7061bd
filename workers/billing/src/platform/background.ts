import type { Context } from "hono";
import type { AppEnv } from "./app-env.ts";

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
