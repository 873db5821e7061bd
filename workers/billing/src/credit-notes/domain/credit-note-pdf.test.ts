import { extractText, getDocumentProxy } from "unpdf";
import { describe, expect, it } from "vitest";
import { type CreditNotePdfInput, renderCreditNotePdf } from "./credit-note-pdf.ts";

const note: CreditNotePdfInput = {
  number: "CN-2026-000007",
  invoiceId: "0190aaaa-0000-7000-8000-000000000001",
  invoiceNumber: "INV-2026-000042",
  reason: "PRODUCT_UNSATISFACTORY",
  settlement: "REDUCE",
  currency: "eur",
  subtotal: 1500,
  tax: 285,
  total: 1785,
  memo: "Outage on 3 November – “credited” as agreed",
  refundStatus: null,
  refundFailureReason: null,
  createdAt: "2026-11-20T10:00:00.000Z",
  lines: [
    { description: "Pro plan (monthly)", amount: 1000 },
    { description: "API calls: 50,000 units", amount: 500 },
  ],
};

const seller = { name: "Edge Platform Billing", lines: ["1 Main Street"] };
const buyer = { name: "Röntgen Labs GmbH", lines: ["東京", "Tax ID: DE123"] };

async function textOf(bytes: Uint8Array): Promise<string> {
  const document = await getDocumentProxy(bytes);
  const { text } = await extractText(document, { mergePages: true });
  return text.replace(/\s+/g, " ");
}

describe("credit note PDF", () => {
  it("names the note, the invoice it corrects, why and how it is settled, its lines and totals", async () => {
    const bytes = await renderCreditNotePdf(note, seller, buyer);
    expect(new TextDecoder().decode(bytes.slice(0, 5))).toBe("%PDF-");
    const text = await textOf(bytes);
    expect(text).toContain("CREDIT NOTE");
    expect(text).toContain("CN-2026-000007");
    expect(text).toContain("Corrects invoice INV-2026-000042");
    expect(text).toContain("2026-11-20");
    expect(text).toContain("Product unsatisfactory");
    expect(text).toContain("Lowers the amount due on the invoice");
    expect(text).toContain("Röntgen Labs GmbH");
    expect(text).toContain("Pro plan (monthly)");
    expect(text).toMatch(/API calls: 50,000 units\s*5\.00 EUR/);
    expect(text).toMatch(/Subtotal\s*15\.00 EUR/);
    expect(text).toMatch(/Tax\s*2\.85 EUR/);
    expect(text).toMatch(/Total credited\s*17\.85 EUR/);
    expect(text).toContain('Outage on 3 November - "credited" as agreed');
    // A REDUCE note has no refund to report.
    expect(text).not.toContain("Refund");
  });

  it("says how a refund stands, and where the money went when it failed", async () => {
    const refund = { ...note, settlement: "REFUND" as const, memo: null };
    const pending = await textOf(
      await renderCreditNotePdf({ ...refund, refundStatus: "PENDING" }, seller, buyer),
    );
    expect(pending).toContain("Refunded to the payment method the invoice was paid with");
    expect(pending).toContain("Pending at the payment provider");
    const failed = await textOf(
      await renderCreditNotePdf(
        { ...refund, refundStatus: "FAILED", refundFailureReason: "card_expired" },
        seller,
        buyer,
      ),
    );
    expect(failed).toContain("Failed (card_expired): the amount stays on the credit balance");
    expect(failed).not.toContain("Memo");
  });

  it("goes on over more pages when the lines do not fit on one", async () => {
    const lines = Array.from({ length: 90 }, (_, index) => ({
      description: `東京 usage line ${index} with a description long enough to wrap onto a second line of the table`,
      amount: 10,
    }));
    const text = await textOf(await renderCreditNotePdf({ ...note, lines }, seller, buyer));
    expect(text).toMatch(/Credit note CN-2026-000007 - Edge Platform Billing - page 1 of [2-9]/);
    expect(text).toContain("usage line 89");
  });
});
