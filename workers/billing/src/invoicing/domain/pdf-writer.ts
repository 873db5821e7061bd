import { PDFDocument, type PDFFont, type PDFPage, rgb, StandardFonts } from "pdf-lib";
import { formatCents } from "../../platform/index.ts";

/**
 * What the billing documents (invoices, credit notes) share to look alike:
 * an A4 page, pdf-lib's standard fonts (nothing embedded, nothing fetched),
 * text kept to what those fonts can draw, the parties, facts, totals and
 * page footers.
 */

export interface InvoiceParty {
  name: string;
  lines: string[];
}

export const PAGE = { width: 595.28, height: 841.89, margin: 50 };
export const INK = rgb(0.1, 0.1, 0.12);
export const MUTED = rgb(0.38, 0.38, 0.42);
const RULE = rgb(0.8, 0.8, 0.84);
export const LEFT = PAGE.margin;
export const RIGHT = PAGE.width - PAGE.margin;
/** Where the totals' labels start: under the second number column of the line tables. */
const TOTALS_LABEL_X = RIGHT - 85 - 90;

/** A row of a totals block: label, signed cents, and whether it is the figure that counts. */
export type TotalRow = [label: string, amount: number, strong: boolean];

/** Standard fonts speak WinAnsi only: anything else becomes "?" rather than failing the render. */
export function winAnsiSafe(text: string): string {
  return text
    .normalize("NFKC")
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/[\u2013\u2014]/g, "-")
    .replace(/[^\x20-\x7e\xa0-\xff\u20ac\n]/g, "?");
}

export function day(iso: string | null): string {
  return iso ? iso.slice(0, 10) : "-";
}

export class Writer {
  page!: PDFPage;
  y = 0;
  constructor(
    private readonly doc: PDFDocument,
    readonly regular: PDFFont,
    readonly bold: PDFFont,
    private readonly onNewPage: (page: PDFPage) => void = () => {},
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

  /** Whether the writer stands at the top of a page it has just started. */
  atPageTop(): boolean {
    return this.y > PAGE.height - PAGE.margin - 1;
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

/** A new document with its metadata and the two standard fonts every billing document uses. */
export async function startDocument(
  title: string,
  seller: InvoiceParty,
  buyer: InvoiceParty,
): Promise<{ doc: PDFDocument; regular: PDFFont; bold: PDFFont }> {
  const doc = await PDFDocument.create();
  doc.setTitle(winAnsiSafe(title));
  doc.setAuthor(winAnsiSafe(seller.name));
  doc.setSubject(winAnsiSafe(`${title} for ${buyer.name}`));
  doc.setCreator("Billing and usage API");
  doc.setProducer("pdf-lib");
  const regular = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  return { doc, regular, bold };
}

/** Seller and tenant, side by side; continues below the taller of the two. */
export function drawParties(
  w: Writer,
  seller: InvoiceParty,
  buyer: InvoiceParty,
  buyerLabel = "BILL TO",
): void {
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
  const bottom = Math.min(party("FROM", seller, LEFT), party(buyerLabel, buyer, PAGE.width / 2));
  w.y = bottom - 26;
}

/** Label and value pairs, one a line. */
export function drawFacts(w: Writer, facts: [string, string][]): void {
  for (const [label, value] of facts) {
    w.text(label, LEFT, { size: 10, color: MUTED });
    w.text(value, LEFT + 110, { size: 10 });
    w.y -= 14;
  }
  w.y -= 14;
}

export function drawTotals(w: Writer, totals: TotalRow[], currency: string): void {
  w.need(16 * totals.length + 40);
  for (const [label, amount, strong] of totals) {
    w.text(label, TOTALS_LABEL_X, { size: strong ? 12 : 10, bold: strong });
    w.text(formatCents(amount, currency), RIGHT, {
      size: strong ? 12 : 10,
      bold: strong,
      right: true,
    });
    w.y -= strong ? 20 : 15;
  }
}

/** A free text under its heading, wrapped to the page's width. */
export function drawNotes(w: Writer, notes: string, heading = "Notes"): void {
  w.y -= 10;
  w.need(40);
  w.text(heading, LEFT, { size: 9, bold: true, color: MUTED });
  for (const line of w.wrap(notes, RIGHT - LEFT)) {
    w.y -= 13;
    w.need(14);
    w.text(line, LEFT);
  }
}

/** Page numbers go on last, once the page count is known. */
export function drawFooters(doc: PDFDocument, label: string, font: PDFFont): void {
  const pages = doc.getPages();
  pages.forEach((page, index) => {
    const footer = winAnsiSafe(`${label} - page ${index + 1} of ${pages.length}`);
    page.drawText(footer, { x: LEFT, y: 28, size: 8, font, color: MUTED });
  });
}
