import type { Context, Hono } from "hono";
import { html } from "hono/html";
import { errorText } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { day, formGuard, type Html, table } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { CREDITABLE_STATUSES, invoiceRows } from "../tenant/invoices.ts";
import { type ConsoleView, done, formOf, render } from "../view.ts";
import { operatorRoute, type WriteError } from "./operator-page.ts";

async function settlementPage(c: Context<ConsoleEnv>, view: ConsoleView, extra: WriteError = {}) {
  const tenantId = c.req.query("tenantId") || undefined;
  const picker = await view.api.get("/admin/tenants?limit=100", { tenantId: null });
  const options = picker.ok
    ? (picker.body.data as { id: string; name: string; slug: string }[])
    : [];
  let section: Html = html`<p class="empty">Choose a tenant to settle its invoices.</p>`;
  if (tenantId) {
    const list = await view.api.get("/invoices?limit=50", { tenantId });
    const guard = formGuard(view.csrfToken);
    const action = (
      invoiceId: string,
      verb: string,
      label: string,
      danger = false,
      confirm?: string,
    ) =>
      html`<form method="post" action="/console/admin/settlement/${invoiceId}/${verb}?tenantId=${tenantId}" class="inline"${confirm ? html` data-confirm="${confirm}"` : ""}>${guard}<button type="submit" class="${danger ? "danger" : "secondary"}">${label}</button></form> `;
    section = !list.ok
      ? html`<p class="error" role="alert">The invoices could not be loaded: ${errorText(list)}</p>`
      : html`<form method="post" action="/console/admin/settlement/generate?tenantId=${tenantId}" class="panel" data-confirm="Generate a draft of the current period from the usage so far? Nothing is billed until the draft is finalized.">${guard}<button type="submit">Generate the current period's draft</button> <span class="hint">From the usage so far; the billing cycle does this itself when a period closes.</span></form>
${table(
  "The tenant's invoices, newest first",
  ["Number", "Status", "Period", "Total", "Document", "Actions"],
  invoiceRows(
    list.body.data,
    (invoice) =>
      html`${invoice.status === "DRAFT" ? action(invoice.id, "finalize", "Finalize", false, finalizeQuestion(invoice)) : ""}${
        invoice.status === "OPEN" || invoice.status === "UNCOLLECTIBLE"
          ? action(invoice.id, "mark-paid", "Mark paid")
          : ""
      }${
        ["DRAFT", "OPEN", "UNCOLLECTIBLE"].includes(invoice.status)
          ? action(
              invoice.id,
              "void",
              "Void",
              true,
              `Void invoice ${invoice.invoiceNumber ?? "(draft)"}?`,
            )
          : ""
      }${invoice.status === "VOID" ? action(invoice.id, "reissue", "Reissue") : ""}${
        CREDITABLE_STATUSES.includes(invoice.status)
          ? html`<a href="/console/admin/settlement/${invoice.id}/credit-note?tenantId=${tenantId}">Credit note<span class="visually-hidden"> on ${invoice.invoiceNumber}</span></a>`
          : ""
      }`,
    `?tenantId=${tenantId}`,
  ),
  "This tenant has no invoice yet.",
)}`;
  }
  const current = options.find((t) => t.id === tenantId);
  return render(c, view, {
    title: current ? `Settlement: ${current.name}` : "Settlement",
    current: "/console/admin/settlement",
    error: extra.error,
    status: extra.status,
    body: html`<form method="get" action="/console/admin/settlement" class="row panel">
  <div class="field"><label for="settle-tenant">Tenant</label><select id="settle-tenant" name="tenantId">${options.map(
    (t) =>
      html`<option value="${t.id}"${t.id === tenantId ? html` selected` : ""}>${t.name} (${t.slug})</option>`,
  )}</select></div>
  <button type="submit">Show invoices</button>
</form>
${section}`,
  });
}

/**
 * A write on one invoice of the tenant being settled (or, for a draft, on
 * the tenant): back to its invoices, or the page again with why it failed.
 */
function settlementAction(
  verb: string,
  apiPath: (invoiceId: string) => string,
  notice: string,
  body?: (invoiceId: string) => unknown,
): PageHandler {
  return async (c, view) => {
    const form = await formOf(c);
    const tenantId = c.req.query("tenantId") ?? "";
    const invoiceId = c.req.param("invoiceId") ?? "";
    const result = await view.api.post(apiPath(invoiceId), {
      tenantId,
      idempotencyKey: form._idem,
      ...(body ? { body: body(invoiceId) } : {}),
    });
    if (!result.ok)
      return settlementPage(c, view, {
        error: `Could not ${verb}: ${errorText(result)}`,
        status: result.status,
      });
    return done(c, `/console/admin/settlement?tenantId=${encodeURIComponent(tenantId)}`, notice);
  };
}

/**
 * Finalizing bills the tenant; mid-period it bills the period as it stands,
 * which is rarely meant, so the question says when the period ends.
 */
function finalizeQuestion(invoice: { invoiceNumber?: string | null; periodEnd?: string }): string {
  const name = `the ${invoice.invoiceNumber ?? "draft"} invoice`;
  if (invoice.periodEnd && Date.parse(invoice.periodEnd) > Date.now()) {
    return `Its period runs until ${day(invoice.periodEnd)}: finalizing now bills ${name} as it stands, mid-period, and charges the tenant. Finalize anyway?`;
  }
  return `Finalize ${name}? The tenant is charged for it.`;
}

export function registerSettlementPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  const page = (handler: PageHandler) =>
    operatorRoute(fetchApi)("/console/admin/settlement", "Settlement", handler);
  app.get(
    "/admin/settlement",
    page((c, v) => settlementPage(c, v)),
  );
  app.post(
    "/admin/settlement/generate",
    page(settlementAction("generate the draft", () => "/invoices/generate", "invoice-generated")),
  );
  app.post(
    "/admin/settlement/:invoiceId/finalize",
    page(
      settlementAction(
        "finalize the invoice",
        (id) => `/invoices/${encodeURIComponent(id)}/finalize`,
        "invoice-finalized",
      ),
    ),
  );
  app.post(
    "/admin/settlement/:invoiceId/void",
    page(
      settlementAction(
        "void the invoice",
        (id) => `/invoices/${encodeURIComponent(id)}/void`,
        "invoice-voided",
      ),
    ),
  );
  app.post(
    "/admin/settlement/:invoiceId/mark-paid",
    page(
      settlementAction(
        "mark the invoice paid",
        (id) => `/invoices/${encodeURIComponent(id)}/mark-paid`,
        "invoice-paid",
      ),
    ),
  );
  app.post(
    "/admin/settlement/:invoiceId/reissue",
    page(
      settlementAction(
        "reissue the invoice",
        () => "/invoices/generate",
        "invoice-reissued",
        (id) => ({ replacesInvoiceId: id }),
      ),
    ),
  );
}
