// The audit capability's only entry for the rest of the worker (what it owns: README.md).
export { auditContext } from "./audit-context.ts";
export {
  type AuditAction,
  type AuditContext,
  fieldChanges,
  SYSTEM_AUDIT,
  statusChange,
} from "./domain/audit.ts";
export type { AuditRouteServices } from "./route-services.ts";
export { auditEventRoutes } from "./routes.ts";
export { AuditEventService } from "./service.ts";
export {
  auditEntry,
  auditStatement,
  type RawCondition,
  ROW_CHANGED,
  whenInvoiceReached,
} from "./storage.ts";
