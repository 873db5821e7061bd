import type { Database } from "@edge-platform/shared/db/client";
import { type PageRequest, pageMeta, pageOffset } from "../platform/index.ts";
import { type AuditEventRow, type AuditFilter, listAuditEvents } from "./storage.ts";

export type AuditQuery = PageRequest & Omit<AuditFilter, "tenantId">;

export class AuditEventService {
  constructor(private readonly db: Database) {}

  /** Newest first; `tenantId` null lists every tenant's events and the platform's own. */
  async list(scope: { tenantId: string | null }, query: AuditQuery) {
    const { page, limit, ...filters } = query;
    const { rows, total } = await listAuditEvents(
      this.db,
      { ...filters, tenantId: scope.tenantId ?? undefined },
      pageOffset({ page, limit }),
      limit,
    );
    return { data: rows.map(auditEventView), meta: pageMeta({ page, limit }, total) };
  }
}

export function auditEventView(row: AuditEventRow) {
  return {
    id: row.id,
    tenantId: row.tenantId,
    actorType: row.actorType,
    actorId: row.actorId,
    action: row.action,
    targetType: row.targetType,
    targetId: row.targetId,
    changes: row.changes,
    correlationId: row.correlationId,
    createdAt: row.createdAt,
  };
}
