import { degrees, type PDFFont, type PDFPage, rgb } from "pdf-lib";
import { formatCents, MICRO_CENTS_PER_CENT } from "../../platform/index.ts";
import {
  day,
  drawFacts,
  drawFooters,
  drawNotes,
  drawParties,
  drawTotals,
  type InvoiceParty,
  LEFT,
  MUTED,
  RIGHT,
  startDocument,
  type TotalRow,
  Writer,
} from "./pdf-writer.ts";

export { type InvoiceParty, winAnsiSafe } from "./pdf-writer.ts";

/**
 * An invoice as a one-or-more-page A4 PDF, drawn with pdf-lib's standard
 * fonts (nothing embedded, nothing fetched). Amounts are the invoice's own
 * integer cents, printed as stored: nothing is recomputed here.
 */

export interface InvoicePdfLine {
  kind: string;
  description: string;
  quantity: number;
  unitPriceMicroCents: number;
  amount: number;
}

export interface InvoicePdfInput {
  invoiceNumber: string | null;
  status: string;
  kind: string;
  currency: string;
  subtotal: number;
  discount: number;
  tax: number;
  taxRate: number | null;
  total: number;
  periodStart: string;
  periodEnd: string;
  dueDate: string | null;
  finalizedAt: string | null;
  paidAt: string | null;
  voidedAt: string | null;
  createdAt: string;
  notes: string | null;
  lineItems: InvoicePdfLine[];
}

/** Lines that are charges; DISCOUNT, TAX and CREDIT_APPLIED are shown as totals. */
const TOTAL_KINDS = new Set(["DISCOUNT", "TAX", "CREDIT_APPLIED"]);

/** Micro-cents as currency units with as many decimals as needed (at most 4). */
function unitPrice(microCents: number, currency: string): string {
  const cents = microCents / Number(MICRO_CENTS_PER_CENT);
  const major = cents / 100;
  const decimals = Number.isInteger(cents) ? 2 : 4;
  return `${major.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: decimals })} ${currency.toUpperCase()}`;
}

/** Right edges of the line-item table's number columns. */
const COLUMNS = { quantity: RIGHT - 165, unit: RIGHT - 85, amount: RIGHT };

export async function renderInvoicePdf(
  invoice: InvoicePdfInput,
  seller: InvoiceParty,
  buyer: InvoiceParty,
): Promise<Uint8Array> {
  const title = invoice.invoiceNumber ? `Invoice ${invoice.invoiceNumber}` : "Draft invoice";
  const { doc, regular, bold } = await startDocument(title, seller, buyer);
  const w = new Writer(doc, regular, bold, watermark(invoice.status, bold));
  drawHeading(w, invoice);
  drawParties(w, seller, buyer);
  drawFacts(w, invoiceFacts(invoice));
  drawLineItems(w, invoice);
  drawTotals(w, invoiceTotals(invoice), invoice.currency);
  if (invoice.notes) drawNotes(w, invoice.notes);
  drawFooters(doc, `${title} - ${seller.name}`, regular);
  return doc.save();
}

/** What each new page gets drawn first: a VOID or DRAFT stamp, or nothing. */
function watermark(status: string, bold: PDFFont): (page: PDFPage) => void {
  const stamp = status === "VOID" || status === "DRAFT" ? status : null;
  return (page) => {
    if (!stamp) return;
    // Across every page, so no page of a VOID invoice can pass for a valid one.
    page.drawText(stamp, {
      x: 150,
      y: 300,
      size: 120,
      font: bold,
      color: rgb(0.85, 0.1, 0.1),
      opacity: 0.18,
      rotate: degrees(35),
    });
  };
}

function drawHeading(w: Writer, invoice: InvoicePdfInput): void {
  w.text(invoice.invoiceNumber ? "INVOICE" : "DRAFT INVOICE", LEFT, { size: 22, bold: true });
  w.text(`Status: ${invoice.status}`, RIGHT, { size: 12, bold: true, right: true });
  w.y -= 18;
  if (invoice.status === "VOID") {
    w.text(
      `VOID since ${day(invoice.voidedAt)}: this invoice is cancelled and nothing is owed on it.`,
      LEFT,
      { size: 10, bold: true, color: rgb(0.7, 0.05, 0.05) },
    );
    w.y -= 14;
  }
  w.y -= 12;
}

function invoiceFacts(invoice: InvoicePdfInput): [string, string][] {
  const facts: [string, string][] = [
    ["Invoice number", invoice.invoiceNumber ?? "not numbered until finalized"],
    ["Issued", day(invoice.finalizedAt ?? invoice.createdAt)],
    ["Service period", `${day(invoice.periodStart)} to ${day(invoice.periodEnd)}`],
    ["Due", day(invoice.dueDate)],
    ["Currency", invoice.currency.toUpperCase()],
  ];
  if (invoice.paidAt) facts.push(["Paid", day(invoice.paidAt)]);
  if (invoice.voidedAt) facts.push(["Voided", day(invoice.voidedAt)]);
  return facts;
}

function drawTableHeader(w: Writer): void {
  w.text("Description", LEFT, { size: 9, bold: true, color: MUTED });
  w.text("Qty", COLUMNS.quantity, { size: 9, bold: true, color: MUTED, right: true });
  w.text("Unit price", COLUMNS.unit, { size: 9, bold: true, color: MUTED, right: true });
  w.text("Amount", COLUMNS.amount, { size: 9, bold: true, color: MUTED, right: true });
  w.y -= 6;
  w.rule();
  w.y -= 14;
}

function drawLineItems(w: Writer, invoice: InvoicePdfInput): void {
  drawTableHeader(w);
  const charges = invoice.lineItems.filter((line) => !TOTAL_KINDS.has(line.kind));
  if (charges.length === 0) {
    w.text("No charges in this period.", LEFT, { size: 10, color: MUTED });
    w.y -= 16;
  }
  for (const line of charges) drawCharge(w, line, invoice.currency);
  w.y += 6;
  w.rule();
  w.y -= 16;
}

function drawCharge(w: Writer, line: InvoicePdfLine, currency: string): void {
  const wrapped = w.wrap(line.description, COLUMNS.quantity - LEFT - 30, 9);
  w.need(14 * wrapped.length + 4);
  // A row that moved to a fresh page repeats the table header above it.
  if (w.atPageTop()) drawTableHeader(w);
  w.text(wrapped[0] ?? "", LEFT, { size: 9 });
  w.text(line.quantity.toLocaleString("en-US"), COLUMNS.quantity, { right: true });
  w.text(unitPrice(line.unitPriceMicroCents, currency), COLUMNS.unit, { right: true });
  w.text(formatCents(line.amount, currency), COLUMNS.amount, { right: true });
  for (const more of wrapped.slice(1)) {
    w.y -= 12;
    w.text(more, LEFT, { size: 9 });
  }
  w.y -= 16;
}

/** The totals as the invoice carries them: nothing is recomputed from the lines but credits. */
function invoiceTotals(invoice: InvoicePdfInput): TotalRow[] {
  const credits = invoice.lineItems
    .filter((line) => line.kind === "CREDIT_APPLIED")
    .reduce((sum, line) => sum + line.amount, 0);
  const totals: TotalRow[] = [["Subtotal", invoice.subtotal, false]];
  if (invoice.discount !== 0) totals.push(["Discount", -invoice.discount, false]);
  if (invoice.tax !== 0 || invoice.taxRate !== null) {
    totals.push([
      invoice.taxRate !== null ? `Tax (${invoice.taxRate}%)` : "Tax",
      invoice.tax,
      false,
    ]);
  }
  if (credits !== 0) totals.push(["Credit applied", credits, false]);
  totals.push([invoice.status === "VOID" ? "Total (void)" : "Total due", invoice.total, true]);
  return totals;
}
