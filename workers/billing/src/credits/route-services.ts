import type { Context } from "hono";
import type { AppEnv } from "../platform/index.ts";
import type { CreditService } from "./service.ts";

/**
 * What the credits routes are handed: each builds a service for one request.
 * The worker's composition root (src/services.ts) implements it.
 */
export interface CreditRouteServices {
  creditService(c: Context<AppEnv>): CreditService;
}
