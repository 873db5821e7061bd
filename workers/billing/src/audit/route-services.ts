import type { Context } from "hono";
import type { AppEnv } from "../platform/index.ts";
import type { AuditEventService } from "./service.ts";

/**
 * What the audit routes are handed: each builds a service for one request.
 * The worker's composition root (src/services.ts) implements it.
 */
export interface AuditRouteServices {
  auditEventService(c: Context<AppEnv>): AuditEventService;
}
