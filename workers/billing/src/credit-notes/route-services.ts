import type { Context } from "hono";
import type { AppEnv } from "../platform/index.ts";
import type { CreditNoteService } from "./service.ts";

/**
 * What the credit-note routes are handed: each builds a service for one request.
 * The worker's composition root (src/services.ts) implements it.
 */
export interface CreditNoteRouteServices {
  creditNoteService(c: Context<AppEnv>): CreditNoteService;
}
