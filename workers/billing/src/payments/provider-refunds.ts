import type { PaymentEvent } from "./domain/payment.ts";
import type { PaymentOutcome } from "./domain/provider-answer.ts";
import type { InvoiceRow } from "./invoice-settlement-storage.ts";
import { availableCreditOf, refundStatement } from "./ledger-storage.ts";
import {
  type RefundState,
  refundEntryStatement,
  refundOutcomeStatements,
  refundStateOf,
} from "./refund-storage.ts";

type RefundEvent = Extract<PaymentEvent, { type: "charge.refunded" }>;

/**
 * Told how many cents of a paid TOP_UP invoice the provider refunded (and
 * the refund's reference, the same on a retry): as much of its grant goes
 * as is unspent, with a credit note for it. Answers the cents it covered.
 */
export type RefundedTopUp = (
  invoice: InvoiceRow,
  paidCents: number,
  reference: string,
  now: Date,
) => Promise<number>;

/**
 * A refund the provider reports (cumulative on the payment), whatever the
 * invoice's status: only what it adds to the refunds recorded for that
 * payment is written. Of the payment that paid the invoice, a refund first
 * completes the invoice's REFUND credit notes still waiting (oldest first);
 * on a TOP_UP invoice the unspent part of its grant is taken back with a
 * credit note; then it takes back what the invoice's credit notes put on
 * the credit balance, as far as the balance holds it; the rest is a REFUND
 * the tenant owes again. What a payment put on the credit balance (its
 * invoice no longer needed it, or it was more than was due) comes out of
 * that balance, as far as the balance still holds it.
 */
export async function applyProviderRefund(
  d1: D1Database,
  invoice: InvoiceRow,
  event: RefundEvent,
  now: Date,
  refundedTopUp: RefundedTopUp,
): Promise<PaymentOutcome> {
  const state = await refundStateOf(d1, invoice.id, event.providerPaymentId);
  if (state.paid === null && state.credited === null) {
    return {
      changed: false,
      note: "the payment neither paid the invoice nor left credit: nothing to refund",
    };
  }
  const paid = state.paid ?? 0;
  const ofPayment =
    state.paid === null
      ? 0
      : await refundOfPayment(
          d1,
          invoice,
          event,
          state,
          Math.min(event.amountRefunded, paid),
          now,
          refundedTopUp,
        );
  const ofCredit =
    state.credited === null || event.amountRefunded <= paid
      ? 0
      : await refundOfCredit(
          d1,
          invoice,
          event,
          state,
          Math.min(event.amountRefunded - paid, state.credited),
          now,
        );
  if (ofPayment + ofCredit === 0) return { changed: false, note: "refund already recorded" };
  return { changed: true, note: `refunded ${ofPayment + ofCredit}` };
}

/** The refund of the paying payment up to `cumulative` (at most what it paid); answers the cents it added. */
async function refundOfPayment(
  d1: D1Database,
  invoice: InvoiceRow,
  event: RefundEvent,
  state: RefundState,
  cumulative: number,
  now: Date,
  refundedTopUp: RefundedTopUp,
): Promise<number> {
  const added = cumulative - state.refunded - state.noteCreditRefunded;
  let left = added;
  if (left <= 0) return 0;
  const statements: D1PreparedStatement[] = [];
  for (const note of state.pendingNotes) {
    if (note.total > left) break;
    left -= note.total;
    statements.push(
      ...refundOutcomeStatements(
        d1,
        note.id,
        { status: "SUCCEEDED", reference: event.reference, failureReason: null },
        now,
      ),
    );
  }
  if (statements.length > 0) await d1.batch(statements);
  const reference = `${event.reference}:${cumulative}`;
  if (left > 0 && invoice.kind === "TOP_UP")
    left -= await refundedTopUp(invoice, left, reference, now);
  const available = Math.max(0, await availableCreditOf(d1, invoice.tenantId, invoice.currency));
  const ofNotes = Math.max(0, Math.min(left, state.notesCredited - state.noteCreditRefunded));
  const fromBalance = Math.min(ofNotes, available);
  const at = now.toISOString();
  const noteEntry = (kind: string, cents: number, description: string) =>
    refundEntryStatement(d1, {
      tenantId: invoice.tenantId,
      invoiceId: invoice.id,
      amount: cents,
      currency: invoice.currency,
      reference: `${kind}:note:${invoice.id}:${cumulative}`,
      description,
      now: at,
    });
  await d1.batch([
    noteEntry(
      "credit-refund",
      fromBalance,
      `Refund for invoice ${invoice.invoiceNumber} out of the credit its credit notes gave`,
    ),
    noteEntry(
      "credit-refund-owed",
      ofNotes - fromBalance,
      `Refund for invoice ${invoice.invoiceNumber} of credit its credit notes gave, already spent`,
    ),
    refundStatement(d1, {
      invoiceId: invoice.id,
      amount: left - ofNotes,
      reference,
      description: `Refund for invoice ${invoice.invoiceNumber}`,
      now: at,
    }),
  ]);
  return added;
}

/** The refund of what the payment put on the credit balance, up to `cumulative`; answers the cents it added. */
async function refundOfCredit(
  d1: D1Database,
  invoice: InvoiceRow,
  event: RefundEvent,
  state: RefundState,
  cumulative: number,
  now: Date,
): Promise<number> {
  const amount = cumulative - state.creditRefunded;
  if (amount <= 0) return 0;
  const available = Math.max(0, await availableCreditOf(d1, invoice.tenantId, invoice.currency));
  const fromBalance = Math.min(amount, available);
  const at = now.toISOString();
  const entry = (kind: string, cents: number, description: string) =>
    refundEntryStatement(d1, {
      tenantId: invoice.tenantId,
      invoiceId: invoice.id,
      amount: cents,
      currency: invoice.currency,
      reference: `${kind}:${event.providerPaymentId}:${cumulative}`,
      description,
      now: at,
    });
  await d1.batch([
    entry("credit-refund", fromBalance, "Refund out of the credit balance"),
    entry(
      "credit-refund-owed",
      amount - fromBalance,
      "Refund of credit balance already applied to invoices",
    ),
  ]);
  return amount;
}
