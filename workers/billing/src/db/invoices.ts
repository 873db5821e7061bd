import type { Database } from "@edge-platform/shared/db/client";
import {
  type InvoiceKind,
  type InvoiceStatus,
  invoiceLineItems,
  invoices,
} from "@edge-platform/shared/db/schema/billing";
import { usageAggregates } from "@edge-platform/shared/db/schema/usage-aggregates";
import { and, asc, count, desc, eq, gte, inArray, lt, ne, sql } from "drizzle-orm";
import type { InvoiceDraft, InvoiceLineDraft, UsageWindowReading } from "../domain/invoice.ts";

export type InvoiceRow = typeof invoices.$inferSelect;
export type InvoiceLineRow = typeof invoiceLineItems.$inferSelect;

export function findInvoice(db: Database, tenantId: string, id: string) {
  return db
    .select()
    .from(invoices)
    .where(and(eq(invoices.id, id), eq(invoices.tenantId, tenantId)))
    .get();
}

export function findInvoiceById(db: Database, id: string) {
  return db.select().from(invoices).where(eq(invoices.id, id)).get();
}

export function findInvoiceForPeriod(
  db: Database,
  subscriptionId: string,
  periodStart: string,
  kind: InvoiceKind,
) {
  return db
    .select()
    .from(invoices)
    .where(
      and(
        eq(invoices.subscriptionId, subscriptionId),
        eq(invoices.periodStart, periodStart),
        eq(invoices.kind, kind),
      ),
    )
    .get();
}

export async function listInvoices(
  db: Database,
  tenantId: string,
  filter: { status?: InvoiceStatus | undefined },
  offset: number,
  limit: number,
) {
  const where = and(
    eq(invoices.tenantId, tenantId),
    filter.status ? eq(invoices.status, filter.status) : undefined,
  );
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(invoices)
      .where(where)
      .orderBy(desc(invoices.createdAt), desc(invoices.periodStart), desc(invoices.id))
      .limit(limit)
      .offset(offset)
      .all(),
    db.select({ total: count() }).from(invoices).where(where).all(),
  ]);
  return { rows, total: totals[0]?.total ?? 0 };
}

export function listLineItems(db: Database, invoiceIds: string[]) {
  if (invoiceIds.length === 0) return Promise.resolve([] as InvoiceLineRow[]);
  return db
    .select()
    .from(invoiceLineItems)
    .where(inArray(invoiceLineItems.invoiceId, invoiceIds))
    .orderBy(asc(invoiceLineItems.invoiceId), asc(invoiceLineItems.sortOrder))
    .all();
}

/**
 * Usage windows of a subscription that started inside [billableFrom,
 * before), with the overage units other invoices already billed of each.
 */
export async function readUsageWindows(
  db: Database,
  subscriptionId: string,
  billableFrom: string,
  before: string,
  excludeInvoiceId: string | null,
): Promise<UsageWindowReading[]> {
  const [windows, billed] = await Promise.all([
    db
      .select({
        featureLookupKey: usageAggregates.featureLookupKey,
        windowKey: usageAggregates.periodKey,
        windowStart: usageAggregates.periodStart,
        used: usageAggregates.amount,
      })
      .from(usageAggregates)
      .where(
        and(
          eq(usageAggregates.subscriptionId, subscriptionId),
          gte(usageAggregates.periodStart, billableFrom),
          lt(usageAggregates.periodStart, before),
        ),
      )
      .all(),
    db
      .select({
        featureLookupKey: invoiceLineItems.featureLookupKey,
        windowKey: invoiceLineItems.usageWindowKey,
        quantity: sql<number>`sum(${invoiceLineItems.quantity})`,
      })
      .from(invoiceLineItems)
      .innerJoin(invoices, eq(invoices.id, invoiceLineItems.invoiceId))
      .where(
        and(
          eq(invoices.subscriptionId, subscriptionId),
          eq(invoiceLineItems.kind, "USAGE"),
          excludeInvoiceId ? ne(invoices.id, excludeInvoiceId) : undefined,
        ),
      )
      .groupBy(invoiceLineItems.featureLookupKey, invoiceLineItems.usageWindowKey)
      .all(),
  ]);
  const billedByWindow = new Map(
    billed.map((row) => [`${row.featureLookupKey}\u0000${row.windowKey}`, Number(row.quantity)]),
  );
  return windows.map((window) => ({
    featureLookupKey: window.featureLookupKey,
    windowKey: window.windowKey,
    windowStart: new Date(window.windowStart),
    used: window.used,
    alreadyBilled: billedByWindow.get(`${window.featureLookupKey}\u0000${window.windowKey}`) ?? 0,
  }));
}

// --- writes: raw statements, because every one of them is conditional ------

const INSERT_LINE_IF_DRAFT = `
INSERT INTO invoice_line_items
  (id, invoice_id, kind, description, feature_lookup_key, usage_window_key, quantity, unit_price_micro_cents, amount, sort_order, created_at)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11
WHERE EXISTS (SELECT 1 FROM invoices WHERE id = ?2 AND status = 'DRAFT')`;

function lineStatements(d1: D1Database, invoiceId: string, lines: InvoiceLineDraft[], now: string) {
  return lines.map((line) =>
    d1
      .prepare(INSERT_LINE_IF_DRAFT)
      .bind(
        crypto.randomUUID(),
        invoiceId,
        line.kind,
        line.description,
        line.featureLookupKey,
        line.usageWindowKey,
        line.quantity,
        line.unitPriceMicroCents,
        line.amount,
        line.sortOrder,
        now,
      ),
  );
}

/**
 * Inserts a DRAFT invoice and its lines in one batch, unless the
 * (subscription, period start, kind) slot is taken. Returns whether this
 * call created it.
 */
export async function insertDraftInvoice(
  d1: D1Database,
  invoice: { id: string; tenantId: string; subscriptionId: string },
  draft: InvoiceDraft,
  now: string,
): Promise<boolean> {
  const results = await d1.batch([
    d1
      .prepare(
        `INSERT INTO invoices
           (id, tenant_id, subscription_id, kind, status, currency, subtotal, total, period_start, period_end, notes, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, 'DRAFT', ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11)
         ON CONFLICT (subscription_id, period_start, kind) DO NOTHING`,
      )
      .bind(
        invoice.id,
        invoice.tenantId,
        invoice.subscriptionId,
        draft.kind,
        draft.currency,
        draft.subtotal,
        draft.total,
        draft.periodStart.toISOString(),
        draft.periodEnd.toISOString(),
        draft.notes,
        now,
      ),
    ...lineStatements(d1, invoice.id, draft.lines, now),
  ]);
  return (results[0]?.meta.changes ?? 0) === 1;
}

/** Rebuilds a DRAFT's lines and totals (the period closed after a manual generate). */
export async function replaceDraftLines(
  d1: D1Database,
  invoiceId: string,
  draft: InvoiceDraft,
  now: string,
): Promise<boolean> {
  const results = await d1.batch([
    d1
      .prepare(
        `UPDATE invoices SET subtotal = ?2, total = ?3, period_end = ?4, notes = ?5, updated_at = ?6
         WHERE id = ?1 AND status = 'DRAFT'`,
      )
      .bind(
        invoiceId,
        draft.subtotal,
        draft.total,
        draft.periodEnd.toISOString(),
        draft.notes,
        now,
      ),
    d1
      .prepare(
        `DELETE FROM invoice_line_items WHERE invoice_id = ?1
           AND EXISTS (SELECT 1 FROM invoices WHERE id = ?1 AND status = 'DRAFT')`,
      )
      .bind(invoiceId),
    ...lineStatements(d1, invoiceId, draft.lines, now),
  ]);
  return (results[0]?.meta.changes ?? 0) === 1;
}

const INSERT_LEDGER_FROM_INVOICE = (
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

/**
 * DRAFT -> OPEN with its number and its CHARGE, as one batch. The sequence
 * only moves when the invoice is still a DRAFT, and the number is read back
 * from it inside the same transaction, so numbers have no gaps and no
 * duplicates however many finalizes race.
 */
export function finalizeStatements(d1: D1Database, invoiceId: string, now: Date, dueDate: Date) {
  const year = now.getUTCFullYear();
  const at = now.toISOString();
  return [
    d1
      .prepare(
        `INSERT INTO invoice_sequences (year, last_value)
         SELECT ?1, 1 WHERE EXISTS (SELECT 1 FROM invoices WHERE id = ?2 AND status = 'DRAFT')
         ON CONFLICT (year) DO UPDATE SET last_value = last_value + 1`,
      )
      .bind(year, invoiceId),
    d1
      .prepare(
        `UPDATE invoices SET
           status = 'OPEN',
           invoice_number = printf('INV-%d-%06d', ?2, (SELECT last_value FROM invoice_sequences WHERE year = ?2)),
           finalized_at = ?3, due_date = ?4, updated_at = ?3
         WHERE id = ?1 AND status = 'DRAFT'`,
      )
      .bind(invoiceId, year, at, dueDate.toISOString()),
    d1
      .prepare(
        INSERT_LEDGER_FROM_INVOICE(
          "CHARGE",
          "total",
          "0",
          "'Invoice ' || invoice_number || ' finalized'",
        ),
      )
      .bind(crypto.randomUUID(), invoiceId, null, at, "OPEN"),
  ];
}

/**
 * OPEN or UNCOLLECTIBLE -> PAID with its PAYMENT, the attempt that paid it
 * (if any) SUCCEEDED, other scheduled retries dropped, and PAST_DUE cleared
 * on the subscription when no other exhausted invoice keeps it there.
 */
export function payStatements(
  d1: D1Database,
  invoiceId: string,
  now: Date,
  payment: {
    attemptId: string | null;
    externalReference: string | null;
    providerResponse?: unknown;
  },
) {
  const at = now.toISOString();
  const statements = [
    d1
      .prepare(
        `UPDATE invoices SET status = 'PAID', paid_at = ?2, updated_at = ?2
         WHERE id = ?1 AND status IN ('OPEN', 'UNCOLLECTIBLE')`,
      )
      .bind(invoiceId, at),
    d1
      .prepare(
        INSERT_LEDGER_FROM_INVOICE(
          "PAYMENT",
          "0",
          "total",
          "'Payment received for invoice ' || invoice_number",
        ),
      )
      .bind(crypto.randomUUID(), invoiceId, payment.externalReference, at, "PAID"),
    d1
      .prepare(
        `UPDATE payment_attempts SET next_retry_at = NULL, updated_at = ?2
         WHERE invoice_id = ?1 AND next_retry_at IS NOT NULL
           AND EXISTS (SELECT 1 FROM invoices WHERE id = ?1 AND status = 'PAID')`,
      )
      .bind(invoiceId, at),
    d1
      .prepare(
        `UPDATE subscriptions SET status = 'ACTIVE', updated_at = ?2
         WHERE id = (SELECT subscription_id FROM invoices WHERE id = ?1 AND status = 'PAID')
           AND status = 'PAST_DUE'
           AND NOT EXISTS (
             SELECT 1 FROM invoices other
             WHERE other.subscription_id = subscriptions.id AND other.id <> ?1
               AND other.status = 'OPEN' AND other.dunning_exhausted_at IS NOT NULL)`,
      )
      .bind(invoiceId, at),
  ];
  if (payment.attemptId) {
    statements.push(
      d1
        .prepare(
          `UPDATE payment_attempts SET status = 'SUCCEEDED', failure_reason = NULL, next_retry_at = NULL,
             provider_response = coalesce(?3, provider_response), updated_at = ?2
           WHERE id = ?1 AND status <> 'SUCCEEDED'
             AND EXISTS (SELECT 1 FROM ledger_entries le JOIN payment_attempts pa ON pa.invoice_id = le.invoice_id
                         WHERE pa.id = ?1 AND le.type = 'PAYMENT')`,
        )
        .bind(
          payment.attemptId,
          at,
          payment.providerResponse === undefined ? null : JSON.stringify(payment.providerResponse),
        ),
    );
  }
  return statements;
}

/** -> VOID; a CREDIT reverses the CHARGE when there was one (OPEN or UNCOLLECTIBLE). */
export function voidStatements(d1: D1Database, invoiceId: string, now: Date) {
  const at = now.toISOString();
  return [
    d1
      .prepare(
        `UPDATE invoices SET status = 'VOID', voided_at = ?2, updated_at = ?2
         WHERE id = ?1 AND status IN ('DRAFT', 'OPEN', 'UNCOLLECTIBLE')`,
      )
      .bind(invoiceId, at),
    d1
      .prepare(
        `${INSERT_LEDGER_FROM_INVOICE(
          "CREDIT",
          "0",
          "total",
          "'Invoice ' || invoice_number || ' voided - charge reversed'",
        )}
         AND EXISTS (SELECT 1 FROM ledger_entries WHERE invoice_id = ?2 AND type = 'CHARGE')`,
      )
      .bind(crypto.randomUUID(), invoiceId, null, at, "VOID"),
    d1
      .prepare(
        `UPDATE payment_attempts SET next_retry_at = NULL, updated_at = ?2
         WHERE invoice_id = ?1 AND next_retry_at IS NOT NULL
           AND EXISTS (SELECT 1 FROM invoices WHERE id = ?1 AND status = 'VOID')`,
      )
      .bind(invoiceId, at),
  ];
}

/** Rows changed by the first statement of a transition batch (the conditional status update). */
export function transitioned(results: D1Result[], index = 0): boolean {
  return (results[index]?.meta.changes ?? 0) === 1;
}
