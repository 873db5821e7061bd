import { expect } from "vitest";
import { type Account, call, db, type Json } from "./helpers.ts";

// Reading the audit trail in tests: straight from D1 (what was written, and
// in which batch), and through GET /api/v1/audit-events (what callers see).

export interface AuditRow {
  id: string;
  tenant_id: string | null;
  actor_type: string;
  actor_id: string | null;
  action: string;
  target_type: string;
  target_id: string;
  changes: string;
  correlation_id: string | null;
  created_at: string;
}

export async function auditRowsFor(targetId: string, action?: string): Promise<AuditRow[]> {
  const rows = await db()
    .prepare(
      `SELECT * FROM audit_events WHERE target_id = ? ${action ? "AND action = ?" : ""}
       ORDER BY created_at, rowid`,
    )
    .bind(...(action ? [targetId, action] : [targetId]))
    .all<AuditRow>();
  return rows.results;
}

/** Exactly one row for the action on the target, with its changes parsed. */
export async function onlyAuditRow(targetId: string, action: string) {
  const rows = await auditRowsFor(targetId, action);
  expect(rows, `${action} on ${targetId}`).toHaveLength(1);
  const row = rows[0] as AuditRow;
  return { ...row, changes: JSON.parse(row.changes) as Json };
}

/** Makes the next insert of an audit row for `targetId` fail, to see the whole batch roll back. */
export async function failAuditFor(targetId: string): Promise<() => Promise<void>> {
  const name = `fail_audit_${targetId.replace(/[^a-zA-Z0-9]/g, "_")}`;
  await db()
    .prepare(
      `CREATE TRIGGER ${name} BEFORE INSERT ON audit_events
       WHEN NEW.target_id = '${targetId.replaceAll("'", "''")}'
       BEGIN SELECT RAISE(ABORT, 'audit insert refused by test'); END`,
    )
    .run();
  return async () => {
    await db().prepare(`DROP TRIGGER ${name}`).run();
  };
}

export function listAudit(account: Account, query = "", tenant?: string) {
  return call(`/api/v1/audit-events${query}`, {
    token: account.accessToken,
    ...(tenant ? { tenant } : {}),
  });
}
