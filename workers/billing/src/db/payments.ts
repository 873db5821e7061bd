import type { Database } from "@edge-platform/shared/db/client";
import {
  invoices,
  type PaymentAttemptStatus,
  paymentAttempts,
} from "@edge-platform/shared/db/schema/billing";
import { and, count, desc, eq } from "drizzle-orm";

export type PaymentAttemptRow = typeof paymentAttempts.$inferSelect;

const withInvoiceNumber = {
  attempt: paymentAttempts,
  invoiceNumber: invoices.invoiceNumber,
};

export async function listPaymentAttempts(
  db: Database,
  tenantId: string,
  filter: { status?: PaymentAttemptStatus | undefined },
  offset: number,
  limit: number,
) {
  const where = and(
    eq(paymentAttempts.tenantId, tenantId),
    filter.status ? eq(paymentAttempts.status, filter.status) : undefined,
  );
  const [rows, totals] = await Promise.all([
    db
      .select(withInvoiceNumber)
      .from(paymentAttempts)
      .innerJoin(invoices, eq(invoices.id, paymentAttempts.invoiceId))
      .where(where)
      .orderBy(desc(paymentAttempts.createdAt), desc(paymentAttempts.attemptNumber))
      .limit(limit)
      .offset(offset)
      .all(),
    db.select({ total: count() }).from(paymentAttempts).where(where).all(),
  ]);
  return { rows, total: totals[0]?.total ?? 0 };
}

export function findPaymentAttempt(db: Database, tenantId: string, id: string) {
  return db
    .select(withInvoiceNumber)
    .from(paymentAttempts)
    .innerJoin(invoices, eq(invoices.id, paymentAttempts.invoiceId))
    .where(and(eq(paymentAttempts.id, id), eq(paymentAttempts.tenantId, tenantId)))
    .get();
}

export function findAttemptByProviderId(db: Database, providerPaymentId: string) {
  return db
    .select()
    .from(paymentAttempts)
    .where(eq(paymentAttempts.providerPaymentId, providerPaymentId))
    .get();
}

export function findAttempt(db: Database, invoiceId: string, attemptNumber: number) {
  return db
    .select()
    .from(paymentAttempts)
    .where(
      and(
        eq(paymentAttempts.invoiceId, invoiceId),
        eq(paymentAttempts.attemptNumber, attemptNumber),
      ),
    )
    .get();
}

/** Attempt `attemptNumber` of an OPEN invoice, created once whatever runs concurrently. */
export function insertAttemptStatement(
  d1: D1Database,
  attempt: {
    id: string;
    invoiceId: string;
    attemptNumber: number;
    provider: string;
    retryOf: string | null;
    now: string;
  },
) {
  return d1
    .prepare(
      `INSERT INTO payment_attempts
         (id, invoice_id, tenant_id, provider, status, amount, currency, attempt_number, retry_of, created_at, updated_at)
       SELECT ?1, id, tenant_id, ?3, 'PENDING', total, currency, ?4, ?5, ?6, ?6
       FROM invoices WHERE id = ?2 AND status = 'OPEN'
       ON CONFLICT (invoice_id, attempt_number) DO NOTHING`,
    )
    .bind(
      attempt.id,
      attempt.invoiceId,
      attempt.provider,
      attempt.attemptNumber,
      attempt.retryOf,
      attempt.now,
    );
}

/** Records the provider's first answer on an attempt that has none yet. */
export function recordProviderAnswerStatement(
  d1: D1Database,
  attemptId: string,
  answer: {
    providerPaymentId: string;
    status: PaymentAttemptStatus;
    failureReason: string | null;
    providerResponse: unknown;
    now: string;
  },
) {
  return d1
    .prepare(
      `UPDATE payment_attempts SET provider_payment_id = ?2, status = ?3, failure_reason = ?4,
         provider_response = ?5, updated_at = ?6
       WHERE id = ?1 AND provider_payment_id IS NULL`,
    )
    .bind(
      attemptId,
      answer.providerPaymentId,
      // Settled outcomes are applied by the payment handlers, like a webhook would be.
      answer.status === "REQUIRES_ACTION" ? "REQUIRES_ACTION" : "PENDING",
      answer.failureReason,
      JSON.stringify(answer.providerResponse ?? null),
      answer.now,
    );
}
