import type { LedgerEntryType } from "@edge-platform/shared/db/schema/billing";

// The ledger's arithmetic. A tenant's balance in a currency is the sum of
// debits minus the sum of credits of its entries in that currency; positive
// means the tenant owes money. Currencies are never added together.
//
// Which side each entry type takes:
//   CHARGE      debit   an invoice was finalized (its total)
//   PAYMENT     credit  an invoice was paid (its total)
//   CREDIT      credit  a finalized invoice was voided (the charge reversed)
//   REFUND      debit   money went back to the tenant (a paid amount is owed again)
//   ADJUSTMENT  either  a manual correction

export const LEDGER_SIDE: Record<LedgerEntryType, "debit" | "credit" | "either"> = {
  CHARGE: "debit",
  PAYMENT: "credit",
  CREDIT: "credit",
  REFUND: "debit",
  ADJUSTMENT: "either",
};

export interface LedgerAmounts {
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
