import type { Database } from "@edge-platform/shared/db/client";
import type { RawCondition } from "../audit/index.ts";
import { tenantEventStatement } from "../notifications/index.ts";
import {
  isLastAttempt,
  nextRetryAt,
  type PaymentEvent,
  PROVIDER_UNAVAILABLE_REASON,
} from "./domain/payment.ts";
import type { PaymentOutcome } from "./domain/provider-answer.ts";
import type { InvoiceRow } from "./invoice-settlement-storage.ts";
import {
  declinedTopUpStatement,
  type PaymentAttemptRow,
  unavailableAttemptsOf,
} from "./storage.ts";

/** A declined or cancelled attempt and where it leaves its invoice's dunning. */
export interface AttemptFailure {
  attempt: PaymentAttemptRow;
  invoice: InvoiceRow;
  status: "FAILED" | "CANCELLED";
  reason: string;
  /** The invoice still wants the money: only then is there a retry or a last step. */
  open: boolean;
  retryAt: Date | null;
  /** The last dunning step failed: the invoice's dunning is exhausted. */
  last: boolean;
  now: Date;
  at: string;
  /**
   * Holds only when this batch recorded the failure, so that a replayed or
   * late event writes no audit entry or event of its own.
   */
  attemptReached: RawCondition;
}

export async function attemptFailure(
  db: Database,
  attempt: PaymentAttemptRow,
  invoice: InvoiceRow,
  event: Extract<PaymentEvent, { type: "payment.failed" | "payment.cancelled" }>,
  now: Date,
): Promise<AttemptFailure> {
  const at = now.toISOString();
  const status = event.type === "payment.failed" ? "FAILED" : "CANCELLED";
  const reason = event.failureReason ?? (status === "FAILED" ? "Unknown failure" : "Cancelled");
  const open = invoice.status === "OPEN";
  // The dunning step: the attempt's number, not counting attempts the provider never decided.
  const step = attempt.attemptNumber - (await unavailableAttemptsOf(db, invoice.id, attempt.id));
  const retryAt = open ? nextRetryAt(step, now) : null;
  const last = open && isLastAttempt(step);
  const attemptReached: RawCondition = {
    sql: "EXISTS (SELECT 1 FROM payment_attempts WHERE id = ? AND status = ? AND updated_at = ?)",
    params: [attempt.id, status, at],
  };
  return { attempt, invoice, status, reason, open, retryAt, last, now, at, attemptReached };
}

/**
 * Index, in a batch that starts with failedAttemptStatements, of the
 * subscription's PAST_DUE update (present on the last step only).
 */
const PAST_DUE_STATEMENT = 2;

/**
 * The attempt marked with its retry; on the last step the invoice's
 * dunning exhausted and its subscription PAST_DUE, unless it is no longer
 * ACTIVE (replaced, cancelled).
 */
export function failedAttemptStatements(
  d1: D1Database,
  failure: AttemptFailure,
  raw: unknown,
): D1PreparedStatement[] {
  const { attempt, invoice, status, reason, retryAt, at } = failure;
  const statements = [
    d1
      .prepare(
        `UPDATE payment_attempts SET status = ?2, failure_reason = ?3, next_retry_at = ?4,
             provider_response = coalesce(?5, provider_response), updated_at = ?6
           WHERE id = ?1 AND (status IN ('PENDING', 'REQUIRES_ACTION')
             OR (status = 'FAILED' AND failure_reason LIKE '${PROVIDER_UNAVAILABLE_REASON}:%'))`,
      )
      .bind(
        attempt.id,
        status,
        reason,
        retryAt?.toISOString() ?? null,
        raw === undefined ? null : JSON.stringify(raw),
        at,
      ),
  ];
  if (failure.last) {
    statements.push(
      d1
        .prepare(
          `UPDATE invoices SET dunning_exhausted_at = ?2, updated_at = ?2
             WHERE id = ?1 AND status = 'OPEN' AND dunning_exhausted_at IS NULL
               AND EXISTS (SELECT 1 FROM payment_attempts WHERE id = ?3 AND status = ?4 AND updated_at = ?2)`,
        )
        .bind(invoice.id, at, attempt.id, status),
      d1
        .prepare(
          `UPDATE subscriptions SET status = 'PAST_DUE', updated_at = ?2
             WHERE id = ?1 AND status = 'ACTIVE'
               AND EXISTS (SELECT 1 FROM invoices WHERE id = ?3 AND status = 'OPEN' AND dunning_exhausted_at = ?2)`,
        )
        .bind(invoice.subscriptionId, at, invoice.id),
    );
  }
  return statements;
}

/** The tenant's events about the failure, each written only when the failure was. */
export function failureEventStatements(
  d1: D1Database,
  failure: AttemptFailure,
): D1PreparedStatement[] {
  return [
    paymentFailedEvent(d1, failure),
    // An automatic top-up whose charge is declined turns the rule off.
    ...(failure.invoice.kind === "TOP_UP" ? declinedTopUpStatements(d1, failure) : []),
    ...(failure.last ? [pastDueEvent(d1, failure)] : []),
  ];
}

function paymentFailedEvent(d1: D1Database, failure: AttemptFailure) {
  const { attempt, invoice, status, reason, retryAt, now } = failure;
  return tenantEventStatement(
    d1,
    {
      type: "payment.failed",
      tenantId: attempt.tenantId,
      data: {
        id: attempt.id,
        invoiceId: attempt.invoiceId,
        invoiceNumber: invoice.invoiceNumber,
        attemptNumber: attempt.attemptNumber,
        status,
        amount: attempt.amount,
        currency: attempt.currency,
        failureReason: reason,
        nextRetryAt: retryAt?.toISOString() ?? null,
        lastAttempt: failure.last,
      },
    },
    { now, when: failure.attemptReached },
  );
}

function declinedTopUpStatements(d1: D1Database, failure: AttemptFailure) {
  const { attempt, invoice, reason, now, attemptReached } = failure;
  return [
    declinedTopUpStatement(
      d1,
      invoice.id,
      `The top-up charge was declined: ${reason}`,
      now,
      attemptReached,
    ),
    tenantEventStatement(
      d1,
      {
        type: "credits.top_up_failed",
        tenantId: attempt.tenantId,
        data: {
          invoiceId: invoice.id,
          amount: attempt.amount,
          currency: attempt.currency,
          failureReason: reason,
          autoTopUpDisabled: true,
        },
      },
      {
        now,
        id: `evt_credits_top_up_failed_${attempt.id}`,
        when: {
          sql: `EXISTS (SELECT 1 FROM credit_grants WHERE invoice_id = ? AND auto_top_up = 1) AND ${attemptReached.sql}`,
          params: [invoice.id, ...attemptReached.params],
        },
      },
    ),
  ];
}

function pastDueEvent(d1: D1Database, failure: AttemptFailure) {
  const { attempt, invoice, now, at } = failure;
  return tenantEventStatement(
    d1,
    {
      type: "subscription.past_due",
      tenantId: attempt.tenantId,
      data: {
        id: invoice.subscriptionId,
        status: "PAST_DUE",
        invoiceId: invoice.id,
        invoiceNumber: invoice.invoiceNumber,
        amountDue: invoice.total - invoice.reducedTotal,
        currency: invoice.currency,
      },
    },
    {
      now,
      when: {
        sql: "EXISTS (SELECT 1 FROM subscriptions WHERE id = ? AND status = 'PAST_DUE' AND updated_at = ?)",
        params: [invoice.subscriptionId, at],
      },
    },
  );
}

/** What the failure's batch did, as the event's outcome. */
export function failureOutcome(
  failure: AttemptFailure,
  changed: boolean,
  results: D1Result[],
): PaymentOutcome {
  const { attempt, invoice, status } = failure;
  if (!changed) return { changed: false, note: `attempt is already ${attempt.status}` };
  if (!failure.open)
    return { changed, note: `attempt ${status}; invoice is ${invoice.status}, no retry` };
  if (failure.last) {
    const pastDue = (results[PAST_DUE_STATEMENT]?.meta.changes ?? 0) === 1;
    return {
      changed,
      note: pastDue
        ? "last attempt failed; subscription PAST_DUE"
        : "last attempt failed; subscription is no longer ACTIVE and was left as it is",
    };
  }
  return {
    changed,
    note: `attempt ${attempt.attemptNumber} ${status}; retry at ${failure.retryAt?.toISOString()}`,
  };
}
