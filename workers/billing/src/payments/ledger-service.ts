import type { Database } from "@edge-platform/shared/db/client";
import type { LedgerEntryType } from "@edge-platform/shared/db/schema/billing";
import type { TenantScoped } from "../platform/index.ts";
import { type PageRequest, pageMeta, pageOffset } from "../platform/index.ts";
import { type LedgerEntryRow, ledgerTotals, listLedgerEntries } from "./ledger-storage.ts";

export function ledgerEntryView(entry: LedgerEntryRow) {
  return {
    id: entry.id,
    tenantId: entry.tenantId,
    invoiceId: entry.invoiceId,
    type: entry.type,
    description: entry.description,
    debit: entry.debit,
    credit: entry.credit,
    currency: entry.currency,
    externalReference: entry.externalReference,
    createdAt: entry.createdAt,
  };
}

export const DEFAULT_CURRENCY = "usd";

export class LedgerService {
  constructor(
    private readonly db: Database,
    private readonly d1: D1Database,
  ) {}

  async list(
    context: TenantScoped,
    page: PageRequest,
    filter: { type?: LedgerEntryType | undefined; currency?: string | undefined },
  ) {
    const { rows, total } = await listLedgerEntries(
      this.db,
      context.tenant.id,
      filter,
      pageOffset(page),
      page.limit,
    );
    return { data: rows.map(ledgerEntryView), meta: pageMeta(page, total) };
  }

  /** Σdebit − Σcredit in one currency; positive means the tenant owes money. */
  async balance(context: TenantScoped, currency: string = DEFAULT_CURRENCY, now = new Date()) {
    const totals = await ledgerTotals(this.db, this.d1, context.tenant.id, currency);
    return {
      tenantId: context.tenant.id,
      currency,
      balance: totals.debit - totals.credit,
      totalCharged: totals.debit,
      totalPaid: totals.credit,
      creditBalance: totals.creditBalance,
      unit: "cents" as const,
      asOf: now.toISOString(),
    };
  }
}
