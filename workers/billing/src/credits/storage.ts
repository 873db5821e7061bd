import type { RawCondition } from "../audit/index.ts";
import { type StoredGrantStatus, takeBackReference } from "./domain/credits.ts";

// credit_grants: D1 is the record of every grant (its terms and status);
// the tenant's EntitlementCounter draws them and flushes what it drew to
// `drawn` and credit_draws (entitlements/counter/credit-balance.ts).

export interface CreditGrantRow {
  id: string;
  tenant_id: string;
  amount: number;
  drawn: number;
  written_off: number;
  currency: string;
  category: "promotional" | "paid";
  priority: number;
  expires_at: string | null;
  features: string | null;
  paid_amount: number | null;
  status: StoredGrantStatus;
  invoice_id: string | null;
  created_at: string;
  updated_at: string;
  ended_at: string | null;
}

export interface NewCreditGrant {
  id: string;
  tenantId: string;
  amount: number;
  currency: string;
  category: "promotional" | "paid";
  priority: number;
  expiresAt: string | null;
  features: string[] | null;
  paidAmount: number | null;
  status: StoredGrantStatus;
  invoiceId: string | null;
  /** Created by the tenant's automatic top-up rule. */
  autoTopUp?: boolean;
  now: string;
}

export function insertGrantStatement(d1: D1Database, grant: NewCreditGrant): D1PreparedStatement {
  return d1
    .prepare(
      `INSERT INTO credit_grants
         (id, tenant_id, amount, currency, category, priority, expires_at, features, paid_amount, status, invoice_id, created_at, updated_at, auto_top_up)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, ?13)`,
    )
    .bind(
      grant.id,
      grant.tenantId,
      grant.amount,
      grant.currency,
      grant.category,
      grant.priority,
      grant.expiresAt,
      grant.features ? JSON.stringify(grant.features) : null,
      grant.paidAmount,
      grant.status,
      grant.invoiceId,
      grant.now,
      grant.autoTopUp ? 1 : 0,
    );
}

export interface AutoTopUpRow {
  tenant_id: string;
  enabled: number;
  threshold: number;
  amount: number;
  disabled_reason: string | null;
  updated_at: string;
}

export function findAutoTopUp(d1: D1Database, tenantId: string) {
  return d1
    .prepare("SELECT * FROM credit_auto_top_ups WHERE tenant_id = ?1")
    .bind(tenantId)
    .first<AutoTopUpRow>();
}

export function upsertAutoTopUpStatement(
  d1: D1Database,
  tenantId: string,
  rule: { enabled: boolean; threshold: number; amount: number },
  now: Date,
): D1PreparedStatement {
  return d1
    .prepare(
      `INSERT INTO credit_auto_top_ups (tenant_id, enabled, threshold, amount, disabled_reason, updated_at)
       VALUES (?1, ?2, ?3, ?4, NULL, ?5)
       ON CONFLICT (tenant_id) DO UPDATE SET enabled = excluded.enabled, threshold = excluded.threshold,
         amount = excluded.amount, disabled_reason = NULL, updated_at = excluded.updated_at`,
    )
    .bind(tenantId, rule.enabled ? 1 : 0, rule.threshold, rule.amount, now.toISOString());
}

export function findGrant(d1: D1Database, tenantId: string, id: string) {
  return d1
    .prepare("SELECT * FROM credit_grants WHERE id = ?1 AND tenant_id = ?2")
    .bind(id, tenantId)
    .first<CreditGrantRow>();
}

export async function listGrants(
  d1: D1Database,
  tenantId: string,
  offset: number,
  limit: number,
): Promise<{ rows: CreditGrantRow[]; total: number }> {
  const [rows, total] = await d1.batch<CreditGrantRow | { total: number }>([
    d1
      .prepare(
        "SELECT * FROM credit_grants WHERE tenant_id = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2 OFFSET ?3",
      )
      .bind(tenantId, limit, offset),
    d1.prepare("SELECT count(*) AS total FROM credit_grants WHERE tenant_id = ?1").bind(tenantId),
  ]);
  return {
    rows: (rows?.results ?? []) as CreditGrantRow[],
    total: Number((total?.results[0] as { total: number } | undefined)?.total ?? 0),
  };
}

/** The tenant's grants that can still pay (or will, once paid). */
export async function liveGrants(d1: D1Database, tenantId: string): Promise<CreditGrantRow[]> {
  const { results } = await d1
    .prepare(
      `SELECT * FROM credit_grants WHERE tenant_id = ?1 AND status IN ('PENDING', 'ACTIVE')
        ORDER BY priority, coalesce(expires_at, '9999'), created_at, id`,
    )
    .bind(tenantId)
    .all<CreditGrantRow>();
  return results;
}

/** ACTIVE grants whose expiry has passed (the scheduled write-off's work list). */
export async function expiredActiveGrants(
  d1: D1Database,
  now: Date,
  limit: number,
): Promise<CreditGrantRow[]> {
  const { results } = await d1
    .prepare(
      `SELECT * FROM credit_grants WHERE status = 'ACTIVE' AND expires_at IS NOT NULL AND expires_at <= ?1
        ORDER BY expires_at LIMIT ?2`,
    )
    .bind(now.toISOString(), limit)
    .all<CreditGrantRow>();
  return results;
}

/**
 * ACTIVE -> `status` with the remainder written off: added to the grant's
 * `written_off` (which holds what was taken back before) and a
 * CREDIT_WRITE_OFF ledger entry of the same cents, in the caller's batch. Applies only while the grant is ACTIVE (or PENDING,
 * for a void before payment), so a repeat writes nothing.
 */
export function settleGrantStatements(
  d1: D1Database,
  grant: { id: string; tenantId: string; currency: string },
  status: "VOIDED" | "EXPIRED",
  writtenOff: number,
  now: Date,
): D1PreparedStatement[] {
  const at = now.toISOString();
  const what = status === "VOIDED" ? "voided" : "expired";
  return [
    d1
      .prepare(
        `UPDATE credit_grants SET status = ?2, written_off = written_off + ?3, ended_at = ?4, updated_at = ?4
          WHERE id = ?1 AND status IN ('ACTIVE', 'PENDING')`,
      )
      .bind(grant.id, status, writtenOff, at),
    d1
      .prepare(
        `INSERT INTO ledger_entries (id, tenant_id, invoice_id, type, description, debit, credit, currency, external_reference, created_at)
         SELECT ?1, ?2, NULL, 'CREDIT_WRITE_OFF', ?3, ?4, 0, ?5, 'credit-grant:' || ?6, ?7
          WHERE ?4 > 0 AND EXISTS (SELECT 1 FROM credit_grants WHERE id = ?6 AND status = ?8 AND ended_at = ?7)`,
      )
      .bind(
        crypto.randomUUID(),
        grant.tenantId,
        `Credit grant ${grant.id} ${what}: remainder written off`,
        writtenOff,
        grant.currency,
        grant.id,
        at,
        status,
      ),
  ];
}

/** Credits of a grant the tenant's counter set aside for a take-back (see takeBackStatements). */
export interface GrantTakeBack {
  reservationId: string;
  tenantId: string;
  grantId: string;
  /** The TOP_UP invoice that bought the grant. */
  invoiceId: string;
  currency: string;
  credits: number;
  /** The grant's unspent credits after these: 0 ends it. */
  remaining: number;
}

/**
 * The take-back in D1, for the caller's batch: `credits` more written off
 * (the grant VOIDED when nothing is left) and their CREDIT_WRITE_OFF entry,
 * named by the reservation (takeBackReference), each only `when` holds and
 * once. Answers the statements and the ledger entry's id.
 */
export function takeBackStatements(
  d1: D1Database,
  takeBack: GrantTakeBack,
  now: Date,
  when: RawCondition,
): { statements: D1PreparedStatement[]; ledgerId: string } {
  const at = now.toISOString();
  const reference = takeBackReference(takeBack.reservationId);
  const ends = takeBack.remaining === 0 ? 1 : 0;
  const once = `NOT EXISTS (SELECT 1 FROM ledger_entries
                 WHERE tenant_id = ? AND type = 'CREDIT_WRITE_OFF' AND external_reference = ?)`;
  const ledgerId = crypto.randomUUID();
  return {
    ledgerId,
    statements: [
      d1
        .prepare(
          `UPDATE credit_grants SET written_off = written_off + ?,
             status = CASE WHEN ? = 1 AND status = 'ACTIVE' THEN 'VOIDED' ELSE status END,
             ended_at = CASE WHEN ? = 1 AND status = 'ACTIVE' THEN ? ELSE ended_at END,
             updated_at = ?
           WHERE id = ? AND ${once} AND (${when.sql})`,
        )
        .bind(
          takeBack.credits,
          ends,
          ends,
          at,
          at,
          takeBack.grantId,
          takeBack.tenantId,
          reference,
          ...when.params,
        ),
      d1
        .prepare(
          `INSERT INTO ledger_entries (id, tenant_id, invoice_id, type, description, debit, credit, currency, external_reference, created_at)
           SELECT ?, ?, ?, 'CREDIT_WRITE_OFF', ?, ?, 0, ?, ?, ?
            WHERE ${once} AND (${when.sql})`,
        )
        .bind(
          ledgerId,
          takeBack.tenantId,
          takeBack.invoiceId,
          `Credit grant ${takeBack.grantId} taken back: refund`,
          takeBack.credits,
          takeBack.currency,
          reference,
          at,
          takeBack.tenantId,
          reference,
          ...when.params,
        ),
    ],
  };
}

/** The tenant's grant bought by this TOP_UP invoice. */
export function findGrantByInvoice(d1: D1Database, tenantId: string, invoiceId: string) {
  return d1
    .prepare("SELECT * FROM credit_grants WHERE tenant_id = ?1 AND invoice_id = ?2")
    .bind(tenantId, invoiceId)
    .first<CreditGrantRow>();
}
