import type { Database } from "@edge-platform/shared/db/client";
import {
  type CreditNoteSettlement,
  creditNoteLines,
  creditNotes,
  type InvoiceKind,
  type InvoiceStatus,
  invoices,
  type LineItemKind,
} from "@edge-platform/shared/db/schema/billing";
import { and, asc, count, desc, eq, inArray } from "drizzle-orm";
import type { CreditableInvoice, PlannedCreditNote } from "./domain/credit-note.ts";

export type CreditNoteRow = typeof creditNotes.$inferSelect;
export type CreditNoteLineRow = typeof creditNoteLines.$inferSelect;

/**
 * Money refunded on the payment that paid an invoice so far, or promised by
 * REFUND notes still waiting: SQL over `inv`. Refunds of what other
 * payments put on the credit balance (`credit-refund:<payment>:`) are not
 * the paying payment's.
 */
const REFUNDED_SQL = `(
  (SELECT coalesce(sum(debit), 0) FROM ledger_entries
    WHERE invoice_id = inv.id AND type = 'REFUND'
      AND (coalesce(external_reference, '') NOT LIKE 'credit-refund%'
           OR external_reference LIKE 'credit-refund:note:%'
           OR external_reference LIKE 'credit-refund-owed:note:%'))
  + (SELECT coalesce(sum(total), 0) FROM credit_notes
    WHERE invoice_id = inv.id AND settlement = 'REFUND' AND refund_status = 'PENDING'))`;
/** Refunds the provider made on an invoice outside its credit notes, owed again: SQL over `inv`. */
const REFUNDED_OUTSIDE_NOTES_SQL = `(SELECT coalesce(sum(debit), 0) FROM ledger_entries
  WHERE invoice_id = inv.id AND type = 'REFUND'
    AND (coalesce(external_reference, '') NOT LIKE 'credit-%' OR external_reference LIKE 'credit-refund-owed:note:%'))`;
const PAID_SQL = `(SELECT coalesce(sum(credit), 0) FROM ledger_entries WHERE invoice_id = inv.id AND type = 'PAYMENT')`;
const IN_FLIGHT_SQL = `EXISTS (SELECT 1 FROM payment_attempts
  WHERE invoice_id = inv.id AND status IN ('PENDING', 'REQUIRES_ACTION'))`;

interface InvoiceReadRow {
  id: string;
  tenant_id: string;
  currency: string;
  status: InvoiceStatus;
  kind: InvoiceKind;
  invoice_number: string | null;
  subtotal: number;
  discount: number;
  tax: number;
  total: number;
  credited_total: number;
  reduced_total: number;
  tax_credited: number;
  paid: number;
  payment_reference: string | null;
  refunded: number;
  refunded_outside_notes: number;
  in_flight: number;
}

/** The invoice of the tenant as the credit-note rules read it (null: no such invoice). */
export async function readCreditableInvoice(
  d1: D1Database,
  tenantId: string,
  invoiceId: string,
): Promise<(CreditableInvoice & { id: string; tenantId: string; currency: string }) | null> {
  const [invoiceRows, lineRows] = await d1.batch([
    d1
      .prepare(
        `SELECT inv.id, inv.tenant_id, inv.currency, inv.status, inv.kind, inv.invoice_number,
                inv.subtotal, inv.discount, inv.tax, inv.total, inv.credited_total, inv.reduced_total,
                (SELECT coalesce(sum(tax), 0) FROM credit_notes WHERE invoice_id = inv.id) AS tax_credited,
                ${PAID_SQL} AS paid,
                (SELECT external_reference FROM ledger_entries WHERE invoice_id = inv.id AND type = 'PAYMENT') AS payment_reference,
                ${REFUNDED_SQL} AS refunded,
                ${REFUNDED_OUTSIDE_NOTES_SQL} AS refunded_outside_notes,
                ${IN_FLIGHT_SQL} AS in_flight
         FROM invoices inv WHERE inv.id = ?1 AND inv.tenant_id = ?2`,
      )
      .bind(invoiceId, tenantId),
    d1
      .prepare(
        `SELECT li.id, li.kind, li.description, li.amount,
                (SELECT coalesce(sum(amount), 0) FROM credit_note_lines WHERE invoice_line_item_id = li.id) AS credited
         FROM invoice_line_items li JOIN invoices inv ON inv.id = li.invoice_id
         WHERE li.invoice_id = ?1 AND inv.tenant_id = ?2 ORDER BY li.sort_order`,
      )
      .bind(invoiceId, tenantId),
  ]);
  const row = invoiceRows?.results[0] as InvoiceReadRow | undefined;
  if (!row) return null;
  return {
    id: row.id,
    tenantId: row.tenant_id,
    currency: row.currency,
    status: row.status,
    kind: row.kind,
    invoiceNumber: row.invoice_number,
    subtotal: Number(row.subtotal),
    discount: Number(row.discount),
    tax: Number(row.tax),
    total: Number(row.total),
    creditedTotal: Number(row.credited_total),
    reducedTotal: Number(row.reduced_total),
    taxCredited: Number(row.tax_credited),
    paid: Number(row.paid),
    paymentReference: row.payment_reference,
    refunded: Number(row.refunded),
    refundedOutsideNotes: Number(row.refunded_outside_notes),
    paymentInFlight: Number(row.in_flight) === 1,
    lines: (
      (lineRows?.results ?? []) as {
        id: string;
        kind: LineItemKind;
        description: string;
        amount: number;
        credited: number;
      }[]
    ).map((line) => ({ ...line, amount: Number(line.amount), credited: Number(line.credited) })),
  };
}

export interface NewCreditNote {
  id: string;
  tenantId: string;
  invoiceId: string;
  reason: string;
  settlement: CreditNoteSettlement;
  memo: string | null;
  note: PlannedCreditNote;
  now: Date;
}

/** Where each settlement may be written (the domain's rule, repeated as the insert's condition). */
const SETTLEMENT_STATUS_SQL: Record<CreditNoteSettlement, string> = {
  REDUCE: `inv.status = 'OPEN' AND NOT ${IN_FLIGHT_SQL}`,
  REFUND: `inv.status = 'PAID'`,
  CREDIT: `inv.status IN ('OPEN', 'PAID')`,
};

/** The SQL a note is written under, with its parameters: every bound of the domain's plan, re-checked. */
function insertConditions(note: NewCreditNote) {
  const conditions = [
    "inv.id = ? AND inv.tenant_id = ?",
    SETTLEMENT_STATUS_SQL[note.settlement],
    `inv.credited_total + ? + ${REFUNDED_OUTSIDE_NOTES_SQL} <= inv.total`,
    "? + (SELECT coalesce(sum(tax), 0) FROM credit_notes WHERE invoice_id = inv.id) <= inv.tax",
  ];
  const params: unknown[] = [note.invoiceId, note.tenantId, note.note.total, note.note.tax];
  if (note.settlement === "REFUND") {
    conditions.push(`? <= ${PAID_SQL} - ${REFUNDED_SQL}`);
    params.push(note.note.total);
  }
  for (const line of note.note.lines) {
    conditions.push(
      `? + (SELECT coalesce(sum(amount), 0) FROM credit_note_lines WHERE invoice_line_item_id = ?)
         <= (SELECT amount FROM invoice_line_items WHERE id = ? AND invoice_id = inv.id)`,
    );
    params.push(line.amount, line.lineItemId, line.lineItemId);
  }
  return { sql: conditions.join("\n AND "), params };
}

/**
 * The note, its number and lines, the invoice's credited (and, for REDUCE,
 * reduced) totals and the CREDIT_NOTE ledger entry, in the order one batch
 * runs them. The first statement writes the note only while every bound
 * holds; the others run only when it did (WHERE EXISTS the note). The number
 * is the year's sequence + 1 read inside the same transaction, then the
 * sequence moves: no gaps, no duplicates, however many notes race.
 */
export function creditNoteStatements(d1: D1Database, note: NewCreditNote): D1PreparedStatement[] {
  const at = note.now.toISOString();
  const year = note.now.getUTCFullYear();
  const written = "EXISTS (SELECT 1 FROM credit_notes WHERE id = ?)";
  const { sql, params } = insertConditions(note);
  const { subtotal, tax, total } = note.note;
  return [
    d1
      .prepare(
        `INSERT INTO credit_notes
           (id, tenant_id, invoice_id, credit_note_number, reason, settlement, currency,
            subtotal, tax, total, memo, refund_status, created_at, updated_at)
         SELECT ?, inv.tenant_id, inv.id,
                printf('CN-%d-%06d', ?, coalesce((SELECT last_value FROM credit_note_sequences WHERE year = ?), 0) + 1),
                ?, ?, inv.currency, ?, ?, ?, ?, ?, ?, ?
         FROM invoices inv WHERE ${sql}`,
      )
      .bind(
        note.id,
        year,
        year,
        note.reason,
        note.settlement,
        subtotal,
        tax,
        total,
        note.memo,
        note.settlement === "REFUND" ? "PENDING" : null,
        at,
        at,
        ...params,
      ),
    d1
      .prepare(
        `INSERT INTO credit_note_sequences (year, last_value) SELECT ?, 1 WHERE ${written}
         ON CONFLICT (year) DO UPDATE SET last_value = last_value + 1`,
      )
      .bind(year, note.id),
    ...note.note.lines.map((line, index) =>
      d1
        .prepare(
          `INSERT INTO credit_note_lines (id, credit_note_id, invoice_line_item_id, description, amount, sort_order)
           SELECT ?, ?, ?, ?, ?, ? WHERE ${written}`,
        )
        .bind(
          crypto.randomUUID(),
          note.id,
          line.lineItemId,
          line.description,
          line.amount,
          index,
          note.id,
        ),
    ),
    d1
      .prepare(
        `UPDATE invoices SET credited_total = credited_total + ?, reduced_total = reduced_total + ?, updated_at = ?
         WHERE id = ? AND ${written}`,
      )
      .bind(total, note.settlement === "REDUCE" ? total : 0, at, note.invoiceId, note.id),
    d1
      .prepare(
        `INSERT INTO ledger_entries (id, tenant_id, invoice_id, type, description, debit, credit, currency, external_reference, created_at)
         SELECT ?, cn.tenant_id, cn.invoice_id, 'CREDIT_NOTE',
                'Credit note ' || cn.credit_note_number || ' (' || lower(cn.settlement) || ') on invoice ' || inv.invoice_number,
                0, cn.total, cn.currency, 'credit-note:' || cn.id, ?
         FROM credit_notes cn JOIN invoices inv ON inv.id = cn.invoice_id WHERE cn.id = ?`,
      )
      .bind(crypto.randomUUID(), at, note.id),
  ];
}

/** REFUND notes whose refund never reached the provider (an outage): asked again by the scheduled run. */
export async function unsentRefunds(d1: D1Database, limit: number) {
  const { results } = await d1
    .prepare(
      `SELECT cn.id, cn.tenant_id FROM credit_notes cn
       WHERE cn.settlement = 'REFUND' AND cn.refund_status = 'PENDING' AND cn.refund_reference IS NULL
       ORDER BY cn.created_at LIMIT ?`,
    )
    .bind(limit)
    .all<{ id: string; tenant_id: string }>();
  return results;
}

export async function hasRefundReference(d1: D1Database, reference: string): Promise<boolean> {
  const row = await d1
    .prepare("SELECT 1 AS found FROM credit_notes WHERE refund_reference = ? LIMIT 1")
    .bind(reference)
    .first<{ found: number }>();
  return row !== null;
}

export function findCreditNote(db: Database, tenantId: string, id: string) {
  return db
    .select()
    .from(creditNotes)
    .where(and(eq(creditNotes.id, id), eq(creditNotes.tenantId, tenantId)))
    .get();
}

export function findCreditNoteById(db: Database, id: string) {
  return db.select().from(creditNotes).where(eq(creditNotes.id, id)).get();
}

export async function invoiceNumberOf(db: Database, invoiceId: string): Promise<string | null> {
  const row = await db
    .select({ number: invoices.invoiceNumber })
    .from(invoices)
    .where(eq(invoices.id, invoiceId))
    .get();
  return row?.number ?? null;
}

export function linesOf(db: Database, creditNoteIds: string[]) {
  if (creditNoteIds.length === 0) return Promise.resolve([] as CreditNoteLineRow[]);
  return db
    .select()
    .from(creditNoteLines)
    .where(inArray(creditNoteLines.creditNoteId, creditNoteIds))
    .orderBy(asc(creditNoteLines.creditNoteId), asc(creditNoteLines.sortOrder))
    .all();
}

export async function listCreditNotes(
  db: Database,
  tenantId: string,
  filter: { invoiceId?: string | undefined },
  offset: number,
  limit: number,
) {
  const where = and(
    eq(creditNotes.tenantId, tenantId),
    filter.invoiceId ? eq(creditNotes.invoiceId, filter.invoiceId) : undefined,
  );
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(creditNotes)
      .where(where)
      .orderBy(desc(creditNotes.createdAt), desc(creditNotes.creditNoteNumber))
      .limit(limit)
      .offset(offset)
      .all(),
    db.select({ total: count() }).from(creditNotes).where(where).all(),
  ]);
  return { rows, total: totals[0]?.total ?? 0 };
}
