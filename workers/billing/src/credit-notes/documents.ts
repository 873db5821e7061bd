import type { Database } from "@edge-platform/shared/db/client";
import { billedParty, configuredSeller } from "../invoicing/index.ts";
import type { TenantScoped } from "../platform/index.ts";
import { renderCreditNotePdf } from "./domain/credit-note-pdf.ts";
import type { CreditNoteService } from "./service.ts";
import { invoiceNumberOf } from "./storage.ts";

/** A credit note of the caller's tenant as a PDF, with the number the file should be named after. */
export async function creditNotePdf(
  db: Database,
  notes: CreditNoteService,
  env: { INVOICE_SELLER_NAME?: string; INVOICE_SELLER_ADDRESS?: string },
  context: TenantScoped,
  id: string,
): Promise<{ bytes: Uint8Array; fileName: string }> {
  const note = await notes.get(context, id);
  const invoiceNumber = await invoiceNumberOf(db, note.invoiceId);
  const bytes = await renderCreditNotePdf(
    { ...note, invoiceNumber },
    configuredSeller(env),
    await billedParty(db, context.tenant),
  );
  return { bytes, fileName: `${note.number}.pdf`.replace(/[^A-Za-z0-9._-]/g, "_") };
}
