import type {
  CreditNoteReason,
  CreditNoteSettlement,
  InvoiceKind,
  InvoiceStatus,
  LineItemKind,
} from "@edge-platform/shared/db/schema/billing";

/*
 * What a credit note may credit, decided from one read of the invoice. The
 * same bounds are written into the note's INSERT as conditions, so a note
 * that raced another is refused by the database, not by this read.
 */

export interface CreditNoteRequest {
  reason: CreditNoteReason;
  settlement: CreditNoteSettlement;
  lines: { lineItemId: string; amount: number }[];
  memo?: string | undefined;
}

/** The invoice as the rules need it: its amounts, lines and what earlier notes and refunds took. */
export interface CreditableInvoice {
  status: InvoiceStatus;
  kind: InvoiceKind;
  invoiceNumber: string | null;
  subtotal: number;
  discount: number;
  tax: number;
  total: number;
  creditedTotal: number;
  reducedTotal: number;
  /** Tax of the invoice's earlier credit notes. */
  taxCredited: number;
  /** What its PAYMENT took (0 when unpaid) and the provider payment behind it (null: paid outside the provider). */
  paid: number;
  paymentReference: string | null;
  /** Everything refunded on it so far: REFUND entries and REFUND notes still pending. */
  refunded: number;
  /** Refunds the provider made outside its credit notes, owed again: they use up what is left to credit. */
  refundedOutsideNotes: number;
  /** A payment attempt is waiting at the provider for the amount due as it was. */
  paymentInFlight: boolean;
  lines: {
    id: string;
    kind: LineItemKind;
    description: string;
    amount: number;
    /** Cents earlier credit notes took off this line. */
    credited: number;
  }[];
}

export interface PlannedCreditNote {
  subtotal: number;
  tax: number;
  total: number;
  lines: { lineItemId: string; description: string; amount: number }[];
}

export type CreditNotePlan =
  | { ok: true; note: PlannedCreditNote }
  | { ok: false; status: 400 | 409; message: string };

/** Lines that are charges: discounts, tax, applied credit and credits are not credited on their own. */
export const CREDITABLE_LINE_KINDS: readonly LineItemKind[] = ["BASE", "USAGE", "CREDIT_PURCHASE"];

/** Where each settlement is allowed: REDUCE lowers what is due, REFUND returns what was paid. */
const SETTLEMENT_STATUSES: Record<CreditNoteSettlement, readonly InvoiceStatus[]> = {
  REDUCE: ["OPEN"],
  REFUND: ["PAID"],
  CREDIT: ["OPEN", "PAID"],
};

/** round_half_up(a x b / c) for non-negative integers, exactly. */
export function proportionHalfUp(a: number, b: number, c: number): number {
  if (c <= 0) return 0;
  const numerator = BigInt(a) * BigInt(b) * 2n + BigInt(c);
  return Number(numerator / (BigInt(c) * 2n));
}

/**
 * Tax credited with `subtotal`: the invoice's tax in proportion to its
 * taxable amount (subtotal less discount), rounded half up once, never more
 * than the tax its earlier notes left.
 */
export function creditedTax(invoice: CreditableInvoice, subtotal: number): number {
  const taxable = invoice.subtotal - invoice.discount;
  const share = proportionHalfUp(subtotal, invoice.tax, taxable);
  return Math.max(0, Math.min(share, invoice.tax - invoice.taxCredited));
}

const refuse = (status: 400 | 409, message: string): CreditNotePlan => ({
  ok: false,
  status,
  message,
});

function statusRefusal(invoice: CreditableInvoice, settlement: CreditNoteSettlement) {
  const name = invoice.invoiceNumber ?? "the invoice";
  if (invoice.status !== "OPEN" && invoice.status !== "PAID") {
    return refuse(
      409,
      `Credit notes are issued on OPEN or PAID invoices; ${name} is ${invoice.status}`,
    );
  }
  if (!SETTLEMENT_STATUSES[settlement].includes(invoice.status)) {
    const needs = SETTLEMENT_STATUSES[settlement].join(" or ");
    return refuse(
      409,
      `A ${settlement} credit note needs an invoice that is ${needs}; ${name} is ${invoice.status}`,
    );
  }
  if (invoice.kind === "TOP_UP" && invoice.status !== "PAID") {
    return refuse(409, `${name} is an unpaid TOP_UP invoice: void it instead`);
  }
  if (settlement === "REDUCE" && invoice.paymentInFlight) {
    return refuse(409, `A payment of ${name} is in progress at the provider: wait for its outcome`);
  }
  if (settlement === "REFUND" && !invoice.paymentReference) {
    return refuse(
      409,
      `${name} was paid outside the payment provider: issue a CREDIT note instead`,
    );
  }
  return null;
}

function plannedLines(invoice: CreditableInvoice, request: CreditNoteRequest) {
  const seen = new Set<string>();
  const lines: PlannedCreditNote["lines"] = [];
  for (const wanted of request.lines) {
    if (seen.has(wanted.lineItemId)) {
      return refuse(400, `lines: line ${wanted.lineItemId} is named twice`);
    }
    seen.add(wanted.lineItemId);
    const line = invoice.lines.find((candidate) => candidate.id === wanted.lineItemId);
    if (!line) return refuse(400, `lines: ${wanted.lineItemId} is not a line of this invoice`);
    if (!CREDITABLE_LINE_KINDS.includes(line.kind) || line.amount <= 0) {
      return refuse(
        400,
        `lines: line ${line.id} (${line.kind}) is not a charge and cannot be credited`,
      );
    }
    const left = line.amount - line.credited;
    if (wanted.amount > left) {
      return refuse(
        409,
        `lines: line ${line.id} has ${left} cents left to credit; ${wanted.amount} asked`,
      );
    }
    lines.push({ lineItemId: line.id, description: line.description, amount: wanted.amount });
  }
  return lines;
}

/** The note `request` makes on `invoice`, or why it cannot be made. */
export function planCreditNote(
  invoice: CreditableInvoice,
  request: CreditNoteRequest,
): CreditNotePlan {
  const refused = statusRefusal(invoice, request.settlement);
  if (refused) return refused;
  const lines = plannedLines(invoice, request);
  if (!Array.isArray(lines)) return lines;
  const subtotal = lines.reduce((sum, line) => sum + line.amount, 0);
  const tax = creditedTax(invoice, subtotal);
  const total = subtotal + tax;
  const creditable = invoice.total - invoice.creditedTotal - invoice.refundedOutsideNotes;
  if (total > creditable) {
    const refunded = invoice.refundedOutsideNotes
      ? `, refunded at the provider ${invoice.refundedOutsideNotes}`
      : "";
    return refuse(
      409,
      `The invoice has ${creditable} cents left to credit (total ${invoice.total}, credited ${invoice.creditedTotal}${refunded}); this note is ${total}`,
    );
  }
  if (request.settlement === "REFUND" && total > invoice.paid - invoice.refunded) {
    return refuse(
      409,
      `At most ${invoice.paid - invoice.refunded} cents of the payment are left to refund; this note is ${total}`,
    );
  }
  return { ok: true, note: { subtotal, tax, total, lines } };
}
