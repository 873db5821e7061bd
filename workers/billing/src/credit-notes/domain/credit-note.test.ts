import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type CreditableInvoice,
  type CreditNoteRequest,
  creditedTax,
  planCreditNote,
  proportionHalfUp,
} from "./credit-note.ts";

const BASE = "00000000-0000-4000-8000-0000000000b1";
const USAGE = "00000000-0000-4000-8000-0000000000b2";
const TAX = "00000000-0000-4000-8000-0000000000b3";

/** 2,000 base + 1,000 usage, 300 discount, 10% tax on 2,700 = 270, total 2,970, paid by the provider. */
function paidInvoice(overrides: Partial<CreditableInvoice> = {}): CreditableInvoice {
  return {
    status: "PAID",
    kind: "PERIOD",
    invoiceNumber: "INV-2026-000001",
    subtotal: 3000,
    discount: 300,
    tax: 270,
    total: 2970,
    creditedTotal: 0,
    reducedTotal: 0,
    taxCredited: 0,
    paid: 2970,
    paymentReference: "pi_1",
    refunded: 0,
    refundedOutsideNotes: 0,
    paymentInFlight: false,
    lines: [
      { id: BASE, kind: "BASE", description: "Growth", amount: 2000, credited: 0 },
      { id: USAGE, kind: "USAGE", description: "Calls", amount: 1000, credited: 0 },
      { id: TAX, kind: "TAX", description: "Tax (10%)", amount: 270, credited: 0 },
    ],
    ...overrides,
  };
}

const request = (
  lines: CreditNoteRequest["lines"],
  settlement: CreditNoteRequest["settlement"] = "REFUND",
): CreditNoteRequest => ({ reason: "OTHER", settlement, lines });

describe("planCreditNote", () => {
  it("credits the named lines with tax in proportion to the taxable amount, rounded half up once", () => {
    // 1,000 of 2,700 taxable: 1,000 x 270 / 2,700 = 100 tax.
    const plan = planCreditNote(paidInvoice(), request([{ lineItemId: BASE, amount: 1000 }]));
    expect(plan).toEqual({
      ok: true,
      note: {
        subtotal: 1000,
        tax: 100,
        total: 1100,
        lines: [{ lineItemId: BASE, description: "Growth", amount: 1000 }],
      },
    });
    // 5 of 2,700: 0.5 cents of tax rounds up to 1; 4 cents: 0.4 rounds down to 0.
    expect(creditedTax(paidInvoice(), 5)).toBe(1);
    expect(creditedTax(paidInvoice(), 4)).toBe(0);
  });

  it("never credits more tax than earlier notes left", () => {
    const invoice = paidInvoice({ taxCredited: 269, creditedTotal: 2900 });
    expect(creditedTax(invoice, 70)).toBe(1);
  });

  it("refuses what is not a line, not a charge, named twice or more than is left", () => {
    const invoice = paidInvoice({
      lines: paidInvoice().lines.map((line) =>
        line.id === USAGE ? { ...line, credited: 900 } : line,
      ),
    });
    const refusal = (lines: CreditNoteRequest["lines"]) => planCreditNote(invoice, request(lines));
    expect(
      refusal([{ lineItemId: "00000000-0000-4000-8000-00000000dead", amount: 1 }]),
    ).toMatchObject({ ok: false, status: 400 });
    expect(refusal([{ lineItemId: TAX, amount: 1 }])).toMatchObject({ ok: false, status: 400 });
    expect(
      refusal([
        { lineItemId: BASE, amount: 1 },
        { lineItemId: BASE, amount: 1 },
      ]),
    ).toMatchObject({ ok: false, status: 400 });
    expect(refusal([{ lineItemId: USAGE, amount: 101 }])).toMatchObject({
      ok: false,
      status: 409,
      message: expect.stringContaining("100 cents left"),
    });
  });

  it("allows each settlement only where it means something", () => {
    const line = [{ lineItemId: BASE, amount: 100 }];
    const open = paidInvoice({ status: "OPEN", paid: 0, paymentReference: null });
    expect(planCreditNote(open, request(line, "REDUCE")).ok).toBe(true);
    expect(planCreditNote(open, request(line, "CREDIT")).ok).toBe(true);
    expect(planCreditNote(open, request(line, "REFUND"))).toMatchObject({ ok: false, status: 409 });
    expect(planCreditNote(paidInvoice(), request(line, "REDUCE"))).toMatchObject({
      ok: false,
      status: 409,
    });
    expect(
      planCreditNote({ ...open, paymentInFlight: true }, request(line, "REDUCE")),
    ).toMatchObject({ ok: false, status: 409 });
    expect(
      planCreditNote(paidInvoice({ paymentReference: null }), request(line, "REFUND")),
    ).toMatchObject({ ok: false, status: 409, message: expect.stringContaining("outside") });
    for (const status of ["DRAFT", "VOID", "UNCOLLECTIBLE"] as const) {
      expect(planCreditNote(paidInvoice({ status }), request(line, "CREDIT"))).toMatchObject({
        ok: false,
        status: 409,
      });
    }
    expect(
      planCreditNote(paidInvoice({ kind: "TOP_UP", status: "OPEN" }), request(line, "CREDIT")),
    ).toMatchObject({ ok: false, status: 409 });
  });

  it("refunds the provider made outside notes use up what is left to credit", () => {
    const invoice = paidInvoice({ refunded: 2500, refundedOutsideNotes: 2500 });
    const plan = planCreditNote(invoice, request([{ lineItemId: BASE, amount: 500 }], "CREDIT"));
    expect(plan).toMatchObject({
      ok: false,
      status: 409,
      message: expect.stringContaining("470 cents left"),
    });
    expect(planCreditNote(invoice, request([{ lineItemId: BASE, amount: 400 }], "CREDIT")).ok).toBe(
      true,
    );
  });

  it("a refund never exceeds what the payment left to refund", () => {
    const invoice = paidInvoice({ refunded: 2000 });
    const plan = planCreditNote(invoice, request([{ lineItemId: BASE, amount: 1000 }]));
    expect(plan).toMatchObject({ ok: false, status: 409, message: expect.stringContaining("970") });
  });

  it("whatever the sequence of notes, their totals and taxes never exceed the invoice's", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            line: fc.constantFrom(BASE, USAGE),
            amount: fc.integer({ min: 1, max: 2500 }),
            settlement: fc.constantFrom("REFUND" as const, "CREDIT" as const),
          }),
          { maxLength: 12 },
        ),
        (wanted) => {
          let invoice = paidInvoice();
          for (const step of wanted) {
            const plan = planCreditNote(
              invoice,
              request([{ lineItemId: step.line, amount: step.amount }], step.settlement),
            );
            if (!plan.ok) continue;
            invoice = {
              ...invoice,
              creditedTotal: invoice.creditedTotal + plan.note.total,
              taxCredited: invoice.taxCredited + plan.note.tax,
              refunded: invoice.refunded + (step.settlement === "REFUND" ? plan.note.total : 0),
              lines: invoice.lines.map((line) =>
                line.id === step.line ? { ...line, credited: line.credited + step.amount } : line,
              ),
            };
          }
          expect(invoice.creditedTotal).toBeLessThanOrEqual(invoice.total);
          expect(invoice.taxCredited).toBeLessThanOrEqual(invoice.tax);
          expect(invoice.refunded).toBeLessThanOrEqual(invoice.paid);
          for (const line of invoice.lines) expect(line.credited).toBeLessThanOrEqual(line.amount);
        },
      ),
    );
  });
});

describe("proportionHalfUp", () => {
  it("rounds half up exactly, beyond 2^53 intermediates", () => {
    expect(proportionHalfUp(1, 1, 2)).toBe(1);
    expect(proportionHalfUp(1, 1, 3)).toBe(0);
    expect(proportionHalfUp(999_999_999_999, 999_999_999, 1_000_000_000)).toBe(999_999_998_999);
    expect(proportionHalfUp(10, 10, 0)).toBe(0);
  });
});
