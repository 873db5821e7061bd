import type { Database } from "@edge-platform/shared/db/client";
import type { TenantScoped } from "../platform/index.ts";
import { findBillingDetails } from "../pricing/index.ts";
import { type InvoiceParty, renderInvoicePdf } from "./domain/invoice-pdf.ts";
import type { InvoiceService } from "./service.ts";

/** The seller as configured (INVOICE_SELLER_NAME, INVOICE_SELLER_ADDRESS with "|" between lines). */
export function configuredSeller(env: {
  INVOICE_SELLER_NAME?: string;
  INVOICE_SELLER_ADDRESS?: string;
}): InvoiceParty {
  return {
    name: env.INVOICE_SELLER_NAME?.trim() || "Billing",
    lines: (env.INVOICE_SELLER_ADDRESS ?? "")
      .split("|")
      .map((line) => line.trim())
      .filter(Boolean),
  };
}

/** The tenant as billed: its billing details when it has them, else its name. */
export async function billedParty(
  db: Database,
  tenant: TenantScoped["tenant"],
): Promise<InvoiceParty> {
  const details = await findBillingDetails(db, tenant.id);
  if (!details) return { name: tenant.name, lines: [] };
  const { address } = details;
  const cityLine = [address.postalCode, address.city].filter(Boolean).join(" ");
  return {
    name: details.legalName,
    lines: [
      address.line1,
      address.line2 ?? "",
      cityLine,
      [address.region, address.country].filter(Boolean).join(", "),
      details.taxId ? `Tax ID: ${details.taxId}` : "",
    ].filter(Boolean),
  };
}

/** An invoice of the caller's tenant as a PDF, with the number the file should be named after. */
export async function invoicePdf(
  db: Database,
  invoices: InvoiceService,
  seller: InvoiceParty,
  context: TenantScoped,
  id: string,
): Promise<{ bytes: Uint8Array; fileName: string }> {
  const invoice = await invoices.get(context, id);
  const bytes = await renderInvoicePdf(invoice, seller, await billedParty(db, context.tenant));
  const fileName = `${invoice.invoiceNumber ?? `draft-${invoice.id}`}.pdf`.replace(
    /[^A-Za-z0-9._-]/g,
    "_",
  );
  return { bytes, fileName };
}
