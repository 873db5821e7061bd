import type { AuditActorType, AuditChanges } from "@edge-platform/shared/db/schema/audit";

// The audit trail's vocabulary: who acted, what they did to what, and
// which fields changed. Rows are written by audit/storage.ts in the same
// D1 batch as the change they record.

export const auditActions = [
  "auth.password_changed",
  "auth.password_reset",
  "auth.sessions_revoked",
  "membership.added",
  "membership.role_changed",
  "membership.removed",
  "tenant.updated",
  "tenant.deleted",
  "tenant.billing_details_updated",
  "api_key.created",
  "api_key.revoked",
  "plan.created",
  "plan.updated",
  "price.created",
  "price.updated",
  "entitlement.created",
  "entitlement.updated",
  "entitlement.deleted",
  "subscription.created",
  "subscription.changed",
  "subscription.cancelled",
  "subscription.paused",
  "subscription.resumed",
  "invoice.finalized",
  "invoice.voided",
  "invoice.marked_paid",
  "payment.succeeded",
  "payment.failed",
  "dead_letter.retried",
  "dead_letter.discarded",
  "webhook_endpoint.created",
  "webhook_endpoint.updated",
  "webhook_endpoint.deleted",
  "webhook_endpoint.secret_rotated",
  "webhook_endpoint.disabled",
  "webhook_delivery.resent",
  "usage_alert.created",
  "usage_alert.deleted",
  "coupon.created",
  "coupon.archived",
  "coupon.redeemed",
  "credit_grant.created",
  "credit_grant.voided",
  "credit_grant.expired",
  "credit_grant.taken_back",
  "credit_auto_top_up.updated",
  "credit_note.created",
  "refund.succeeded",
  "refund.failed",
] as const;
export type AuditAction = (typeof auditActions)[number];

export interface AuditActor {
  type: AuditActorType;
  id: string | null;
}

/** Who is acting in this request or job, and the correlation id that ties the row to its logs. */
export interface AuditContext {
  actor: AuditActor;
  correlationId: string | null;
}

/** Scheduled work (the Cron Trigger's billing cycle) and anything without a caller. */
export const SYSTEM_AUDIT: AuditContext = {
  actor: { type: "system", id: null },
  correlationId: null,
};

export interface AuditRecord {
  tenantId: string | null;
  action: AuditAction;
  targetType: string;
  targetId: string;
  changes: AuditChanges;
}

/**
 * Field names that never go into the trail, whatever table they come from:
 * passwords, hashes, tokens, raw keys and secrets.
 */
const SECRET_FIELD = /(password|hash|token|secret|authorization|cookie|^key$|apikey|rawkey)/i;

export function isSecretField(name: string): boolean {
  return SECRET_FIELD.test(name);
}

/**
 * The fields that differ between `before` and `after` (null for a row that
 * did not exist, or no longer does), each with its two values; secret-like
 * fields and the bookkeeping timestamps are left out. With
 * `fields`, only those are compared.
 */
export function fieldChanges(
  beforeRow: object | null | undefined,
  afterRow: object | null | undefined,
  fields?: readonly string[],
): AuditChanges {
  const before = beforeRow as Record<string, unknown> | null | undefined;
  const after = afterRow as Record<string, unknown> | null | undefined;
  const names = fields ?? [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])];
  const changes: AuditChanges = {};
  for (const name of names) {
    if (isSecretField(name) || name === "updatedAt" || name === "createdAt") continue;
    const was = before ? before[name] : undefined;
    const now = after ? after[name] : undefined;
    if (JSON.stringify(was) === JSON.stringify(now)) continue;
    const change: { before?: unknown; after?: unknown } = {};
    if (before && name in before) change.before = was ?? null;
    if (after && name in after) change.after = now ?? null;
    changes[name] = change;
  }
  return changes;
}

/** A single state change, e.g. `status` OPEN -> VOID, with anything else worth keeping. */
export function statusChange(
  before: string | null,
  after: string,
  extra: AuditChanges = {},
): AuditChanges {
  return { status: { before, after }, ...extra };
}
