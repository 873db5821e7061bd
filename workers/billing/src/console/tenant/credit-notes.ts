import type { Hono } from "hono";
import { html } from "hono/html";
import type { ApiFetch } from "../api-fetch.ts";
import { badge, day, type Html, money, pager, table } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import { type PageHandler, signedIn } from "../signed-in.ts";
import { type ConsoleView, render } from "../view.ts";
import { memberOrOperator, pdfDownload } from "./documents.ts";
import { tenantRoute, unavailable } from "./tenant-page.ts";

/** A credit note as `GET /credit-notes` answers it (the fields the console shows). */
export interface CreditNote {
  id: string;
  number: string;
  invoiceId: string;
  reason: string;
  settlement: string;
  currency: string;
  subtotal: number;
  tax: number;
  total: number;
  memo: string | null;
  refundStatus: string | null;
  refundFailureReason: string | null;
  createdAt: string;
  lines: { id: string; lineItemId: string; description: string; amount: number }[];
}

export const REASONS: Record<string, string> = {
  DUPLICATE: "Duplicate",
  PRODUCT_UNSATISFACTORY: "Product unsatisfactory",
  ORDER_CHANGE: "Order change",
  FRAUDULENT: "Fraudulent",
  OTHER: "Other",
};

export const SETTLEMENTS: Record<string, string> = {
  REDUCE: "Lowers the amount due",
  REFUND: "Refund to the payment method",
  CREDIT: "To the credit balance",
};

const HEADERS = [
  "Number",
  "Invoice",
  "Reason",
  "Settlement",
  "Total",
  "Refund",
  "Date",
  "Document",
];

function refundCell(note: CreditNote): Html {
  if (note.settlement !== "REFUND" || !note.refundStatus) return html`-`;
  if (note.refundStatus === "FAILED") {
    // One element, so a phone's stacked row keeps the badge and its reason beside the label.
    return html`<span>${badge("FAILED")} <span class="hint">${note.refundFailureReason ?? "declined"}: left on the credit balance</span></span>`;
  }
  return badge(note.refundStatus);
}

/**
 * Rows of a credit-note table. `invoiceNumbers` names each note's invoice
 * (its id when unknown); operators' links carry `?tenantId=...`.
 */
export function creditNoteRows(
  notes: CreditNote[],
  invoiceNumbers: Map<string, string>,
  tenantQuery = "",
): Html[] {
  return notes.map(
    (note) => html`<tr>
  <td>${note.number}</td>
  <td><a href="/console/invoices/${note.invoiceId}${tenantQuery}">${invoiceNumbers.get(note.invoiceId) ?? "Invoice"}</a></td>
  <td>${REASONS[note.reason] ?? note.reason}</td>
  <td>${SETTLEMENTS[note.settlement] ?? note.settlement}</td>
  <td class="num">${money(note.total, note.currency)}</td>
  <td>${refundCell(note)}</td>
  <td>${day(note.createdAt)}</td>
  <td><a href="/console/credit-notes/${note.id}/pdf${tenantQuery}" download>PDF<span class="visually-hidden"> of ${note.number}</span></a></td>
</tr>`,
  );
}

/** A credit-note table under its heading, or the empty-state sentence. */
export function creditNoteTable(
  caption: string,
  notes: CreditNote[],
  invoiceNumbers: Map<string, string>,
  empty: string,
  tenantQuery = "",
): Html {
  return table(caption, HEADERS, creditNoteRows(notes, invoiceNumbers, tenantQuery), empty);
}

/** The numbers of the invoices the notes correct, read once per invoice. */
async function invoiceNumbersOf(view: ConsoleView, notes: CreditNote[]) {
  const ids = [...new Set(notes.map((note) => note.invoiceId))];
  const found = await Promise.all(ids.map((id) => view.api.get(`/invoices/${id}`)));
  const numbers = new Map<string, string>();
  found.forEach((result, index) => {
    const id = ids[index];
    if (id && result.ok && result.body.invoiceNumber) numbers.set(id, result.body.invoiceNumber);
  });
  return numbers;
}

/**
 * An invoice's credit notes for its page; asked for only once something
 * was credited. `tenantId`: an operator's look at another tenant.
 */
export async function invoiceCreditNotes(
  view: ConsoleView,
  invoice: { id: string; invoiceNumber: string | null; creditedTotal: number },
  tenantId: string | undefined,
): Promise<Html> {
  if (invoice.creditedTotal <= 0) return html``;
  const list = await view.api.get(`/credit-notes?invoiceId=${invoice.id}&limit=100`, { tenantId });
  if (!list.ok) return unavailable("the credit notes", list);
  const numbers = new Map([[invoice.id, invoice.invoiceNumber ?? "Invoice"]]);
  return html`<h2>Credit notes</h2>${creditNoteTable(
    "Credit notes of this invoice",
    list.body.data,
    numbers,
    "No credit note on this invoice.",
    tenantId ? `?tenantId=${tenantId}` : "",
  )}`;
}

const creditNotes: PageHandler = async (c, view) => {
  const page = Math.max(1, Number(c.req.query("page")) || 1);
  const list = await view.api.get(`/credit-notes?limit=25&page=${page}`);
  if (!list.ok) {
    return render(c, view, {
      title: "Credit notes",
      current: "/console/credit-notes",
      body: unavailable("the credit notes", list),
    });
  }
  const notes = list.body.data as CreditNote[];
  return render(c, view, {
    title: "Credit notes",
    current: "/console/credit-notes",
    body: html`<p class="hint">Corrections to invoices after they were issued: each lowers what an open invoice asks, refunds a payment, or adds to the credit balance.</p>
${creditNoteTable(
  "Credit notes, newest first",
  notes,
  await invoiceNumbersOf(view, notes),
  "No credit note yet: one is issued when an invoice is corrected after it was finalized.",
)}${pager("/console/credit-notes?", list.body.meta)}`,
  });
};

const creditNotePdf: PageHandler = (c, view) =>
  pdfDownload(c, view, `/credit-notes/${encodeURIComponent(c.req.param("id") ?? "")}/pdf`, {
    title: "Credit note PDF",
    href: "/console/credit-notes",
    back: "All credit notes",
  });

export function registerCreditNotePages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  app.get(
    "/credit-notes",
    tenantRoute(fetchApi)("/console/credit-notes", "Credit notes", creditNotes),
  );
  app.get(
    "/credit-notes/:id/pdf",
    signedIn(fetchApi, memberOrOperator("/console/credit-notes", "Credit notes", creditNotePdf)),
  );
}
