import type { Database } from "@edge-platform/shared/db/client";
import { type LedgerEntryType, ledgerEntries } from "@edge-platform/shared/db/schema/billing";
import { and, count, desc, eq, ne, sql } from "drizzle-orm";

export type LedgerEntryRow = typeof ledgerEntries.$inferSelect;

export async function listLedgerEntries(
  db: Database,
  tenantId: string,
  filter: { type?: LedgerEntryType | undefined; currency?: string | undefined },
  offset: number,
  limit: number,
) {
  const where = and(
    eq(ledgerEntries.tenantId, tenantId),
    filter.type ? eq(ledgerEntries.type, filter.type) : undefined,
    filter.currency ? eq(ledgerEntries.currency, filter.currency) : undefined,
  );
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(ledgerEntries)
      .where(where)
      // rowid breaks ties between entries written in the same batch (same instant).
      .orderBy(desc(ledgerEntries.createdAt), desc(sql`rowid`))
      .limit(limit)
      .offset(offset)
      .all(),
    db.select({ total: count() }).from(ledgerEntries).where(where).all(),
  ]);
  return { rows, total: totals[0]?.total ?? 0 };
}

/**
 * The tenant's credit balance in a currency, as SQL over two expressions
 * naming the tenant and the currency: money received that no invoice took
 * (a CREDIT with a provider or excess reference), CREDIT-settled credit
 * notes and REFUND notes whose refund failed, less what invoices applied
 * (ADJUSTMENT) and what was refunded out of the balance (a REFUND whose
 * reference starts `credit-refund:`).
 */
export const AVAILABLE_CREDIT_SQL = (tenant: string, currency: string) => `(
  (SELECT coalesce(sum(credit), 0) FROM ledger_entries
    WHERE tenant_id = ${tenant} AND currency = ${currency}
      AND type = 'CREDIT' AND external_reference IS NOT NULL)
  + (SELECT coalesce(sum(total), 0) FROM credit_notes
    WHERE tenant_id = ${tenant} AND currency = ${currency}
      AND (settlement = 'CREDIT' OR (settlement = 'REFUND' AND refund_status = 'FAILED')))
  - (SELECT coalesce(sum(debit), 0) FROM ledger_entries
    WHERE tenant_id = ${tenant} AND currency = ${currency}
      AND (type = 'ADJUSTMENT' OR (type = 'REFUND' AND external_reference LIKE 'credit-refund:%'))))`;

/** The tenant's credit balance in `currency` now (AVAILABLE_CREDIT_SQL). */
export async function availableCreditOf(
  d1: D1Database,
  tenantId: string,
  currency: string,
): Promise<number> {
  const row = await d1
    .prepare(`SELECT ${AVAILABLE_CREDIT_SQL("?1", "?2")} AS available`)
    .bind(tenantId, currency)
    .first<{ available: number | null }>();
  return Number(row?.available ?? 0);
}

/** Σdebit and Σcredit of the tenant's entries in one currency, summed by SQLite (64-bit integers). */
export async function ledgerTotals(
  db: Database,
  d1: D1Database,
  tenantId: string,
  currency: string,
) {
  const row = await db
    .select({
      debit: sql<number>`coalesce(sum(${ledgerEntries.debit}), 0)`,
      credit: sql<number>`coalesce(sum(${ledgerEntries.credit}), 0)`,
    })
    .from(ledgerEntries)
    .where(
      and(
        eq(ledgerEntries.tenantId, tenantId),
        eq(ledgerEntries.currency, currency),
        // Prepaid credit written off is not money owed.
        ne(ledgerEntries.type, "CREDIT_WRITE_OFF"),
      ),
    )
    .get();
  return {
    debit: Number(row?.debit ?? 0),
    credit: Number(row?.credit ?? 0),
    creditBalance: await availableCreditOf(d1, tenantId, currency),
  };
}

/** Currencies the tenant has entries in. */
export async function ledgerCurrencies(db: Database, tenantId: string): Promise<string[]> {
  const rows = await db
    .selectDistinct({ currency: ledgerEntries.currency })
    .from(ledgerEntries)
    .where(eq(ledgerEntries.tenantId, tenantId))
    .all();
  return rows.map((row) => row.currency).sort();
}

/** A REFUND: money returned on a paid invoice, at most up to what was paid, once per reference. */
export function refundStatement(
  d1: D1Database,
  refund: {
    invoiceId: string;
    amount: number;
    reference: string;
    description: string;
    now: string;
  },
) {
  return d1
    .prepare(
      `INSERT INTO ledger_entries (id, tenant_id, invoice_id, type, description, debit, credit, currency, external_reference, created_at)
       SELECT ?1, tenant_id, id, 'REFUND', ?3, ?4, 0, currency, ?5, ?6
       FROM invoices
       WHERE id = ?2 AND status = 'PAID' AND ?4 > 0
         AND ?4 + (SELECT coalesce(sum(debit), 0) FROM ledger_entries WHERE invoice_id = ?2 AND type = 'REFUND') <= total
       ON CONFLICT DO NOTHING`,
    )
    .bind(
      crypto.randomUUID(),
      refund.invoiceId,
      refund.description,
      refund.amount,
      refund.reference,
      refund.now,
    );
}

/**
 * A ledger entry written from an invoice's row in the same statement, at most
 * once per invoice and type, and only while the invoice has the expected
 * status: ?1 entry id, ?2 invoice id, ?3 external reference, ?4 time, ?5 status.
 */
export const INSERT_LEDGER_FROM_INVOICE = (
  type: string,
  debit: string,
  credit: string,
  description: string,
) => `
INSERT INTO ledger_entries (id, tenant_id, invoice_id, type, description, debit, credit, currency, external_reference, created_at)
SELECT ?1, tenant_id, id, '${type}', ${description}, ${debit}, ${credit}, currency, ?3, ?4
FROM invoices
WHERE id = ?2 AND status = ?5
  AND NOT EXISTS (SELECT 1 FROM ledger_entries WHERE invoice_id = ?2 AND type = '${type}')`;
