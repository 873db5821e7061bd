import type { Context, Hono } from "hono";
import { html } from "hono/html";
import type { InvoiceBody } from "../../invoicing/index.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { badge, count, day, type Html, money, pager, table, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import { type PageHandler, signedIn } from "../signed-in.ts";
import { type ConsoleView, render } from "../view.ts";
import { tenantPage, tenantRoute, unavailable } from "./tenant-page.ts";

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

/** An operator looking at another tenant's invoice from settlement names the tenant. */
function operatorTenant(c: Context<ConsoleEnv>, view: ConsoleView): string | undefined {
  const tenantId = c.req.query("tenantId");
  return tenantId && view.user.isPlatformAdmin ? tenantId : undefined;
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
  const credits = invoice.lineItems
    .filter((l) => l.kind === "CREDIT_APPLIED")
    .reduce((s, l) => s + l.amount, 0);
  return render(c, view, {
    title: invoice.invoiceNumber ? `Invoice ${invoice.invoiceNumber}` : "Draft invoice",
    current: "/console/invoices",
    body: html`<p><a href="${otherTenant ? `/console/admin/settlement${tenantQuery}` : "/console/invoices"}">All invoices</a> · <a href="/console/invoices/${invoice.id}/pdf${tenantQuery}" download>Download as PDF</a></p>
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
<div class="panel"><dl class="facts">
  <dt>Subtotal</dt><dd>${money(invoice.subtotal, invoice.currency)}</dd>
  ${invoice.discount ? html`<dt>Discount</dt><dd>${money(-invoice.discount, invoice.currency)}</dd>` : ""}
  ${invoice.tax || invoice.taxRate !== null ? html`<dt>Tax${invoice.taxRate !== null ? ` (${invoice.taxRate}%)` : ""}</dt><dd>${money(invoice.tax, invoice.currency)}</dd>` : ""}
  ${credits ? html`<dt>Credit applied</dt><dd>${money(credits, invoice.currency)}</dd>` : ""}
  <dt><strong>Total</strong></dt><dd><strong data-testid="invoice-total">${money(invoice.total, invoice.currency)}</strong></dd>
</dl></div>`,
  });
};

async function invoicePdf(c: Context<ConsoleEnv>, view: ConsoleView) {
  const id = c.req.param("id") as string;
  // Operators download any tenant's invoice from settlement.
  const response = await view.api.raw(`/invoices/${encodeURIComponent(id)}/pdf`, {
    tenantId: operatorTenant(c, view),
  });
  if (!response.ok) {
    const body = (await response.json().catch(() => ({}))) as { message?: string };
    return render(c, view, {
      title: "Invoice PDF",
      current: "/console/invoices",
      status: response.status,
      error: `The PDF could not be made: ${body.message ?? `HTTP ${response.status}`}`,
      body: html`<p><a href="/console/invoices">All invoices</a></p>`,
    });
  }
  return new Response(response.body, {
    status: 200,
    headers: {
      "content-type": "application/pdf",
      "content-disposition": response.headers.get("content-disposition") ?? "attachment",
      "cache-control": "private, no-store",
    },
  });
}

/** Operators open any tenant's invoice from settlement; members their own tenant's, by role. */
function memberOrOperator(handler: PageHandler): PageHandler {
  return async (c, view) =>
    operatorTenant(c, view)
      ? handler(c, view)
      : tenantPage("/console/invoices", "Invoices", handler)(c, view);
}

export function registerInvoicePages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  app.get("/invoices", tenantRoute(fetchApi)("/console/invoices", "Invoices", invoices));
  app.get("/invoices/:id", signedIn(fetchApi, memberOrOperator(invoiceDetail)));
  app.get("/invoices/:id/pdf", signedIn(fetchApi, memberOrOperator(invoicePdf)));
}
