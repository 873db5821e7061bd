/**
 * What an upcoming invoice (GET /invoices/upcoming) must share with the
 * invoice the billing cycle issues when the same period closes with the
 * same usage: the header fields, and each line's content. A preview has no
 * ids, number, status or timestamps, so those are left out.
 */
const HEADER_FIELDS = [
  "tenantId",
  "subscriptionId",
  "kind",
  "currency",
  "subtotal",
  "discount",
  "tax",
  "taxRate",
  "total",
  "periodStart",
  "periodEnd",
  "notes",
] as const;

const LINE_FIELDS = [
  "kind",
  "description",
  "featureLookupKey",
  "usageWindowKey",
  "quantity",
  "unitPriceMicroCents",
  "amount",
  "sortOrder",
  "pricing",
  "dimensions",
  "unitPriceDecimal",
] as const;

/** An invoice line as the API returns it (stored or drafted). */
export interface InvoiceLineBody {
  kind: string;
  description: string;
  featureLookupKey: string | null;
  usageWindowKey: string | null;
  quantity: number;
  unitPriceMicroCents: number;
  amount: number;
  sortOrder: number;
  pricing: unknown;
  dimensions?: Record<string, string | number | null> | null;
  unitPriceDecimal?: string | null;
}

const pick = (source: Record<string, unknown>, fields: readonly string[]) =>
  Object.fromEntries(fields.map((field) => [field, source[field]]));

/** The part of an invoice body that a preview and the issued invoice have in common. */
export function invoiceContent(invoice: Record<string, unknown>) {
  return {
    ...pick(invoice, HEADER_FIELDS),
    lineItems: (invoice.lineItems as Record<string, unknown>[]).map((line) =>
      pick(line, LINE_FIELDS),
    ),
  };
}
