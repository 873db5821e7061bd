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

export async function renderInvoicePdf(
  invoice: InvoicePdfInput,
  seller: InvoiceParty,
  buyer: InvoiceParty,
): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const title = invoice.invoiceNumber ? `Invoice ${invoice.invoiceNumber}` : "Draft invoice";
  doc.setTitle(winAnsiSafe(title));
  doc.setAuthor(winAnsiSafe(seller.name));
  doc.setSubject(winAnsiSafe(`${title} for ${buyer.name}`));
  doc.setCreator("Billing and usage API");
  doc.setProducer("pdf-lib");
  const regular = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  const stamp = invoice.status === "VOID" || invoice.status === "DRAFT" ? invoice.status : null;
  const w = new Writer(doc, regular, bold, (page) => {
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
  });
  const left = PAGE.margin;
  const right = PAGE.width - PAGE.margin;
  const currency = invoice.currency;

  w.text(invoice.invoiceNumber ? "INVOICE" : "DRAFT INVOICE", left, { size: 22, bold: true });
  w.text(`Status: ${invoice.status}`, right, { size: 12, bold: true, right: true });
  w.y -= 18;
  if (invoice.status === "VOID") {
    w.text(
      `VOID since ${day(invoice.voidedAt)}: this invoice is cancelled and nothing is owed on it.`,
      left,
      { size: 10, bold: true, color: rgb(0.7, 0.05, 0.05) },
    );
    w.y -= 14;
  }
  w.y -= 12;

  // Seller and tenant, side by side.
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
  const bottom = Math.min(party("FROM", seller, left), party("BILL TO", buyer, PAGE.width / 2));
  w.y = bottom - 26;

  const facts: [string, string][] = [
    ["Invoice number", invoice.invoiceNumber ?? "not numbered until finalized"],
    ["Issued", day(invoice.finalizedAt ?? invoice.createdAt)],
    ["Service period", `${day(invoice.periodStart)} to ${day(invoice.periodEnd)}`],
    ["Due", day(invoice.dueDate)],
    ["Currency", currency.toUpperCase()],
  ];
  if (invoice.paidAt) facts.push(["Paid", day(invoice.paidAt)]);
  if (invoice.voidedAt) facts.push(["Voided", day(invoice.voidedAt)]);
  for (const [label, value] of facts) {
    w.text(label, left, { size: 10, color: MUTED });
    w.text(value, left + 110, { size: 10 });
    w.y -= 14;
  }
  w.y -= 14;

  // Line items.
  const columns = { quantity: right - 165, unit: right - 85, amount: right };
  const header = () => {
    w.text("Description", left, { size: 9, bold: true, color: MUTED });
    w.text("Qty", columns.quantity, { size: 9, bold: true, color: MUTED, right: true });
    w.text("Unit price", columns.unit, { size: 9, bold: true, color: MUTED, right: true });
    w.text("Amount", columns.amount, { size: 9, bold: true, color: MUTED, right: true });
    w.y -= 6;
    w.rule();
    w.y -= 14;
  };
  header();
  const charges = invoice.lineItems.filter((line) => !TOTAL_KINDS.has(line.kind));
  if (charges.length === 0) {
    w.text("No charges in this period.", left, { size: 10, color: MUTED });
    w.y -= 16;
  }
  for (const line of charges) {
    const wrapped = w.wrap(line.description, columns.quantity - left - 30, 9);
    w.need(14 * wrapped.length + 4);
    if (w.y > PAGE.height - PAGE.margin - 1) header();
    w.text(wrapped[0] ?? "", left, { size: 9 });
    w.text(line.quantity.toLocaleString("en-US"), columns.quantity, { right: true });
    w.text(unitPrice(line.unitPriceMicroCents, currency), columns.unit, { right: true });
    w.text(formatCents(line.amount, currency), columns.amount, { right: true });
    for (const more of wrapped.slice(1)) {
      w.y -= 12;
      w.text(more, left, { size: 9 });
    }
    w.y -= 16;
  }
  w.y += 6;
  w.rule();
  w.y -= 16;

  // Totals, as the invoice carries them.
  const credits = invoice.lineItems
    .filter((line) => line.kind === "CREDIT_APPLIED")
    .reduce((sum, line) => sum + line.amount, 0);
  const totals: [string, number, boolean][] = [["Subtotal", invoice.subtotal, false]];
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
  w.need(16 * totals.length + 40);
  for (const [label, amount, strong] of totals) {
    w.text(label, columns.unit - 90, { size: strong ? 12 : 10, bold: strong });
    w.text(formatCents(amount, currency), columns.amount, {
      size: strong ? 12 : 10,
      bold: strong,
      right: true,
    });
    w.y -= strong ? 20 : 15;
  }

  if (invoice.notes) {
    w.y -= 10;
    w.need(40);
    w.text("Notes", left, { size: 9, bold: true, color: MUTED });
    for (const line of w.wrap(invoice.notes, right - left)) {
      w.y -= 13;
      w.need(14);
      w.text(line, left);
    }
  }

  const pages = doc.getPages();
  pages.forEach((page, index) => {
    const footer = winAnsiSafe(`${title} - ${seller.name} - page ${index + 1} of ${pages.length}`);
    page.drawText(footer, { x: left, y: 28, size: 8, font: regular, color: MUTED });
  });
  return doc.save();
}
