import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import type { Database } from "@edge-platform/shared/db/client";
import type { AuditChanges } from "@edge-platform/shared/db/schema/audit";
import type { PaymentAttemptStatus } from "@edge-platform/shared/db/schema/billing";
import { ApiError } from "@edge-platform/shared/http/api-error";
import {
  type AuditContext,
  auditStatement,
  type RawCondition,
  SYSTEM_AUDIT,
  whenInvoiceReached,
} from "../audit/index.ts";
import { invoiceEventStatement } from "../notifications/index.ts";
import type { TenantScope, TenantScoped } from "../platform/index.ts";
import { findTenantById, type PageRequest, pageMeta, pageOffset } from "../platform/index.ts";
import {
  attemptFailure,
  failedAttemptStatements,
  failureEventStatements,
  failureOutcome,
} from "./attempt-failure.ts";
import {
  attemptStatusOf,
  type PaymentEvent,
  PROVIDER_UNAVAILABLE_REASON,
  unavailableRetryAt,
} from "./domain/payment.ts";
import {
  type PaymentOutcome,
  type PaymentStatusEvent,
  settledEventOf,
} from "./domain/provider-answer.ts";
import {
  findInvoiceById,
  type InvoiceRow,
  paymentReferenceOf,
  payStatements,
  receivedCreditStatements,
} from "./invoice-settlement-storage.ts";
import { applyProviderRefund, type RefundedTopUp } from "./provider-refunds.ts";
import type { PaymentProvider, PaymentResult } from "./providers/payment-provider.ts";
import { NoPaymentMethodError } from "./providers/payprovider.ts";
import {
  adoptProviderIdStatement,
  cancelUnansweredAttemptStatement,
  findAttempt,
  findAttemptByProviderId,
  findPaymentAttempt,
  findPaymentCustomer,
  insertAttemptStatement,
  insertPaymentCustomerStatement,
  listPaymentAttempts,
  markUnavailableStatement,
  type PaymentAttemptRow,
  recordProviderAnswerStatement,
  stalePendingAttempts,
} from "./storage.ts";

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
    /** Told when a TOP_UP invoice is paid or declined: its grant or the top-up rule changed (the counter reloads). */
    private readonly onTopUpPaid: (tenantId: string) => Promise<void> = async () => {},
    /** Told when the provider refunded part of a paid TOP_UP invoice: as much of its grant goes. */
    private readonly refundedTopUp: RefundedTopUp = async () => 0,
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
    context: TenantScoped,
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

  async get(context: TenantScoped, id: string) {
    const row = await findPaymentAttempt(this.db, context.tenant.id, id);
    if (!row)
      throw new ApiError(404, "Payment attempt not found or does not belong to this tenant");
    return { ...paymentAttemptView(row), providerResponse: providerResponseOf(row) };
  }

  /**
   * Makes attempt `attemptNumber` on an OPEN invoice. The row is written
   * first, once, whatever runs concurrently; only the caller whose insert
   * created it calls the provider (so two overlapping billing cycles charge
   * once), keyed by the row id (a repeat after a crash is the same
   * payment). The tenant's provider customer is created on first use. The
   * answer is recorded, and a settled answer goes through the same handlers
   * as a webhook. A provider error leaves the attempt FAILED with a retry
   * (not a dunning step); a customer without a payment method is a decline.
   */
  async attempt(invoiceId: string, attemptNumber: number, now: Date): Promise<PaymentOutcome> {
    const invoice = await findInvoiceById(this.db, invoiceId);
    if (invoice?.status !== "OPEN") {
      return { changed: false, note: "invoice is not OPEN" };
    }
    if (invoice.total - invoice.reducedTotal === 0) {
      const results = await this.d1.batch([
        ...payStatements(this.d1, invoice.id, now, { attemptId: null, externalReference: null }),
        invoiceEventStatement(this.d1, "invoice.paid", invoice.id, "PAID", now),
      ]);
      return { changed: (results[0]?.meta.changes ?? 0) === 1, note: "nothing to collect" };
    }
    const previous =
      attemptNumber > 1 ? await findAttempt(this.db, invoiceId, attemptNumber - 1) : undefined;
    const inserted = await insertAttemptStatement(this.d1, {
      id: crypto.randomUUID(),
      invoiceId,
      attemptNumber,
      provider: this.provider.name,
      retryOf: previous?.id ?? null,
      now: now.toISOString(),
    }).run();
    if (inserted.meta.changes !== 1) {
      return { changed: false, note: `attempt ${attemptNumber} already made or in progress` };
    }
    const attempt = await findAttempt(this.db, invoiceId, attemptNumber);
    if (!attempt) return { changed: false, note: "invoice is not OPEN" };
    return this.charge(attempt, invoice, now);
  }

  /**
   * Settles attempts left PENDING for longer than `olderThanMinutes` (no
   * webhook came, or the process died before the provider answered): the
   * provider is asked, and the attempt becomes SUCCEEDED or FAILED. An
   * attempt the provider never answered is made again with the same
   * idempotency key (the provider returns the payment if it exists). A
   * provider that cannot be reached leaves the attempt for the next sweep.
   */
  async reconcileStale(now: Date, olderThanMinutes: number, scope: TenantScope, limit: number) {
    const before = new Date(now.getTime() - olderThanMinutes * 60_000).toISOString();
    let settled = 0;
    let failures = 0;
    for (const attempt of await stalePendingAttempts(this.db, before, scope, limit)) {
      try {
        const outcome = await this.reconcile(attempt, now, olderThanMinutes);
        if (outcome.changed) settled++;
      } catch (error) {
        failures++;
        console.error(
          JSON.stringify({
            level: "error",
            msg: "reconciling a pending payment failed; the next sweep retries",
            attemptId: attempt.id,
            error: String(error),
          }),
        );
      }
    }
    return { settled, failures };
  }

  private async reconcile(
    attempt: PaymentAttemptRow,
    now: Date,
    olderThanMinutes: number,
  ): Promise<PaymentOutcome> {
    const invoice = await findInvoiceById(this.db, attempt.invoiceId);
    if (!invoice) return { changed: false, note: "the attempt's invoice is missing" };
    if (!attempt.providerPaymentId) {
      if (invoice.status !== "OPEN") {
        const result = await cancelUnansweredAttemptStatement(this.d1, attempt.id, {
          reason: `never reached the provider; invoice is ${invoice.status}`,
          now: now.toISOString(),
        }).run();
        return { changed: result.meta.changes === 1, note: "attempt cancelled" };
      }
      return this.charge(attempt, invoice, now);
    }
    const result = await this.provider.retrievePayment(attempt.providerPaymentId);
    // Still unsettled at the provider after the bound: a failed step of
    // dunning; should it succeed later, its webhook turns the money into a
    // payment or a credit.
    const event: PaymentStatusEvent = settledEventOf(result, attempt) ?? {
      type: "payment.failed",
      providerPaymentId: result.providerPaymentId,
      amount: attempt.amount,
      currency: attempt.currency,
      failureReason: `still ${result.status} at the provider after ${olderThanMinutes} minutes`,
    };
    return this.apply(event, now, result.raw);
  }

  /** The provider call of an attempt that has no provider answer yet. */
  private async charge(
    attempt: PaymentAttemptRow,
    invoice: InvoiceRow,
    now: Date,
  ): Promise<PaymentOutcome> {
    let result: PaymentResult;
    try {
      result = await this.requestPayment(attempt, invoice);
    } catch (error) {
      return this.chargeNotAnswered(attempt, invoice, error, now);
    }
    await recordProviderAnswerStatement(this.d1, attempt.id, {
      providerPaymentId: result.providerPaymentId,
      status: attemptStatusOf(result.status),
      failureReason: result.failureReason,
      providerResponse: result.raw,
      now: now.toISOString(),
    }).run();
    const event = settledEventOf(result, attempt);
    if (event) return this.apply(event, now, result.raw);
    return { changed: true, note: `attempt ${attempt.attemptNumber} is ${result.status}` };
  }

  private async requestPayment(
    attempt: PaymentAttemptRow,
    invoice: InvoiceRow,
  ): Promise<PaymentResult> {
    const customerId = await this.customerFor(invoice.tenantId);
    return this.provider.createPayment({
      amount: attempt.amount,
      currency: attempt.currency,
      idempotencyKey: attempt.id,
      description: `Invoice ${invoice.invoiceNumber ?? invoice.id}`,
      tenantId: invoice.tenantId,
      customerId,
      metadata: {
        invoiceId: invoice.id,
        invoiceNumber: invoice.invoiceNumber ?? "",
        attemptId: attempt.id,
        attemptNumber: String(attempt.attemptNumber),
      },
    });
  }

  /**
   * A customer without a payment method is a decline (a dunning step); any
   * other error decided nothing, so the attempt is retried soon and does
   * not count as a step.
   */
  private async chargeNotAnswered(
    attempt: PaymentAttemptRow,
    invoice: InvoiceRow,
    error: unknown,
    now: Date,
  ): Promise<PaymentOutcome> {
    if (error instanceof NoPaymentMethodError) {
      return this.fail(
        attempt,
        invoice,
        {
          type: "payment.failed",
          providerPaymentId: "",
          amount: attempt.amount,
          currency: attempt.currency,
          failureReason: error.message,
        },
        now,
        undefined,
      );
    }
    const retryAt = unavailableRetryAt(now);
    const failed = await markUnavailableStatement(this.d1, attempt.id, {
      reason: `${PROVIDER_UNAVAILABLE_REASON}: ${String(error).slice(0, 300)}`,
      nextRetryAt: invoice.status === "OPEN" ? retryAt.toISOString() : null,
      now: now.toISOString(),
    }).run();
    console.error(
      JSON.stringify({
        level: "error",
        msg: "payment provider call failed; attempt FAILED and retried",
        attemptId: attempt.id,
        retryAt: retryAt.toISOString(),
        error: String(error),
      }),
    );
    return {
      changed: failed.meta.changes === 1,
      note: `provider unavailable; retry at ${retryAt.toISOString()}`,
    };
  }

  /** The tenant's provider customer: created once (idempotent on the tenant), then stored and reused. */
  private async customerFor(tenantId: string): Promise<string> {
    const stored = await findPaymentCustomer(this.db, tenantId, this.provider.name);
    if (stored) return stored;
    const tenant = await findTenantById(this.db, tenantId);
    const { providerCustomerId } = await this.provider.createCustomer({
      tenantId,
      idempotencyKey: `tenant-customer-${tenantId}`,
      name: tenant?.name ?? tenantId,
    });
    await insertPaymentCustomerStatement(this.d1, {
      tenantId,
      provider: this.provider.name,
      providerCustomerId,
    }).run();
    // A concurrent first charge may have stored its answer first: use what is stored.
    return (await findPaymentCustomer(this.db, tenantId, this.provider.name)) ?? providerCustomerId;
  }

  /** Applies a normalized payment event (webhook or a provider's synchronous answer). */
  async apply(event: PaymentEvent, now: Date, raw?: unknown): Promise<PaymentOutcome> {
    if (event.type === "unknown") {
      return { changed: false, note: `event type ${event.providerType} is not handled` };
    }
    const attempt = await this.attemptOf(event);
    if (!attempt) {
      return {
        changed: false,
        note: `no payment attempt has provider id ${event.providerPaymentId}`,
      };
    }
    const invoice = await findInvoiceById(this.db, attempt.invoiceId);
    if (!invoice) return { changed: false, note: "the attempt's invoice is missing" };

    switch (event.type) {
      case "payment.succeeded":
        return this.succeed(attempt, invoice, event, now, raw);
      case "payment.requires_action":
        return this.requireAction(attempt, now, raw);
      case "payment.failed":
      case "payment.cancelled":
        return this.fail(attempt, invoice, event, now, raw);
      case "charge.refunded":
        return applyProviderRefund(this.d1, invoice, event, now, this.refundedTopUp);
    }
  }

  /** The invoice PAID by the attempt, or the money credited when the invoice no longer needs it. */
  private async succeed(
    attempt: PaymentAttemptRow,
    invoice: InvoiceRow,
    event: { providerPaymentId: string; amount: number | null },
    now: Date,
    raw: unknown,
  ): Promise<PaymentOutcome> {
    if (invoice.status === "VOID" || invoice.status === "PAID") {
      return this.creditUnneeded(attempt, invoice, event, now, raw);
    }
    if (invoice.status === "DRAFT") {
      return { changed: false, note: "invoice is a DRAFT; payment recorded only" };
    }
    // An attempt made before a REDUCE credit note lowered what is due can
    // still collect the old amount: what it took beyond that is credit.
    const excess = (event.amount ?? attempt.amount) - (invoice.total - invoice.reducedTotal);
    const results = await this.d1.batch([
      ...payStatements(this.d1, invoice.id, now, {
        attemptId: attempt.id,
        externalReference: event.providerPaymentId,
        providerResponse: raw,
      }),
      ...(excess > 0
        ? receivedCreditStatements(
            this.d1,
            {
              tenantId: invoice.tenantId,
              invoiceId: invoice.id,
              attemptId: attempt.id,
              amount: excess,
              currency: attempt.currency,
              reference: event.providerPaymentId,
              description: `Payment for invoice ${invoice.invoiceNumber} beyond the amount due: credit balance`,
              providerResponse: raw,
            },
            now,
          )
        : []),
      this.paymentAudit(
        "payment.succeeded",
        attempt,
        {
          status: { before: attempt.status, after: "SUCCEEDED" },
          invoiceStatus: { before: invoice.status, after: "PAID" },
        },
        whenInvoiceReached(invoice.id, "PAID", now.toISOString()),
        now,
      ),
      invoiceEventStatement(this.d1, "invoice.paid", invoice.id, "PAID", now),
    ]);
    const paid = (results[0]?.meta.changes ?? 0) === 1;
    if (paid && invoice.kind === "TOP_UP") await this.onTopUpPaid(invoice.tenantId);
    return {
      changed: paid,
      note: paid ? `invoice ${invoice.invoiceNumber} PAID` : "invoice changed meanwhile",
    };
  }

  private async requireAction(
    attempt: PaymentAttemptRow,
    now: Date,
    raw: unknown,
  ): Promise<PaymentOutcome> {
    const result = await this.d1
      .prepare(
        `UPDATE payment_attempts SET status = 'REQUIRES_ACTION', provider_response = coalesce(?3, provider_response), updated_at = ?2
             WHERE id = ?1 AND status = 'PENDING'`,
      )
      .bind(attempt.id, now.toISOString(), raw === undefined ? null : JSON.stringify(raw))
      .run();
    return {
      changed: result.meta.changes === 1,
      note: result.meta.changes === 1 ? "attempt requires action" : `attempt is ${attempt.status}`,
    };
  }

  /**
   * The attempt an event is about: by the provider's payment id, or, for a
   * payment whose creation answer never reached us (provider error), by our
   * attempt id in its metadata, which then gets the provider id.
   */
  private async attemptOf(event: {
    providerPaymentId: string;
    attemptId?: string | null;
  }): Promise<PaymentAttemptRow | undefined> {
    const found = await findAttemptByProviderId(this.db, event.providerPaymentId);
    if (found || !event.attemptId) return found;
    await adoptProviderIdStatement(this.d1, event.attemptId, event.providerPaymentId).run();
    return findAttemptByProviderId(this.db, event.providerPaymentId);
  }

  /**
   * A success for an invoice that no longer needs the money (VOID, or PAID
   * by another payment): the amount is a CREDIT on the tenant's ledger with
   * the provider reference, used by its next invoice. A replay of the
   * payment that paid the invoice changes nothing.
   */
  private async creditUnneeded(
    attempt: PaymentAttemptRow,
    invoice: InvoiceRow,
    event: { providerPaymentId: string; amount: number | null },
    now: Date,
    raw: unknown,
  ): Promise<PaymentOutcome> {
    if (invoice.status === "PAID") {
      const paidBy = await paymentReferenceOf(this.db, invoice.id);
      if (paidBy === event.providerPaymentId) {
        return { changed: false, note: `invoice ${invoice.invoiceNumber} is already PAID` };
      }
    }
    const amount = event.amount ?? attempt.amount;
    const results = await this.d1.batch([
      ...receivedCreditStatements(
        this.d1,
        {
          tenantId: invoice.tenantId,
          invoiceId: invoice.id,
          attemptId: attempt.id,
          amount,
          currency: attempt.currency,
          reference: event.providerPaymentId,
          description: `Payment received for ${invoice.status} invoice ${invoice.invoiceNumber ?? invoice.id}: credit balance`,
          providerResponse: raw,
        },
        now,
      ),
      // Recorded only when this batch wrote the credit (a replay writes nothing).
      this.paymentAudit(
        "payment.succeeded",
        attempt,
        {
          status: { before: attempt.status, after: "SUCCEEDED" },
          credited: { after: amount },
          invoiceStatus: { before: invoice.status, after: invoice.status },
        },
        {
          sql: "EXISTS (SELECT 1 FROM ledger_entries WHERE type = 'CREDIT' AND external_reference = ? AND invoice_id = ? AND created_at = ?)",
          params: [event.providerPaymentId, invoice.id, now.toISOString()],
        },
        now,
      ),
    ]);
    const credited = (results[0]?.meta.changes ?? 0) === 1;
    return {
      changed: credited,
      note: credited
        ? `invoice ${invoice.invoiceNumber} is ${invoice.status}; ${amount} credited to the tenant`
        : "payment already credited",
    };
  }

  /**
   * A failed (or cancelled) attempt: marked so, and the next attempt is
   * scheduled while the invoice is still OPEN; after the last dunning step
   * (declined attempts; provider outages do not count) the invoice's
   * dunning is exhausted and its subscription becomes PAST_DUE, unless it is
   * no longer ACTIVE (replaced, cancelled).
   */
  private async fail(
    attempt: PaymentAttemptRow,
    invoice: InvoiceRow,
    event: Extract<PaymentEvent, { type: "payment.failed" | "payment.cancelled" }>,
    now: Date,
    raw: unknown,
  ): Promise<PaymentOutcome> {
    const failure = await attemptFailure(this.db, attempt, invoice, event, now);
    const results = await this.d1.batch([
      ...failedAttemptStatements(this.d1, failure, raw),
      this.paymentAudit(
        "payment.failed",
        attempt,
        {
          status: { before: attempt.status, after: failure.status },
          failureReason: { after: failure.reason },
          nextRetryAt: { after: failure.retryAt?.toISOString() ?? null },
        },
        failure.attemptReached,
        now,
      ),
      ...failureEventStatements(this.d1, failure),
    ]);
    const changed = (results[0]?.meta.changes ?? 0) === 1;
    if (changed && invoice.kind === "TOP_UP") await this.onTopUpPaid(invoice.tenantId);
    return failureOutcome(failure, changed, results);
  }
}

/** A PaymentService's onTopUpPaid: the tenant's counter reloads its credit grants. */
export function refreshCreditsOf(env: Env) {
  return (tenantId: string) =>
    entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId).refreshCredits();
}
