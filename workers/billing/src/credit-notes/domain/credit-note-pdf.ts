import type {
  CreditNoteReason,
  CreditNoteSettlement,
  RefundStatus,
} from "@edge-platform/shared/db/schema/billing";
import { type InvoiceParty, documentPdf as pdf } from "../../invoicing/index.ts";
import { formatCents } from "../../platform/index.ts";

/**
 * A credit note as an A4 PDF in the invoice's look (same page, fonts,
 * parties and totals). Amounts are the note's own integer cents, printed as
 * stored: nothing is recomputed here.
 */

export interface CreditNotePdfInput {
  number: string;
  invoiceId: string;
  /** The corrected invoice's number (null only if it could not be read). */
  invoiceNumber: string | null;
  reason: CreditNoteReason;
  settlement: CreditNoteSettlement;
  currency: string;
  subtotal: number;
  tax: number;
  total: number;
  memo: string | null;
  refundStatus: RefundStatus | null;
  refundFailureReason: string | null;
  createdAt: string;
  lines: { description: string; amount: number }[];
}

const REASON_WORDS: Record<CreditNoteReason, string> = {
  DUPLICATE: "Duplicate charge",
  PRODUCT_UNSATISFACTORY: "Product unsatisfactory",
  ORDER_CHANGE: "Order changed",
  FRAUDULENT: "Fraudulent charge",
  OTHER: "Other",
};

const SETTLEMENT_WORDS: Record<CreditNoteSettlement, string> = {
  REDUCE: "Lowers the amount due on the invoice",
  REFUND: "Refunded to the payment method the invoice was paid with",
  CREDIT: "Added to the credit balance for later invoices",
};

/** How a REFUND note's refund stands, in words; FAILED says where the money went instead. */
function refundWords(note: Pick<CreditNotePdfInput, "refundStatus" | "refundFailureReason">) {
  switch (note.refundStatus) {
    case "SUCCEEDED":
      return "Refunded";
    case "FAILED":
      return `Failed${note.refundFailureReason ? ` (${note.refundFailureReason})` : ""}: the amount stays on the credit balance`;
    case "PENDING":
      return "Pending at the payment provider";
    default:
      return "-";
  }
}

export async function renderCreditNotePdf(
  note: CreditNotePdfInput,
  seller: InvoiceParty,
  buyer: InvoiceParty,
): Promise<Uint8Array> {
  const title = `Credit note ${note.number}`;
  const { doc, regular, bold } = await pdf.startDocument(title, seller, buyer);
  const w = new pdf.Writer(doc, regular, bold);
  drawHeading(w, note);
  pdf.drawParties(w, seller, buyer, "CREDIT TO");
  pdf.drawFacts(w, creditNoteFacts(note));
  drawLines(w, note);
  pdf.drawTotals(
    w,
    [
      ["Subtotal", note.subtotal, false],
      ["Tax", note.tax, false],
      ["Total credited", note.total, true],
    ],
    note.currency,
  );
  if (note.memo) pdf.drawNotes(w, note.memo, "Memo");
  pdf.drawFooters(doc, `${title} - ${seller.name}`, regular);
  return doc.save();
}

function correctedInvoice(note: CreditNotePdfInput): string {
  return note.invoiceNumber ?? `invoice ${note.invoiceId}`;
}

function drawHeading(w: pdf.Writer, note: CreditNotePdfInput): void {
  w.text("CREDIT NOTE", pdf.LEFT, { size: 22, bold: true });
  w.text(note.number, pdf.RIGHT, { size: 12, bold: true, right: true });
  w.y -= 18;
  w.text(`Corrects invoice ${correctedInvoice(note)}`, pdf.LEFT, { size: 10, bold: true });
  w.y -= 26;
}

function creditNoteFacts(note: CreditNotePdfInput): [string, string][] {
  const facts: [string, string][] = [
    ["Credit note", note.number],
    ["Issued", pdf.day(note.createdAt)],
    ["Invoice", correctedInvoice(note)],
    ["Reason", REASON_WORDS[note.reason] ?? note.reason],
    ["Settlement", SETTLEMENT_WORDS[note.settlement] ?? note.settlement],
  ];
  if (note.settlement === "REFUND") facts.push(["Refund", refundWords(note)]);
  facts.push(["Currency", note.currency.toUpperCase()]);
  return facts;
}

function drawLines(w: pdf.Writer, note: CreditNotePdfInput): void {
  const header = () => {
    w.text("Invoice line credited", pdf.LEFT, { size: 9, bold: true, color: pdf.MUTED });
    w.text("Amount", pdf.RIGHT, { size: 9, bold: true, color: pdf.MUTED, right: true });
    w.y -= 6;
    w.rule();
    w.y -= 14;
  };
  header();
  for (const line of note.lines) {
    const wrapped = w.wrap(line.description, pdf.RIGHT - pdf.LEFT - 120, 9);
    w.need(14 * wrapped.length + 4);
    if (w.atPageTop()) header();
    w.text(wrapped[0] ?? "", pdf.LEFT, { size: 9 });
    w.text(formatCents(line.amount, note.currency), pdf.RIGHT, { right: true });
    for (const more of wrapped.slice(1)) {
      w.y -= 12;
      w.text(more, pdf.LEFT, { size: 9 });
    }
    w.y -= 16;
  }
  w.y += 6;
  w.rule();
  w.y -= 16;
}
