import { env } from "cloudflare:workers";
import { database } from "@edge-platform/shared/db/client";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { finalizeInvoice } from "../src/invoicing/service.ts";
import { insertDraftInvoice, voidStatements } from "../src/invoicing/storage.ts";
import { balanceOf } from "../src/payments/domain/ledger.ts";
import { payStatements } from "../src/payments/invoice-settlement-storage.ts";
import { ledgerTotals, refundStatement } from "../src/payments/ledger-storage.ts";
import { insertSubscription, insertTenant } from "./entitlement-fixtures.ts";

// Property: whatever sequence of finalizes (charges), payments, voids
// (credits) and refunds runs against the real statements, including the
// same operation racing itself, the stored balance is Σdebit − Σcredit of
// the entries, it matches a model of the invoices' lives, and no invoice is
// ever charged, paid or credited twice.

type Op =
  | { kind: "finalize" | "pay" | "void"; invoice: number; racing: boolean }
  | { kind: "refund"; invoice: number; amount: number; racing: boolean };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constantFrom("finalize" as const, "pay" as const, "void" as const),
    invoice: fc.nat({ max: 3 }),
    racing: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant("refund" as const),
    invoice: fc.nat({ max: 3 }),
    amount: fc.integer({ min: 1, max: 20_000 }),
    racing: fc.boolean(),
  }),
);

interface ModelInvoice {
  total: number;
  status: "DRAFT" | "OPEN" | "PAID" | "VOID";
  charged: boolean;
  refunded: number;
}

async function setup(totals: number[]) {
  const tenantId = await insertTenant();
  const { subscriptionId } = await insertSubscription({ tenantId, snapshots: [] });
  const ids: string[] = [];
  for (const [index, total] of totals.entries()) {
    const id = crypto.randomUUID();
    const start = new Date(Date.UTC(2030, index, 1));
    await insertDraftInvoice(
      env.DB,
      { id, tenantId, subscriptionId },
      {
        kind: "PERIOD",
        currency: "usd",
        periodStart: start,
        periodEnd: new Date(Date.UTC(2030, index + 1, 1)),
        subtotal: total,
        discount: 0,
        tax: 0,
        taxRatePpm: null,
        total,
        notes: null,
        lines: [
          {
            kind: "BASE",
            description: "fixture",
            featureLookupKey: null,
            usageWindowKey: null,
            quantity: 1,
            unitPriceMicroCents: total * 100,
            amount: total,
            sortOrder: 0,
          },
        ],
      },
      new Date().toISOString(),
    );
    ids.push(id);
  }
  return { tenantId, ids };
}

async function apply(tenantId: string, ids: string[], step: Op, reference: string) {
  const id = ids[step.invoice % ids.length] as string;
  const now = new Date();
  const run = () => {
    switch (step.kind) {
      case "finalize":
        return finalizeInvoice(env.DB, { id, tenantId }, now);
      case "pay":
        return env.DB.batch(
          payStatements(env.DB, id, now, { attemptId: null, externalReference: null }),
        );
      case "void":
        return env.DB.batch(voidStatements(env.DB, id, now));
      case "refund":
        return refundStatement(env.DB, {
          invoiceId: id,
          amount: step.amount,
          reference,
          description: "refund",
          now: now.toISOString(),
        }).run();
    }
  };
  await (step.racing ? Promise.all([run(), run()]) : run());
}

function model(totals: number[], steps: Op[]) {
  const invoices: ModelInvoice[] = totals.map((total) => ({
    total,
    status: "DRAFT",
    charged: false,
    refunded: 0,
  }));
  let balance = 0;
  for (const step of steps) {
    const invoice = invoices[step.invoice % invoices.length] as ModelInvoice;
    if (step.kind === "finalize" && invoice.status === "DRAFT") {
      invoice.status = "OPEN";
      invoice.charged = true;
      balance += invoice.total;
    } else if (step.kind === "pay" && invoice.status === "OPEN") {
      invoice.status = "PAID";
      balance -= invoice.total;
    } else if (step.kind === "void" && (invoice.status === "DRAFT" || invoice.status === "OPEN")) {
      if (invoice.charged) balance -= invoice.total;
      invoice.status = "VOID";
    } else if (
      step.kind === "refund" &&
      invoice.status === "PAID" &&
      invoice.refunded + step.amount <= invoice.total
    ) {
      // Racing duplicates share one reference: recorded once.
      invoice.refunded += step.amount;
      balance += step.amount;
    }
  }
  return balance;
}

describe("ledger property", () => {
  it("balance = Σdebit − Σcredit, matches the model, and nothing is charged twice", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 50_000 }), { minLength: 1, maxLength: 4 }),
        fc.array(op, { minLength: 1, maxLength: 12 }),
        async (totals, steps) => {
          const { tenantId, ids } = await setup(totals);
          for (const [index, step] of steps.entries()) {
            await apply(tenantId, ids, step, `ref-${tenantId}-${index}`);
          }
          const entries = await env.DB.prepare(
            "SELECT invoice_id, type, debit, credit, currency FROM ledger_entries WHERE tenant_id = ?",
          )
            .bind(tenantId)
            .all<{
              invoice_id: string;
              type: string;
              debit: number;
              credit: number;
              currency: string;
            }>();
          const rows = entries.results;
          const stored = await ledgerTotals(database(env.DB), env.DB, tenantId, "usd");
          const computed = balanceOf(rows, "usd");
          expect(stored.debit - stored.credit).toBe(computed.balance);
          expect(computed.balance).toBe(model(totals, steps));
          for (const type of ["CHARGE", "PAYMENT", "CREDIT"]) {
            const perInvoice = new Map<string, number>();
            for (const row of rows.filter((entry) => entry.type === type)) {
              perInvoice.set(row.invoice_id, (perInvoice.get(row.invoice_id) ?? 0) + 1);
            }
            for (const count of perInvoice.values()) expect(count).toBe(1);
          }
          // A refund never exceeds what was paid.
          for (const id of ids) {
            const refunded = rows
              .filter((row) => row.invoice_id === id && row.type === "REFUND")
              .reduce((sum, row) => sum + row.debit, 0);
            const paid = rows
              .filter((row) => row.invoice_id === id && row.type === "PAYMENT")
              .reduce((sum, row) => sum + row.credit, 0);
            expect(refunded).toBeLessThanOrEqual(paid);
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it("balances are per currency and never summed across them", () => {
    const entries = [
      { currency: "usd", debit: 1000, credit: 0 },
      { currency: "eur", debit: 700, credit: 0 },
      { currency: "usd", debit: 0, credit: 400 },
    ];
    expect(balanceOf(entries, "usd")).toEqual({
      currency: "usd",
      balance: 600,
      totalCharged: 1000,
      totalPaid: 400,
    });
    expect(balanceOf(entries, "eur").balance).toBe(700);
    expect(balanceOf(entries, "gbp").balance).toBe(0);
  });
});
