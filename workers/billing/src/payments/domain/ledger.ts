import type { LedgerEntryType } from "@edge-platform/shared/db/schema/billing";

// The ledger's arithmetic. A tenant's balance in a currency is the sum of
// debits minus the sum of credits of its entries in that currency; positive
// means the tenant owes money. Currencies are never added together.
//
// Which side each entry type takes:
//   CHARGE      debit   an invoice was finalized (its total)
//   PAYMENT     credit  an invoice was paid (its total)
//   CREDIT      credit  a finalized invoice was voided (the charge reversed)
//   REFUND      debit   money went back to the tenant (a paid amount is owed again,
//                       unless a credit note credited it first)
//   CREDIT_NOTE credit  a credit note on a finalized invoice (its total): the
//                       charge lowered, whatever the note's settlement
//   ADJUSTMENT  either  a manual correction
//   CREDIT_WRITE_OFF    the remainder of a credit grant that expired or was
//                       voided (its amount in `debit`); prepaid credit is not
//                       money owed, so it is left out of the balance

export const LEDGER_SIDE: Record<LedgerEntryType, "debit" | "credit" | "either"> = {
  CHARGE: "debit",
  PAYMENT: "credit",
  CREDIT: "credit",
  REFUND: "debit",
  ADJUSTMENT: "either",
  CREDIT_WRITE_OFF: "debit",
  CREDIT_NOTE: "credit",
};

/** Entry types that record prepaid credit, not money owed: never in a balance. */
export const OUTSIDE_BALANCE: readonly LedgerEntryType[] = ["CREDIT_WRITE_OFF"];

export interface LedgerAmounts {
  type?: string;
  currency: string;
  debit: number;
  credit: number;
}

export interface Balance {
  currency: string;
  balance: number;
  totalCharged: number;
  totalPaid: number;
}

/** The balance of `entries` in `currency` (entries in other currencies are ignored). */
export function balanceOf(entries: readonly LedgerAmounts[], currency: string): Balance {
  let debit = 0n;
  let credit = 0n;
  for (const entry of entries) {
    if (entry.currency !== currency) continue;
    if (entry.type && (OUTSIDE_BALANCE as readonly string[]).includes(entry.type)) continue;
    debit += BigInt(entry.debit);
    credit += BigInt(entry.credit);
  }
  return {
    currency,
    balance: Number(debit - credit),
    totalCharged: Number(debit),
    totalPaid: Number(credit),
  };
}
