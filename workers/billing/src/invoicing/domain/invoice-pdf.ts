import { degrees, PDFDocument, type PDFFont, type PDFPage, rgb, StandardFonts } from "pdf-lib";
import { formatCents, MICRO_CENTS_PER_CENT } from "../../platform/index.ts";

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

export interface InvoiceParty {
  name: string;
  lines: string[];
}

/** Lines that are charges; DISCOUNT, TAX and CREDIT_APPLIED are shown as totals. */
const TOTAL_KINDS = new Set(["DISCOUNT", "TAX", "CREDIT_APPLIED"]);

const PAGE = { width: 595.28, height: 841.89, margin: 50 };
const INK = rgb(0.1, 0.1, 0.12);
const MUTED = rgb(0.38, 0.38, 0.42);
const RULE = rgb(0.8, 0.8, 0.84);

/** Standard fonts speak WinAnsi only: anything else becomes "?" rather than failing the render. */
export function winAnsiSafe(text: string): string {
  return text
    .normalize("NFKC")
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/[\u2013\u2014]/g, "-")
    .replace(/[^\x20-\x7e\xa0-\xff\u20ac\n]/g, "?");
}

function day(iso: string | null): string {
  return iso ? iso.slice(0, 10) : "-";
}

/** Micro-cents as currency units with as many decimals as needed (at most 4). */
function unitPrice(microCents: number, currency: string): string {
  const cents = microCents / Number(MICRO_CENTS_PER_CENT);
  const major = cents / 100;
  const decimals = Number.isInteger(cents) ? 2 : 4;
  return `${major.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: decimals })} ${currency.toUpperCase()}`;
}

class Writer {
  page!: PDFPage;
  y = 0;
  constructor(
    private readonly doc: PDFDocument,
    readonly regular: PDFFont,
    readonly bold: PDFFont,
    private readonly onNewPage: (page: PDFPage) => void,
  ) {
    this.newPage();
  }

  newPage(): void {
    this.page = this.doc.addPage([PAGE.width, PAGE.height]);
    this.y = PAGE.height - PAGE.margin;
    this.onNewPage(this.page);
  }

  /** Room for `height` more points, or a new page. */
  need(height: number): void {
    if (this.y - height < PAGE.margin + 20) this.newPage();
  }

  text(
    value: string,
    x: number,
    options: {
      size?: number;
      bold?: boolean;
      color?: ReturnType<typeof rgb>;
      right?: boolean;
    } = {},
  ): void {
    const font = options.bold ? this.bold : this.regular;
    const size = options.size ?? 10;
    const safe = winAnsiSafe(value);
    const at = options.right ? x - font.widthOfTextAtSize(safe, size) : x;
    this.page.drawText(safe, { x: at, y: this.y, size, font, color: options.color ?? INK });
  }

  /** Wraps `value` into lines of at most `width` points. */
  wrap(value: string, width: number, size = 10): string[] {
    const words = winAnsiSafe(value).split(/\s+/).filter(Boolean);
    const lines: string[] = [];
    let current = "";
    for (const word of words) {
      const next = current ? `${current} ${word}` : word;
      if (current && this.regular.widthOfTextAtSize(next, size) > width) {
        lines.push(current);
        current = word;
      } else current = next;
    }
    if (current) lines.push(current);
    return lines.length > 0 ? lines : [""];
  }

  rule(): void {
    this.page.drawLine({
      start: { x: PAGE.margin, y: this.y },
      end: { x: PAGE.width - PAGE.margin, y: this.y },
      thickness: 0.7,
      color: RULE,
    });
  }
}

const LEFT = PAGE.margin;
const RIGHT = PAGE.width - PAGE.margin;
/** Right edges of the line-item table's number columns. */
const COLUMNS = { quantity: RIGHT - 165, unit: RIGHT - 85, amount: RIGHT };

/** A row of the totals block: label, signed cents, and whether it is the amount due. */
type TotalRow = [label: string, amount: number, strong: boolean];

export async function renderInvoicePdf(
  invoice: InvoicePdfInput,
  seller: InvoiceParty,
  buyer: InvoiceParty,
): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const title = invoice.invoiceNumber ? `Invoice ${invoice.invoiceNumber}` : "Draft invoice";
  describeDocument(doc, title, seller, buyer);
  const regular = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
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

function describeDocument(
  doc: PDFDocument,
  title: string,
  seller: InvoiceParty,
  buyer: InvoiceParty,
): void {
  doc.setTitle(winAnsiSafe(title));
  doc.setAuthor(winAnsiSafe(seller.name));
  doc.setSubject(winAnsiSafe(`${title} for ${buyer.name}`));
  doc.setCreator("Billing and usage API");
  doc.setProducer("pdf-lib");
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

/** Seller and tenant, side by side; continues below the taller of the two. */
function drawParties(w: Writer, seller: InvoiceParty, buyer: InvoiceParty): void {
  const top = w.y;
  const party = (label: string, who: InvoiceParty, x: number) => {
    w.y = top;
    w.text(label, x, { size: 8, bold: true, color: MUTED });
    w.y -= 14;
    w.text(who.name, x, { size: 11, bold: true });
    for (const line of who.lines) {
      w.y -= 13;
      w.text(line, x, { size: 10 });
    }
    return w.y;
  };
  const bottom = Math.min(party("FROM", seller, LEFT), party("BILL TO", buyer, PAGE.width / 2));
  w.y = bottom - 26;
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

function drawFacts(w: Writer, facts: [string, string][]): void {
  for (const [label, value] of facts) {
    w.text(label, LEFT, { size: 10, color: MUTED });
    w.text(value, LEFT + 110, { size: 10 });
    w.y -= 14;
  }
  w.y -= 14;
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
  if (w.y > PAGE.height - PAGE.margin - 1) drawTableHeader(w);
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

function drawTotals(w: Writer, totals: TotalRow[], currency: string): void {
  w.need(16 * totals.length + 40);
  for (const [label, amount, strong] of totals) {
    w.text(label, COLUMNS.unit - 90, { size: strong ? 12 : 10, bold: strong });
    w.text(formatCents(amount, currency), COLUMNS.amount, {
      size: strong ? 12 : 10,
      bold: strong,
      right: true,
    });
    w.y -= strong ? 20 : 15;
  }
}

function drawNotes(w: Writer, notes: string): void {
  w.y -= 10;
  w.need(40);
  w.text("Notes", LEFT, { size: 9, bold: true, color: MUTED });
  for (const line of w.wrap(notes, RIGHT - LEFT)) {
    w.y -= 13;
    w.need(14);
    w.text(line, LEFT);
  }
}

/** Page numbers go on last, once the page count is known. */
function drawFooters(doc: PDFDocument, label: string, font: PDFFont): void {
  const pages = doc.getPages();
  pages.forEach((page, index) => {
    const footer = winAnsiSafe(`${label} - page ${index + 1} of ${pages.length}`);
    page.drawText(footer, { x: LEFT, y: 28, size: 8, font, color: MUTED });
  });
}
