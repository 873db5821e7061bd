import type { Database } from "@edge-platform/shared/db/client";
import type { AuditChanges } from "@edge-platform/shared/db/schema/audit";
import type { PaymentAttemptStatus } from "@edge-platform/shared/db/schema/billing";
import { ApiError } from "@edge-platform/shared/http/api-error";
import type { TenantContext } from "../app-env.ts";
import { auditStatement, type RawCondition, whenInvoiceReached } from "../db/audit-events.ts";
import { findInvoiceById, payStatements } from "../db/invoices.ts";
import { refundedSoFar, refundStatement } from "../db/ledger.ts";
import {
  findAttempt,
  findAttemptByProviderId,
  findPaymentAttempt,
  insertAttemptStatement,
  listPaymentAttempts,
  type PaymentAttemptRow,
  recordProviderAnswerStatement,
} from "../db/payments.ts";
import { type AuditContext, SYSTEM_AUDIT } from "../domain/audit.ts";
import { type PageRequest, pageMeta, pageOffset } from "../domain/pagination.ts";
import {
  attemptStatusOf,
  isLastAttempt,
  nextRetryAt,
  type PaymentEvent,
} from "../domain/payment.ts";
import type { PaymentProvider } from "../providers/payment-provider.ts";

export interface PaymentOutcome {
  /** Whether anything changed; an event that changes nothing is still recorded. */
  changed: boolean;
  note: string;
}

type AttemptWithNumber = { attempt: PaymentAttemptRow; invoiceNumber: string | null };

export function paymentAttemptView(row: AttemptWithNumber) {
  const { attempt } = row;
  return {
    id: attempt.id,
    invoiceId: attempt.invoiceId,
    invoiceNumber: row.invoiceNumber,
    tenantId: attempt.tenantId,
    providerPaymentId: attempt.providerPaymentId,
    provider: attempt.provider,
    status: attempt.status,
    amount: attempt.amount,
    currency: attempt.currency,
    failureReason: attempt.failureReason,
    attemptNumber: attempt.attemptNumber,
    retryOf: attempt.retryOf,
    nextRetryAt: attempt.nextRetryAt,
    createdAt: attempt.createdAt,
    updatedAt: attempt.updatedAt,
  };
}

/** The provider's answer as stored (a JSON object), or null before it answered. */
function providerResponseOf(row: AttemptWithNumber): Record<string, unknown> | null {
  const response = row.attempt.providerResponse;
  return response && typeof response === "object" ? (response as Record<string, unknown>) : null;
}

/**
 * Payment attempts and what payment events do to invoices and
 * subscriptions. Every handler reads the current state and writes with
 * conditional statements, so replays, late events and events for invoices
 * that moved on (VOID, already PAID) change nothing.
 */
export class PaymentService {
  constructor(
    private readonly db: Database,
    private readonly d1: D1Database,
    private readonly provider: PaymentProvider,
    private readonly audit: AuditContext = SYSTEM_AUDIT,
  ) {}

  /**
   * Payment outcomes are the provider's word (a webhook or its synchronous
   * answer), whoever made the request that carried it.
   */
  private paymentAudit(
    action: "payment.succeeded" | "payment.failed",
    attempt: PaymentAttemptRow,
    changes: AuditChanges,
    when: RawCondition,
    now: Date,
  ) {
    return auditStatement(
      this.d1,
      {
        actor: { type: "provider", id: this.provider.name },
        correlationId: this.audit.correlationId,
      },
      {
        tenantId: attempt.tenantId,
        action,
        targetType: "payment_attempt",
        targetId: attempt.id,
        changes: {
          invoiceId: { after: attempt.invoiceId },
          amount: { after: attempt.amount },
          currency: { after: attempt.currency },
          ...changes,
        },
      },
      { when, now },
    );
  }

  async list(
    context: TenantContext,
    page: PageRequest,
    filter: { status?: PaymentAttemptStatus | undefined },
  ) {
    const { rows, total } = await listPaymentAttempts(
      this.db,
      context.tenant.id,
      filter,
      pageOffset(page),
      page.limit,
    );
    return { data: rows.map(paymentAttemptView), meta: pageMeta(page, total) };
  }

  async get(context: TenantContext, id: string) {
    const row = await findPaymentAttempt(this.db, context.tenant.id, id);
    if (!row)
      throw new ApiError(404, "Payment attempt not found or does not belong to this tenant");
    return { ...paymentAttemptView(row), providerResponse: providerResponseOf(row) };
  }

  /**
   * Makes attempt `attemptNumber` on an OPEN invoice: the row first (once,
   * whatever runs concurrently), then the provider call keyed by the row id
   * (so a repeat after a crash is the same payment), then the provider's
   * answer; a settled answer goes through the same handlers as a webhook.
   */
  async attempt(invoiceId: string, attemptNumber: number, now: Date): Promise<PaymentOutcome> {
    const invoice = await findInvoiceById(this.db, invoiceId);
    if (invoice?.status !== "OPEN") {
      return { changed: false, note: "invoice is not OPEN" };
    }
    if (invoice.total === 0) {
      const results = await this.d1.batch(
        payStatements(this.d1, invoice.id, now, { attemptId: null, externalReference: null }),
      );
      return { changed: (results[0]?.meta.changes ?? 0) === 1, note: "nothing to collect" };
    }
    const previous =
      attemptNumber > 1 ? await findAttempt(this.db, invoiceId, attemptNumber - 1) : undefined;
    await insertAttemptStatement(this.d1, {
      id: crypto.randomUUID(),
      invoiceId,
      attemptNumber,
      provider: this.provider.name,
      retryOf: previous?.id ?? null,
      now: now.toISOString(),
    }).run();
    const attempt = await findAttempt(this.db, invoiceId, attemptNumber);
    if (!attempt) return { changed: false, note: "invoice is not OPEN" };
    if (attempt.providerPaymentId) return { changed: false, note: "attempt already made" };

    const result = await this.provider.createPayment({
      amount: attempt.amount,
      currency: attempt.currency,
      idempotencyKey: attempt.id,
      description: `Invoice ${invoice.invoiceNumber ?? invoice.id}`,
      tenantId: invoice.tenantId,
      metadata: {
        invoiceId: invoice.id,
        invoiceNumber: invoice.invoiceNumber ?? "",
        attemptId: attempt.id,
        attemptNumber: String(attemptNumber),
      },
    });
    await recordProviderAnswerStatement(this.d1, attempt.id, {
      providerPaymentId: result.providerPaymentId,
      status: attemptStatusOf(result.status),
      failureReason: result.failureReason,
      providerResponse: result.raw,
      now: now.toISOString(),
    }).run();
    switch (result.status) {
      case "succeeded":
        return this.apply(
          {
            type: "payment.succeeded",
            providerPaymentId: result.providerPaymentId,
            amount: attempt.amount,
            currency: attempt.currency,
          },
          now,
          result.raw,
        );
      case "failed":
      case "cancelled":
        return this.apply(
          {
            type: result.status === "failed" ? "payment.failed" : "payment.cancelled",
            providerPaymentId: result.providerPaymentId,
            amount: attempt.amount,
            currency: attempt.currency,
            failureReason: result.failureReason,
          },
          now,
          result.raw,
        );
      default:
        return { changed: true, note: `attempt ${attemptNumber} is ${result.status}` };
    }
  }

  /** Applies a normalized payment event (webhook or a provider's synchronous answer). */
  async apply(event: PaymentEvent, now: Date, raw?: unknown): Promise<PaymentOutcome> {
    if (event.type === "unknown") {
      return { changed: false, note: `event type ${event.providerType} is not handled` };
    }
    const attempt = await findAttemptByProviderId(this.db, event.providerPaymentId);
    if (!attempt) {
      return {
        changed: false,
        note: `no payment attempt has provider id ${event.providerPaymentId}`,
      };
    }
    const invoice = await findInvoiceById(this.db, attempt.invoiceId);
    if (!invoice) return { changed: false, note: "the attempt's invoice is missing" };
    const at = now.toISOString();

    switch (event.type) {
      case "payment.succeeded": {
        if (invoice.status === "VOID") {
          return {
            changed: false,
            note: `invoice ${invoice.invoiceNumber} is VOID; payment recorded only`,
          };
        }
        if (invoice.status === "PAID") {
          return { changed: false, note: `invoice ${invoice.invoiceNumber} is already PAID` };
        }
        if (invoice.status === "DRAFT") {
          return { changed: false, note: "invoice is a DRAFT; payment recorded only" };
        }
        const results = await this.d1.batch([
          ...payStatements(this.d1, invoice.id, now, {
            attemptId: attempt.id,
            externalReference: event.providerPaymentId,
            providerResponse: raw,
          }),
          this.paymentAudit(
            "payment.succeeded",
            attempt,
            {
              status: { before: attempt.status, after: "SUCCEEDED" },
              invoiceStatus: { before: invoice.status, after: "PAID" },
            },
            whenInvoiceReached(invoice.id, "PAID", at),
            now,
          ),
        ]);
        const paid = (results[0]?.meta.changes ?? 0) === 1;
        return {
          changed: paid,
          note: paid ? `invoice ${invoice.invoiceNumber} PAID` : "invoice changed meanwhile",
        };
      }
      case "payment.requires_action": {
        const result = await this.d1
          .prepare(
            `UPDATE payment_attempts SET status = 'REQUIRES_ACTION', provider_response = coalesce(?3, provider_response), updated_at = ?2
             WHERE id = ?1 AND status = 'PENDING'`,
          )
          .bind(attempt.id, at, raw === undefined ? null : JSON.stringify(raw))
          .run();
        return {
          changed: result.meta.changes === 1,
          note:
            result.meta.changes === 1 ? "attempt requires action" : `attempt is ${attempt.status}`,
        };
      }
      case "payment.failed":
      case "payment.cancelled":
        return this.fail(attempt, invoice, event, now, raw);
      case "charge.refunded": {
        if (invoice.status !== "PAID") {
          return { changed: false, note: `invoice is ${invoice.status}; refund recorded only` };
        }
        const already = await refundedSoFar(this.db, invoice.id);
        const cumulative = Math.min(event.amountRefunded, invoice.total);
        const amount = cumulative - already;
        if (amount <= 0) return { changed: false, note: "refund already recorded" };
        const result = await refundStatement(this.d1, {
          invoiceId: invoice.id,
          amount,
          reference: `${event.reference}:${cumulative}`,
          description: `Refund for invoice ${invoice.invoiceNumber}`,
          now: at,
        }).run();
        return {
          changed: result.meta.changes === 1,
          note: result.meta.changes === 1 ? `refunded ${amount}` : "refund already recorded",
        };
      }
    }
  }

  /**
   * A failed (or cancelled) attempt: marked so, and the next attempt is
   * scheduled while the invoice is still OPEN; after the last attempt the
   * invoice's dunning is exhausted and its subscription becomes PAST_DUE,
   * unless it is no longer ACTIVE (replaced, cancelled).
   */
  private async fail(
    attempt: PaymentAttemptRow,
    invoice: NonNullable<Awaited<ReturnType<typeof findInvoiceById>>>,
    event: Extract<PaymentEvent, { type: "payment.failed" | "payment.cancelled" }>,
    now: Date,
    raw: unknown,
  ): Promise<PaymentOutcome> {
    const at = now.toISOString();
    const status = event.type === "payment.failed" ? "FAILED" : "CANCELLED";
    const reason = event.failureReason ?? (status === "FAILED" ? "Unknown failure" : "Cancelled");
    const open = invoice.status === "OPEN";
    const retryAt = open ? nextRetryAt(attempt.attemptNumber, now) : null;
    const last = open && isLastAttempt(attempt.attemptNumber);
    const statements = [
      this.d1
        .prepare(
          `UPDATE payment_attempts SET status = ?2, failure_reason = ?3, next_retry_at = ?4,
             provider_response = coalesce(?5, provider_response), updated_at = ?6
           WHERE id = ?1 AND status IN ('PENDING', 'REQUIRES_ACTION')`,
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
    if (last) {
      statements.push(
        this.d1
          .prepare(
            `UPDATE invoices SET dunning_exhausted_at = ?2, updated_at = ?2
             WHERE id = ?1 AND status = 'OPEN' AND dunning_exhausted_at IS NULL
               AND EXISTS (SELECT 1 FROM payment_attempts WHERE id = ?3 AND status = ?4 AND updated_at = ?2)`,
          )
          .bind(invoice.id, at, attempt.id, status),
        this.d1
          .prepare(
            `UPDATE subscriptions SET status = 'PAST_DUE', updated_at = ?2
             WHERE id = ?1 AND status = 'ACTIVE'
               AND EXISTS (SELECT 1 FROM invoices WHERE id = ?3 AND status = 'OPEN' AND dunning_exhausted_at = ?2)`,
          )
          .bind(invoice.subscriptionId, at, invoice.id),
      );
    }
    const results = await this.d1.batch([
      ...statements,
      this.paymentAudit(
        "payment.failed",
        attempt,
        {
          status: { before: attempt.status, after: status },
          failureReason: { after: reason },
          nextRetryAt: { after: retryAt?.toISOString() ?? null },
        },
        {
          sql: "EXISTS (SELECT 1 FROM payment_attempts WHERE id = ? AND status = ? AND updated_at = ?)",
          params: [attempt.id, status, at],
        },
        now,
      ),
    ]);
    const changed = (results[0]?.meta.changes ?? 0) === 1;
    if (!changed) return { changed: false, note: `attempt is already ${attempt.status}` };
    if (!open)
      return { changed, note: `attempt ${status}; invoice is ${invoice.status}, no retry` };
    if (last) {
      const pastDue = (results[2]?.meta.changes ?? 0) === 1;
      return {
        changed,
        note: pastDue
          ? "last attempt failed; subscription PAST_DUE"
          : "last attempt failed; subscription is no longer ACTIVE and was left as it is",
      };
    }
    return {
      changed,
      note: `attempt ${attempt.attemptNumber} ${status}; retry at ${retryAt?.toISOString()}`,
    };
  }
}
