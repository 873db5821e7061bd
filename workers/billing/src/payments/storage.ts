import type { Database } from "@edge-platform/shared/db/client";
import { inList } from "@edge-platform/shared/db/in-list";
import {
  invoices,
  type PaymentAttemptStatus,
  paymentAttempts,
  paymentCustomers,
} from "@edge-platform/shared/db/schema/billing";
import { and, asc, count, desc, eq, lte, sql } from "drizzle-orm";
import type { TenantScope } from "../platform/index.ts";
import { PROVIDER_UNAVAILABLE_REASON } from "./domain/payment.ts";

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
       SELECT ?1, id, tenant_id, ?3, 'PENDING', total - reduced_total, currency, ?4, ?5, ?6, ?6
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

/** Attempts PENDING since before `before`: no webhook settled them (or the provider never answered). */
export function stalePendingAttempts(
  db: Database,
  before: string,
  scope: TenantScope,
  limit: number,
) {
  return db
    .select()
    .from(paymentAttempts)
    .where(
      and(
        eq(paymentAttempts.status, "PENDING"),
        lte(paymentAttempts.updatedAt, before),
        scope ? inList(paymentAttempts.tenantId, scope) : undefined,
      ),
    )
    .orderBy(asc(paymentAttempts.updatedAt))
    .limit(limit)
    .all();
}

/** The provider could not be reached: FAILED, retried at `nextRetryAt` (not a dunning step). */
export function markUnavailableStatement(
  d1: D1Database,
  attemptId: string,
  failure: { reason: string; nextRetryAt: string | null; now: string },
) {
  return d1
    .prepare(
      `UPDATE payment_attempts SET status = 'FAILED', failure_reason = ?2, next_retry_at = ?3, updated_at = ?4
       WHERE id = ?1 AND status = 'PENDING' AND provider_payment_id IS NULL`,
    )
    .bind(attemptId, failure.reason, failure.nextRetryAt, failure.now);
}

/** An attempt that never reached the provider, for an invoice that no longer needs it. */
export function cancelUnansweredAttemptStatement(
  d1: D1Database,
  attemptId: string,
  cancel: { reason: string; now: string },
) {
  return d1
    .prepare(
      `UPDATE payment_attempts SET status = 'CANCELLED', failure_reason = ?2, next_retry_at = NULL, updated_at = ?3
       WHERE id = ?1 AND status = 'PENDING' AND provider_payment_id IS NULL`,
    )
    .bind(attemptId, cancel.reason, cancel.now);
}

/** Gives an attempt whose creation answer was lost the provider's payment id (from the payment's metadata). */
export function adoptProviderIdStatement(
  d1: D1Database,
  attemptId: string,
  providerPaymentId: string,
) {
  return d1
    .prepare(
      `UPDATE payment_attempts SET provider_payment_id = ?2
       WHERE id = ?1 AND provider_payment_id IS NULL
         AND NOT EXISTS (SELECT 1 FROM payment_attempts WHERE provider_payment_id = ?2)`,
    )
    .bind(attemptId, providerPaymentId);
}

/** Attempts of an invoice (other than `attemptId`) whose provider call failed: not dunning steps. */
export async function unavailableAttemptsOf(
  db: Database,
  invoiceId: string,
  attemptId: string,
): Promise<number> {
  const row = await db
    .select({ unavailable: count() })
    .from(paymentAttempts)
    .where(
      and(
        eq(paymentAttempts.invoiceId, invoiceId),
        sql`${paymentAttempts.id} <> ${attemptId}`,
        sql`${paymentAttempts.failureReason} LIKE ${`${PROVIDER_UNAVAILABLE_REASON}:%`}`,
      ),
    )
    .get();
  return row?.unavailable ?? 0;
}

export async function findPaymentCustomer(db: Database, tenantId: string, provider: string) {
  const row = await db
    .select({ id: paymentCustomers.providerCustomerId })
    .from(paymentCustomers)
    .where(and(eq(paymentCustomers.tenantId, tenantId), eq(paymentCustomers.provider, provider)))
    .get();
  return row?.id;
}

/** Stores a tenant's provider customer; the first stored one wins. */
export function insertPaymentCustomerStatement(
  d1: D1Database,
  customer: { tenantId: string; provider: string; providerCustomerId: string },
) {
  return d1
    .prepare(
      `INSERT INTO payment_customers (tenant_id, provider, provider_customer_id) VALUES (?1, ?2, ?3)
       ON CONFLICT (tenant_id, provider) DO NOTHING`,
    )
    .bind(customer.tenantId, customer.provider, customer.providerCustomerId);
}

/**
 * A declined (or cancelled) charge of an automatic top-up's invoice turns
 * the rule off, with the reason; only when `when` holds (the attempt's
 * failure was recorded by this batch).
 */
export function declinedTopUpStatement(
  d1: D1Database,
  invoiceId: string,
  reason: string,
  now: Date,
  when: { sql: string; params: unknown[] },
): D1PreparedStatement {
  return d1
    .prepare(
      `UPDATE credit_auto_top_ups SET enabled = 0, disabled_reason = ?1, updated_at = ?2
        WHERE enabled = 1
          AND tenant_id = (SELECT tenant_id FROM credit_grants WHERE invoice_id = ?3 AND auto_top_up = 1)
          AND ${when.sql}`,
    )
    .bind(reason, now.toISOString(), invoiceId, ...when.params);
}
