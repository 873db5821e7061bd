import type { Context } from "hono";
import type { AppEnv } from "../platform/index.ts";
import { type AuditContext, SYSTEM_AUDIT } from "./domain/audit.ts";

/**
 * Who the audit trail names for this request: the API key (by id), the
 * signed-in user, or a platform administrator when acting outside any
 * tenant they belong to (the catalog, the dead-letter queue).
 */
export function auditContext(c: Context<AppEnv>): AuditContext {
  const correlationId = c.get("correlationId") ?? null;
  const apiKey = c.get("apiKey");
  if (apiKey) return { actor: { type: "api_key", id: apiKey.id }, correlationId };
  const user = c.get("user");
  if (user) {
    // A platform administrator on a money route of a tenant they are not a member of acts as such.
    const billing = c.get("billingContext");
    const inTenant =
      c.get("tenantContext") !== undefined || (billing !== undefined && billing.role !== null);
    const type = user.isPlatformAdmin && !inTenant ? "platform_admin" : "user";
    return { actor: { type, id: user.id }, correlationId };
  }
  return { ...SYSTEM_AUDIT, correlationId };
}
