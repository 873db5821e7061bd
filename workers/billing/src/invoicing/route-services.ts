import type { Context } from "hono";
import type { AppEnv } from "../platform/index.ts";
import type { InvoiceService } from "./service.ts";

/**
 * What the invoicing routes are handed: each builds a service for one request.
 * The worker's composition root (src/services.ts) implements it.
 */
export interface InvoicingRouteServices {
  invoiceService(c: Context<AppEnv>): InvoiceService;
}
