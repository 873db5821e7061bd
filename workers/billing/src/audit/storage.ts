import type { Database } from "@edge-platform/shared/db/client";
import { auditEvents } from "@edge-platform/shared/db/schema/audit";
import { and, count, desc, eq, gte, lte, type SQL, sql } from "drizzle-orm";
import type { AuditContext, AuditRecord } from "./domain/audit.ts";

export type AuditEventRow = typeof auditEvents.$inferSelect;

function auditRow(context: AuditContext, record: AuditRecord, now: Date) {
  return {
    id: crypto.randomUUID(),
    tenantId: record.tenantId,
    actorType: context.actor.type,
    actorId: context.actor.id,
    action: record.action,
    targetType: record.targetType,
    targetId: record.targetId,
    changes: record.changes,
    correlationId: context.correlationId,
    createdAt: now.toISOString(),
  };
}

/**
 * The audit row of a change, to put in the SAME `db.batch` as the change:
 * both commit or neither does. With `when`, the row is written only if the
 * condition holds at that point of the batch (e.g. `ROW_CHANGED` right
 * after a guarded UPDATE), so a write that matched nothing leaves no record.
 */
export function auditEntry(
  db: Database,
  context: AuditContext,
  record: AuditRecord,
  when?: SQL,
  now: Date = new Date(),
) {
  const row = auditRow(context, record, now);
  if (!when) return db.insert(auditEvents).values(row);
  // Values in the table's column order (drizzle lists every column for INSERT ... SELECT).
  return db.insert(auditEvents).select(
    sql`SELECT ${row.id}, ${row.tenantId}, ${row.actorType}, ${row.actorId}, ${row.action},
      ${row.targetType}, ${row.targetId}, ${JSON.stringify(row.changes)}, ${row.correlationId},
      ${row.createdAt} WHERE ${when}`,
  );
}

/**
 * True right after a statement of the batch that changed at least one row
 * (SQLite's `changes()` is the count of the statement just before, on the
 * batch's one connection).
 */
export const ROW_CHANGED = sql`changes() > 0`;

/** A condition for `auditStatement`: SQL with `?` placeholders and their values. */
export interface RawCondition {
  sql: string;
  params: unknown[];
}

/**
 * `auditEntry` for services that batch raw D1 statements. With `when`, the
 * row is written only if the condition holds at that point of the batch
 * (the state the change was meant to reach, e.g. `whenInvoiceReached`).
 */
export function auditStatement(
  d1: D1Database,
  context: AuditContext,
  record: AuditRecord,
  options: { when?: RawCondition; now?: Date } = {},
): D1PreparedStatement {
  const row = auditRow(context, record, options.now ?? new Date());
  return d1
    .prepare(
      `INSERT INTO audit_events
         (id, tenant_id, actor_type, actor_id, action, target_type, target_id, changes, correlation_id, created_at)
       SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
       WHERE ${options.when?.sql ?? "1"}`,
    )
    .bind(
      row.id,
      row.tenantId,
      row.actorType,
      row.actorId,
      row.action,
      row.targetType,
      row.targetId,
      JSON.stringify(row.changes),
      row.correlationId,
      row.createdAt,
      ...(options.when?.params ?? []),
    );
}

/** The invoice reached `status` in this batch: its timestamp column holds this batch's `at`. */
export function whenInvoiceReached(
  invoiceId: string,
  status: "OPEN" | "VOID" | "PAID",
  at: string,
): RawCondition {
  const stamp = { OPEN: "finalized_at", VOID: "voided_at", PAID: "paid_at" }[status];
  return {
    sql: `EXISTS (SELECT 1 FROM invoices WHERE id = ? AND status = ? AND ${stamp} = ?)`,
    params: [invoiceId, status, at],
  };
}

export interface AuditFilter {
  /** undefined: every tenant (platform administrators only). */
  tenantId?: string | undefined;
  action?: string | undefined;
  targetId?: string | undefined;
  actorId?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
}

export async function listAuditEvents(
  db: Database,
  filter: AuditFilter,
  offset: number,
  limit: number,
) {
  const where = and(
    filter.tenantId !== undefined ? eq(auditEvents.tenantId, filter.tenantId) : undefined,
    filter.action !== undefined ? eq(auditEvents.action, filter.action) : undefined,
    filter.targetId !== undefined ? eq(auditEvents.targetId, filter.targetId) : undefined,
    filter.actorId !== undefined ? eq(auditEvents.actorId, filter.actorId) : undefined,
    filter.from !== undefined ? gte(auditEvents.createdAt, filter.from) : undefined,
    filter.to !== undefined ? lte(auditEvents.createdAt, filter.to) : undefined,
  );
  const [rows, totals] = await db.batch([
    db
      .select()
      .from(auditEvents)
      .where(where)
      .orderBy(desc(auditEvents.createdAt), desc(auditEvents.id))
      .limit(limit)
      .offset(offset),
    db.select({ total: count() }).from(auditEvents).where(where),
  ]);
  return { rows, total: totals[0]?.total ?? 0 };
}
