import type { Database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import {
  type AuditContext,
  auditStatement,
  type RawCondition,
  SYSTEM_AUDIT,
} from "../audit/index.ts";
import { invoiceEventStatement, tenantEventFromRowStatement } from "../notifications/index.ts";
import {
  creditNoteEventRow,
  type PaymentProvider,
  ProviderUnavailableError,
  paymentReferenceOf,
  payStatements,
  refundOutcomeStatements,
} from "../payments/index.ts";
import type { TenantScoped } from "../platform/index.ts";
import { type PageRequest, pageMeta, pageOffset } from "../platform/index.ts";
import {
  type CreditNoteRequest,
  type PlannedCreditNote,
  planCreditNote,
} from "./domain/credit-note.ts";
import {
  type CreditNoteLineRow,
  type CreditNoteRow,
  creditNoteStatements,
  findCreditNote,
  findCreditNoteById,
  hasRefundReference,
  linesOf,
  listCreditNotes,
  readCreditableInvoice,
  unsentRefunds,
} from "./storage.ts";

/** Credits of a paid TOP_UP invoice's grant, set aside while its credit note is written. */
export interface TakeBackReservation {
  /** The grant's write-off, to run in the note's batch, each statement only `when` the note was written. */
  statements(when: RawCondition): D1PreparedStatement[];
  /** The note was not written: the credits go back to the grant. */
  release(): Promise<void>;
  /** The note was written: the tenant's counter reloads its grants. */
  written(): Promise<void>;
}

/** What credit notes need of prepaid credits (built by the composition root from the credits capability). */
export interface TopUpTakeBack {
  /**
   * Sets aside `paidCents` (invoice money) of the grant a TOP_UP invoice
   * bought, all or nothing: null when the invoice bought no grant,
   * `{unspentPaidCents}` when less than that is unspent.
   */
  reserve(
    tenantId: string,
    invoiceId: string,
    paidCents: number,
    now: Date,
  ): Promise<TakeBackReservation | { unspentPaidCents: number } | null>;
}

const noteNotFound = () =>
  new ApiError(404, "Credit note not found or does not belong to this tenant");

/** Refunds retried per scheduled run when the provider could not be reached. */
const REFUND_RETRY_BATCH = 50;

export function creditNoteView(note: CreditNoteRow, lines: CreditNoteLineRow[]) {
  return {
    id: note.id,
    number: note.creditNoteNumber,
    invoiceId: note.invoiceId,
    tenantId: note.tenantId,
    reason: note.reason,
    settlement: note.settlement,
    currency: note.currency,
    subtotal: note.subtotal,
    tax: note.tax,
    total: note.total,
    memo: note.memo,
    refundStatus: note.refundStatus,
    refundFailureReason: note.refundFailureReason,
    createdAt: note.createdAt,
    lines: lines
      .filter((line) => line.creditNoteId === note.id)
      .map((line) => ({
        id: line.id,
        lineItemId: line.invoiceLineItemId,
        description: line.description,
        amount: line.amount,
      })),
  };
}

export type CreditNoteView = ReturnType<typeof creditNoteView>;

/**
 * Credit notes: issued by the platform on an OPEN or PAID invoice, read by
 * the tenant. A REFUND note asks the provider for the money after the note
 * is written; the refund's outcome is recorded on the note (a failed refund
 * leaves the amount on the tenant's credit balance).
 */
export class CreditNoteService {
  constructor(
    private readonly db: Database,
    private readonly d1: D1Database,
    private readonly provider: PaymentProvider,
    private readonly topUps: TopUpTakeBack,
    private readonly audit: AuditContext = SYSTEM_AUDIT,
  ) {}

  async create(
    context: TenantScoped,
    invoiceId: string,
    request: CreditNoteRequest,
    now: Date = new Date(),
  ) {
    const tenantId = context.tenant.id;
    const invoice = await readCreditableInvoice(this.d1, tenantId, invoiceId);
    if (!invoice) throw new ApiError(404, "Invoice not found or does not belong to this tenant");
    const plan = planCreditNote(invoice, request);
    if (!plan.ok) throw new ApiError(plan.status, plan.message);
    const reservation =
      invoice.kind === "TOP_UP" ? await this.reserveTopUp(invoice, plan.note.subtotal, now) : null;
    const id = await this.write(invoice, request, plan.note, reservation, now);
    if (!id) throw await this.refusedMeanwhile(tenantId, invoiceId, request);
    if (request.settlement === "REFUND" && invoice.paymentReference) {
      await this.refund(id, invoice.paymentReference, now);
    }
    return this.get(context, id);
  }

  /**
   * A refund the provider made on a paid TOP_UP invoice outside a credit
   * note: a REFUND note, already refunded, for as much as is still unspent
   * of the grant it bought (that much of the grant goes with it). Answers
   * the cents it covered; the caller records the rest as money owed again.
   */
  async recordProviderTopUpRefund(
    invoice: { id: string; tenantId: string },
    paidCents: number,
    reference: string,
    now: Date,
  ): Promise<number> {
    // A retry of the same report: its note exists, and the refunds already count it.
    if (await hasRefundReference(this.d1, reference)) return 0;
    const read = await readCreditableInvoice(this.d1, invoice.tenantId, invoice.id);
    const purchase = read?.lines.find((line) => line.kind === "CREDIT_PURCHASE");
    if (!read || !purchase) return 0;
    const planFor = (cents: number) => {
      let amount = Math.min(cents, purchase.amount - purchase.credited);
      // Tax rides on the credited amount: lower it until the note fits in what was refunded.
      for (let tries = 0; tries < 3 && amount > 0; tries++) {
        const request: CreditNoteRequest = {
          reason: "OTHER",
          settlement: "REFUND",
          lines: [{ lineItemId: purchase.id, amount }],
          memo: "Refunded at the payment provider",
        };
        const plan = planCreditNote(read, request);
        if (!plan.ok) return null;
        if (plan.note.total <= cents) return { request, note: plan.note };
        amount -= plan.note.total - cents;
      }
      return null;
    };
    let planned = planFor(paidCents);
    let reserved = planned
      ? await this.topUps.reserve(invoice.tenantId, invoice.id, planned.note.subtotal, now)
      : null;
    if (reserved && "unspentPaidCents" in reserved) {
      planned = planFor(reserved.unspentPaidCents);
      reserved = planned
        ? await this.topUps.reserve(invoice.tenantId, invoice.id, planned.note.subtotal, now)
        : null;
    }
    if (!planned || !reserved || "unspentPaidCents" in reserved) return 0;
    const outcome = { status: "SUCCEEDED" as const, reference, failureReason: null };
    const id = await this.write(read, planned.request, planned.note, reserved, now, (noteId) =>
      refundOutcomeStatements(this.d1, noteId, outcome, now),
    );
    return id ? planned.note.total : 0;
  }

  /**
   * One batch: the note (written only while every bound holds), the grant's
   * write-off for a TOP_UP invoice, the settlement a REDUCE note to zero
   * makes, the audit row and the event, each only when the note was
   * written. Answers the note's id, or null when it was not written (the
   * take-back is released).
   */
  private async write(
    invoice: { id: string; tenantId: string; currency: string },
    request: CreditNoteRequest,
    note: PlannedCreditNote,
    reservation: TakeBackReservation | null,
    now: Date,
    then: (id: string) => D1PreparedStatement[] = () => [],
  ): Promise<string | null> {
    const id = crypto.randomUUID();
    const written = { sql: "EXISTS (SELECT 1 FROM credit_notes WHERE id = ?)", params: [id] };
    const statements = [
      ...creditNoteStatements(this.d1, {
        id,
        tenantId: invoice.tenantId,
        invoiceId: invoice.id,
        reason: request.reason,
        settlement: request.settlement,
        memo: request.memo ?? null,
        note,
        now,
      }),
      ...(reservation?.statements(written) ?? []),
      ...(request.settlement === "REDUCE" ? this.paidWhenNothingDue(invoice.id, written, now) : []),
      auditStatement(
        this.d1,
        this.audit,
        {
          tenantId: invoice.tenantId,
          action: "credit_note.created",
          targetType: "credit_note",
          targetId: id,
          changes: {
            invoiceId: { after: invoice.id },
            reason: { after: request.reason },
            settlement: { after: request.settlement },
            total: { after: note.total },
            currency: { after: invoice.currency },
          },
        },
        { now, when: written },
      ),
      tenantEventFromRowStatement(this.d1, "credit_note.created", creditNoteEventRow(id), {
        now,
        id: `evt_credit_note_created_${id}`,
      }),
      ...then(id),
    ];
    const results = await this.d1.batch(statements);
    if ((results[0]?.meta.changes ?? 0) !== 1) {
      await reservation?.release();
      return null;
    }
    await reservation?.written();
    return id;
  }

  async get(context: TenantScoped, id: string) {
    const note = await findCreditNote(this.db, context.tenant.id, id);
    if (!note) throw noteNotFound();
    return creditNoteView(note, await linesOf(this.db, [note.id]));
  }

  async list(context: TenantScoped, page: PageRequest, filter: { invoiceId?: string | undefined }) {
    const { rows, total } = await listCreditNotes(
      this.db,
      context.tenant.id,
      filter,
      pageOffset(page),
      page.limit,
    );
    const lines = await linesOf(
      this.db,
      rows.map((row) => row.id),
    );
    return { data: rows.map((row) => creditNoteView(row, lines)), meta: pageMeta(page, total) };
  }

  /** The scheduled retry of refunds the provider could not be asked for (idempotent on the note). */
  async sendUnsentRefunds(now: Date = new Date()): Promise<number> {
    let sent = 0;
    for (const pending of await unsentRefunds(this.d1, REFUND_RETRY_BATCH)) {
      const note = await findCreditNoteById(this.db, pending.id);
      if (!note) continue;
      const reference = await paymentReferenceOf(this.db, note.invoiceId);
      if (reference && (await this.refund(pending.id, reference, now))) sent++;
    }
    return sent;
  }

  /**
   * Asks the provider to return the note's total on the payment, keyed by
   * the note's id (a retry is the same refund), and records the outcome.
   * An unreachable provider leaves the refund PENDING for the scheduled run.
   */
  private async refund(
    creditNoteId: string,
    paymentReference: string,
    now: Date,
  ): Promise<boolean> {
    const note = await findCreditNoteById(this.db, creditNoteId);
    if (note?.refundStatus !== "PENDING") return false;
    let answer: Awaited<ReturnType<PaymentProvider["createRefund"]>>;
    try {
      answer = await this.provider.createRefund({
        providerPaymentId: paymentReference,
        amount: note.total,
        currency: note.currency,
        idempotencyKey: note.id,
        metadata: { creditNoteId: note.id, invoiceId: note.invoiceId, tenantId: note.tenantId },
      });
    } catch (error) {
      if (error instanceof ProviderUnavailableError) return false;
      throw error;
    }
    const status =
      answer.status === "succeeded"
        ? "SUCCEEDED"
        : answer.status === "failed"
          ? "FAILED"
          : "PENDING";
    await this.d1.batch(
      this.refundOutcome(note, status, answer.providerRefundId, answer.failureReason, now),
    );
    return status !== "PENDING";
  }

  private refundOutcome(
    note: CreditNoteRow,
    status: "SUCCEEDED" | "FAILED" | "PENDING",
    reference: string,
    failureReason: string | null,
    now: Date,
  ) {
    const at = now.toISOString();
    const reached = {
      sql: "EXISTS (SELECT 1 FROM credit_notes WHERE id = ? AND refund_status = ? AND updated_at = ?)",
      params: [note.id, status, at],
    };
    const statements = refundOutcomeStatements(
      this.d1,
      note.id,
      { status, reference, failureReason },
      now,
    );
    if (status === "PENDING") return statements;
    const type = status === "SUCCEEDED" ? "refund.succeeded" : "refund.failed";
    return [
      ...statements,
      auditStatement(
        this.d1,
        {
          actor: { type: "provider", id: this.provider.name },
          correlationId: this.audit.correlationId,
        },
        {
          tenantId: note.tenantId,
          action: type,
          targetType: "credit_note",
          targetId: note.id,
          changes: {
            refundStatus: { before: "PENDING", after: status },
            amount: { after: note.total },
            ...(failureReason ? { failureReason: { after: failureReason } } : {}),
          },
        },
        { now, when: reached },
      ),
    ];
  }

  private async reserveTopUp(
    invoice: { id: string; tenantId: string; invoiceNumber: string | null },
    total: number,
    now: Date,
  ): Promise<TakeBackReservation | null> {
    const reserved = await this.topUps.reserve(invoice.tenantId, invoice.id, total, now);
    if (reserved && "unspentPaidCents" in reserved) {
      throw new ApiError(
        409,
        `Only ${reserved.unspentPaidCents} cents of the credit bought by ${invoice.invoiceNumber} are unspent; a credit note on a TOP_UP invoice can credit at most that`,
      );
    }
    return reserved;
  }

  /** A REDUCE note that leaves nothing due settles the invoice (PAID without a payment). */
  private paidWhenNothingDue(invoiceId: string, written: RawCondition, now: Date) {
    return [
      ...payStatements(
        this.d1,
        invoiceId,
        now,
        { attemptId: null, externalReference: null },
        { sql: `total - reduced_total = 0 AND ${written.sql}`, params: written.params },
      ),
      invoiceEventStatement(this.d1, "invoice.paid", invoiceId, "PAID", now),
    ];
  }

  /** Why a note the first read allowed was not written: what the invoice says now, or a race. */
  private async refusedMeanwhile(tenantId: string, invoiceId: string, request: CreditNoteRequest) {
    const now = await readCreditableInvoice(this.d1, tenantId, invoiceId);
    const plan = now ? planCreditNote(now, request) : null;
    if (plan && !plan.ok) return new ApiError(plan.status, plan.message);
    return new ApiError(409, "The invoice changed while the credit note was written; try again");
  }
}
