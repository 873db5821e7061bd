import type { ExecutionContext as HonoExecutionContext } from "hono";

/**
 * The Hono app's own fetch: the console's calls go through every API
 * middleware and rule. Kept apart from the API client because the session
 * needs it too, and the client in turn needs the session.
 */
export type ApiFetch = (
  request: Request,
  env: Env,
  ctx: HonoExecutionContext,
) => Response | Promise<Response>;
