import { describe, expect, it } from "vitest";
import { renderInvoicePdf, winAnsiSafe } from "./invoice-pdf.ts";

const invoice = {
  invoiceNumber: "INV-2026-000042",
  status: "OPEN",
  kind: "PERIOD",
  currency: "eur",
  subtotal: 1000,
  discount: 0,
  tax: 0,
  taxRate: null,
  total: 1000,
  periodStart: "2026-11-01T00:00:00.000Z",
  periodEnd: "2026-12-01T00:00:00.000Z",
  dueDate: null,
  finalizedAt: "2026-12-01T00:00:00.000Z",
  paidAt: null,
  voidedAt: null,
  createdAt: "2026-12-01T00:00:00.000Z",
  notes: null,
};

describe("invoice PDF", () => {
  it("keeps what the standard fonts can draw and replaces the rest", () => {
    expect(winAnsiSafe("Müller – “Café” 東京")).toBe('Müller - "Café" ??');
  });

  it("renders names no standard font can draw, and many lines over several pages", async () => {
    const lines = Array.from({ length: 80 }, (_, index) => ({
      kind: "USAGE",
      description: `東京 usage line ${index} with a description long enough to need wrapping onto a second line of the table`,
      quantity: index,
      unitPriceMicroCents: 15,
      amount: 12,
    }));
    const bytes = await renderInvoicePdf(
      { ...invoice, lineItems: lines },
      { name: "Seller", lines: [] },
      { name: "株式会社", lines: ["東京"] },
    );
    expect(new TextDecoder().decode(bytes.slice(0, 5))).toBe("%PDF-");
    expect(bytes.byteLength).toBeGreaterThan(2000);
  });
});
