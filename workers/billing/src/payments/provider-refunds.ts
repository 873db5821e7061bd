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
 * payment is written. On the payment that paid the invoice it first settles
 * the invoice's REFUND credit notes still waiting (oldest first); on a
 * TOP_UP invoice the unspent part of its grant is taken back with a credit
 * note; the rest is a REFUND the tenant owes again. On a payment that became credit balance it
 * comes out of that balance, as far as the balance still holds it.
 */
export async function applyProviderRefund(
  d1: D1Database,
  invoice: InvoiceRow,
  event: RefundEvent,
  now: Date,
  refundedTopUp: RefundedTopUp,
): Promise<PaymentOutcome> {
  const state = await refundStateOf(d1, invoice.id, event.providerPaymentId);
  if (state.paid !== null) return refundOfPayment(d1, invoice, event, state, now, refundedTopUp);
  if (state.credited !== null) return refundOfCredit(d1, invoice, event, state, now);
  return {
    changed: false,
    note: "the payment neither paid the invoice nor left credit: nothing to refund",
  };
}

async function refundOfPayment(
  d1: D1Database,
  invoice: InvoiceRow,
  event: RefundEvent,
  state: RefundState,
  now: Date,
  refundedTopUp: RefundedTopUp,
): Promise<PaymentOutcome> {
  const cumulative = Math.min(event.amountRefunded, state.paid ?? 0);
  let left = cumulative - state.refunded;
  if (left <= 0) return { changed: false, note: "refund already recorded" };
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
  const covered =
    left > 0 && invoice.kind === "TOP_UP" ? await refundedTopUp(invoice, left, reference, now) : 0;
  await refundStatement(d1, {
    invoiceId: invoice.id,
    amount: left - covered,
    reference,
    description: `Refund for invoice ${invoice.invoiceNumber}`,
    now: now.toISOString(),
  }).run();
  return { changed: true, note: `refunded ${cumulative - state.refunded}` };
}

async function refundOfCredit(
  d1: D1Database,
  invoice: InvoiceRow,
  event: RefundEvent,
  state: RefundState,
  now: Date,
): Promise<PaymentOutcome> {
  const cumulative = Math.min(event.amountRefunded, state.credited ?? 0);
  const amount = cumulative - state.creditRefunded;
  if (amount <= 0) return { changed: false, note: "refund already recorded" };
  const available = Math.max(0, await availableCreditOf(d1, invoice.tenantId, invoice.currency));
  const fromBalance = Math.min(amount, available);
  const entry = (kind: string, cents: number, description: string) =>
    refundEntryStatement(d1, {
      tenantId: invoice.tenantId,
      invoiceId: invoice.id,
      amount: cents,
      currency: invoice.currency,
      reference: `${kind}:${event.providerPaymentId}:${cumulative}`,
      description,
      now: now.toISOString(),
    });
  await d1.batch([
    entry("credit-refund", fromBalance, "Refund out of the credit balance"),
    entry(
      "credit-refund-owed",
      amount - fromBalance,
      "Refund of credit balance already applied to invoices",
    ),
  ]);
  return { changed: true, note: `refunded ${amount} (${fromBalance} out of the credit balance)` };
}
