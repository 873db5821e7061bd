import type { Hono } from "hono";
import { html } from "hono/html";
import type { InvoiceBody } from "../../invoicing/index.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { badge, count, day, type Html, money, pager, table, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import { type PageHandler, signedIn } from "../signed-in.ts";
import { render } from "../view.ts";
import { invoiceCreditNotes } from "./credit-notes.ts";
import { memberOrOperator, operatorTenant, pdfDownload } from "./documents.ts";
import { tenantRoute, unavailable } from "./tenant-page.ts";

/** Rows of an invoice table; settlement adds a column of actions. */
export function invoiceRows(
  invoices: InvoiceBody[],
  actions?: (invoice: InvoiceBody) => Html,
  /** Operators' links to another tenant's invoice: `?tenantId=...`. */
  tenantQuery = "",
): Html[] {
  return invoices.map(
    (invoice) => html`<tr>
  <td><a href="/console/invoices/${invoice.id}${tenantQuery}">${invoice.invoiceNumber ?? "Draft"}</a></td>
  <td>${badge(invoice.status)}</td>
  <td>${day(invoice.periodStart)} to ${day(invoice.periodEnd)}</td>
  <td class="num">${money(invoice.total, invoice.currency)}</td>
  <td><a href="/console/invoices/${invoice.id}/pdf${tenantQuery}" download>PDF<span class="visually-hidden"> of ${invoice.invoiceNumber ?? "the draft"}</span></a></td>
  ${actions ? html`<td>${actions(invoice)}</td>` : ""}
</tr>`,
  );
}

const invoices: PageHandler = async (c, view) => {
  const page = Math.max(1, Number(c.req.query("page")) || 1);
  const list = await view.api.get(`/invoices?limit=25&page=${page}`);
  return render(c, view, {
    title: "Invoices",
    current: "/console/invoices",
    body: !list.ok
      ? unavailable("the invoices", list)
      : html`${table(
          "Invoices, newest first",
          ["Number", "Status", "Period", "Total", "Document"],
          invoiceRows(list.body.data),
          "No invoice yet: the first one is issued when the first billing period closes.",
        )}${pager("/console/invoices?", list.body.meta)}`,
  });
};

/** Statuses an operator may issue a credit note on (the API says why any other is refused). */
export const CREDITABLE_STATUSES: string[] = ["OPEN", "PAID"];

/**
 * The invoice's totals as it carries them; once credit notes corrected it,
 * what they credited and what is still due.
 */
function totalsPanel(invoice: InvoiceBody): Html {
  const credits = invoice.lineItems
    .filter((l) => l.kind === "CREDIT_APPLIED")
    .reduce((s, l) => s + l.amount, 0);
  return html`<div class="panel"><dl class="facts">
  <dt>Subtotal</dt><dd>${money(invoice.subtotal, invoice.currency)}</dd>
  ${invoice.discount ? html`<dt>Discount</dt><dd>${money(-invoice.discount, invoice.currency)}</dd>` : ""}
  ${invoice.tax || invoice.taxRate !== null ? html`<dt>Tax${invoice.taxRate !== null ? ` (${invoice.taxRate}%)` : ""}</dt><dd>${money(invoice.tax, invoice.currency)}</dd>` : ""}
  ${credits ? html`<dt>Credit applied</dt><dd>${money(credits, invoice.currency)}</dd>` : ""}
  <dt><strong>Total</strong></dt><dd><strong data-testid="invoice-total">${money(invoice.total, invoice.currency)}</strong></dd>
  ${
    invoice.creditedTotal > 0
      ? html`<dt>Credited by credit notes</dt><dd data-testid="invoice-credited">${money(invoice.creditedTotal, invoice.currency)}</dd>
  <dt><strong>Amount due</strong></dt><dd><strong data-testid="invoice-amount-due">${money(invoice.amountDue, invoice.currency)}</strong></dd>`
      : ""
  }
</dl></div>`;
}

const invoiceDetail: PageHandler = async (c, view) => {
  const id = c.req.param("id") as string;
  const otherTenant = operatorTenant(c, view);
  const tenantQuery = otherTenant ? `?tenantId=${otherTenant}` : "";
  const found = await view.api.get(`/invoices/${encodeURIComponent(id)}`, {
    tenantId: otherTenant,
  });
  if (!found.ok) {
    return render(c, view, {
      title: "Invoice",
      current: "/console/invoices",
      status: found.status === 400 ? 404 : found.status,
      body:
        found.status === 404 || found.status === 400
          ? html`<p class="empty">There is no such invoice in this tenant.</p><p><a href="/console/invoices">All invoices</a></p>`
          : unavailable("the invoice", found),
    });
  }
  const invoice = found.body as InvoiceBody;
  return render(c, view, {
    title: invoice.invoiceNumber ? `Invoice ${invoice.invoiceNumber}` : "Draft invoice",
    current: "/console/invoices",
    body: html`<p><a href="${otherTenant ? `/console/admin/settlement${tenantQuery}` : "/console/invoices"}">All invoices</a> · <a href="/console/invoices/${invoice.id}/pdf${tenantQuery}" download>Download as PDF</a>${
      otherTenant && CREDITABLE_STATUSES.includes(invoice.status)
        ? html` · <a href="/console/admin/settlement/${invoice.id}/credit-note${tenantQuery}">Issue a credit note</a>`
        : ""
    }</p>
<div class="panel"><dl class="facts">
  <dt>Status</dt><dd>${badge(invoice.status)}</dd>
  <dt>Kind</dt><dd>${invoice.kind}</dd>
  <dt>Period</dt><dd>${when(invoice.periodStart)} to ${when(invoice.periodEnd)}</dd>
  <dt>Finalized</dt><dd>${when(invoice.finalizedAt)}</dd>
  <dt>Due</dt><dd>${when(invoice.dueDate)}</dd>
  ${invoice.paidAt ? html`<dt>Paid</dt><dd>${when(invoice.paidAt)}</dd>` : ""}
  ${invoice.voidedAt ? html`<dt>Voided</dt><dd>${when(invoice.voidedAt)}</dd>` : ""}
</dl></div>
${table(
  "Line items",
  ["Description", "Kind", "Quantity", "Amount"],
  invoice.lineItems.map(
    (line) =>
      html`<tr><td>${line.description}</td><td>${line.kind}</td><td class="num">${count(line.quantity)}</td><td class="num">${money(line.amount, invoice.currency)}</td></tr>`,
  ),
  "This invoice has no lines.",
)}
${totalsPanel(invoice)}
${await invoiceCreditNotes(view, invoice, otherTenant)}`,
  });
};

const invoicePdf: PageHandler = (c, view) =>
  pdfDownload(c, view, `/invoices/${encodeURIComponent(c.req.param("id") ?? "")}/pdf`, {
    title: "Invoice PDF",
    href: "/console/invoices",
    back: "All invoices",
  });

export function registerInvoicePages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  app.get("/invoices", tenantRoute(fetchApi)("/console/invoices", "Invoices", invoices));
  const memberOrOperatorPage = (handler: PageHandler) =>
    signedIn(fetchApi, memberOrOperator("/console/invoices", "Invoices", handler));
  app.get("/invoices/:id", memberOrOperatorPage(invoiceDetail));
  app.get("/invoices/:id/pdf", memberOrOperatorPage(invoicePdf));
}
