import type { Database } from "@edge-platform/shared/db/client";
import { invoices, ledgerEntries } from "@edge-platform/shared/db/schema/billing";
import { and, eq } from "drizzle-orm";
import type { RawCondition } from "../audit/index.ts";
import { INSERT_LEDGER_FROM_INVOICE } from "./ledger-storage.ts";

export type InvoiceRow = typeof invoices.$inferSelect;

export function findInvoiceById(db: Database, id: string) {
  return db.select().from(invoices).where(eq(invoices.id, id)).get();
}

/** The provider reference of the PAYMENT that paid an invoice (null: paid outside the provider). */
export async function paymentReferenceOf(db: Database, invoiceId: string) {
  const row = await db
    .select({ reference: ledgerEntries.externalReference })
    .from(ledgerEntries)
    .where(and(eq(ledgerEntries.invoiceId, invoiceId), eq(ledgerEntries.type, "PAYMENT")))
    .get();
  return row?.reference ?? null;
}

/**
 * Money the provider collected for an invoice that did not need it (VOID,
 * or already PAID by another payment): a CREDIT with the provider
 * reference (once per provider payment), which is the tenant's credit
 * balance until a later invoice applies it; the attempt is SUCCEEDED.
 */
export function receivedCreditStatements(
  d1: D1Database,
  credit: {
    tenantId: string;
    invoiceId: string;
    attemptId: string;
    amount: number;
    currency: string;
    reference: string;
    description: string;
    providerResponse?: unknown;
  },
  now: Date,
) {
  const at = now.toISOString();
  return [
    d1
      .prepare(
        `INSERT INTO ledger_entries (id, tenant_id, invoice_id, type, description, debit, credit, currency, external_reference, created_at)
         VALUES (?1, ?2, ?3, 'CREDIT', ?4, 0, ?5, ?6, ?7, ?8)
         ON CONFLICT DO NOTHING`,
      )
      .bind(
        crypto.randomUUID(),
        credit.tenantId,
        credit.invoiceId,
        credit.description,
        credit.amount,
        credit.currency,
        credit.reference,
        at,
      ),
    d1
      .prepare(
        `UPDATE payment_attempts SET status = 'SUCCEEDED', failure_reason = NULL, next_retry_at = NULL,
           provider_response = coalesce(?3, provider_response), updated_at = ?2
         WHERE id = ?1 AND status <> 'SUCCEEDED'`,
      )
      .bind(
        credit.attemptId,
        at,
        credit.providerResponse === undefined ? null : JSON.stringify(credit.providerResponse),
      ),
  ];
}

/**
 * OPEN or UNCOLLECTIBLE -> PAID with its PAYMENT, the attempt that paid it
 * (if any) SUCCEEDED, other scheduled retries dropped, and PAST_DUE cleared
 * on the subscription when no other exhausted invoice keeps it there.
 * `onlyIf` is a further condition of the transition (a credit note that
 * lowered the amount due to zero must have been written).
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
  onlyIf: RawCondition = { sql: "1", params: [] },
) {
  const at = now.toISOString();
  const statements = [
    d1
      .prepare(
        `UPDATE invoices SET status = 'PAID', paid_at = ?, updated_at = ?
         WHERE id = ? AND status IN ('OPEN', 'UNCOLLECTIBLE') AND ${onlyIf.sql}`,
      )
      .bind(at, at, invoiceId, ...onlyIf.params),
    d1
      .prepare(
        INSERT_LEDGER_FROM_INVOICE(
          "PAYMENT",
          "0",
          // What was due: REDUCE credit notes took the rest off.
          "total - reduced_total",
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
    // A paid TOP_UP invoice makes its credit grant usable.
    d1
      .prepare(
        `UPDATE credit_grants SET status = 'ACTIVE', updated_at = ?2
         WHERE invoice_id = ?1 AND status = 'PENDING'
           AND EXISTS (SELECT 1 FROM invoices WHERE id = ?1 AND status = 'PAID')`,
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
