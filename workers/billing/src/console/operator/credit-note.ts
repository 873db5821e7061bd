import type { Context, Hono } from "hono";
import { html } from "hono/html";
import type { InvoiceBody } from "../../invoicing/index.ts";
import { errorText } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { badge, formGuard, type Html, money, table } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { type CreditNote, REASONS } from "../tenant/credit-notes.ts";
import { CREDITABLE_STATUSES } from "../tenant/invoices.ts";
import { type ConsoleView, done, formOf, render } from "../view.ts";
import { operatorRoute, type WriteError } from "./operator-page.ts";

type InvoiceLine = InvoiceBody["lineItems"][number];

/** Lines that are charges; the API credits no other kind. */
const CREDITABLE_KINDS = ["BASE", "USAGE", "CREDIT_PURCHASE"];

/** Each settlement with what it does, offered only on the statuses the API takes it for. */
const SETTLEMENT_CHOICES = [
  { value: "REDUCE", label: "REDUCE: lower the amount due", statuses: ["OPEN"] },
  { value: "REFUND", label: "REFUND: money back through the payment provider", statuses: ["PAID"] },
  { value: "CREDIT", label: "CREDIT: to the tenant's credit balance", statuses: ["OPEN", "PAID"] },
];

const LINE_FIELD = "line-";

/** What the form sent, shown again when the API refused it. */
type Entered = WriteError & { entered?: Record<string, string> };

function where(c: Context<ConsoleEnv>) {
  const tenantId = c.req.query("tenantId") ?? "";
  const invoiceId = c.req.param("invoiceId") ?? "";
  return { tenantId, invoiceId, query: `?tenantId=${encodeURIComponent(tenantId)}` };
}

/** Cents earlier credit notes took off each line, by line id. */
function creditedByLine(notes: CreditNote[]): Map<string, number> {
  const credited = new Map<string, number>();
  for (const line of notes.flatMap((note) => note.lines)) {
    credited.set(line.lineItemId, (credited.get(line.lineItemId) ?? 0) + line.amount);
  }
  return credited;
}

function lineRow(
  line: InvoiceLine,
  credited: number,
  currency: string,
  entered: Record<string, string>,
): Html {
  const left = line.amount - credited;
  const field = `${LINE_FIELD}${line.id}`;
  return html`<tr><td>${line.description}</td><td>${line.kind}</td><td class="num">${money(line.amount, currency)}</td><td class="num">${money(credited, currency)}</td><td>${
    left > 0
      ? html`<label class="visually-hidden" for="cn-${field}">Credit on ${line.description}, in cents (at most ${left})</label><input id="cn-${field}" name="${field}" type="number" min="0" max="${left}" step="1" inputmode="numeric" value="${entered[field] ?? ""}" />`
      : html`<span class="hint">Fully credited</span>`
  }</td></tr>`;
}

function options(choices: { value: string; label: string }[], selected: string | undefined): Html {
  return html`${choices.map(
    (choice) =>
      html`<option value="${choice.value}"${choice.value === selected ? html` selected` : ""}>${choice.label}</option>`,
  )}`;
}

function issueForm(
  view: ConsoleView,
  invoice: InvoiceBody,
  notes: CreditNote[],
  extra: Entered & { action: string },
) {
  const { entered = {} } = extra;
  const credited = creditedByLine(notes);
  const lines = invoice.lineItems.filter(
    (line) => CREDITABLE_KINDS.includes(line.kind) && line.amount > 0,
  );
  if (lines.length === 0) {
    return html`<p class="empty">This invoice has no charge that can be credited.</p>`;
  }
  const name = invoice.invoiceNumber ?? "this invoice";
  const settlements = SETTLEMENT_CHOICES.filter((s) => s.statuses.includes(invoice.status));
  return html`<form method="post" action="${extra.action}" class="panel" data-confirm="Issue a credit note on ${name}? It cannot be changed or withdrawn once issued.">${formGuard(view.csrfToken)}
  <div class="field"><label for="cn-reason">Reason</label><select id="cn-reason" name="reason">${options(
    Object.entries(REASONS).map(([value, label]) => ({ value, label })),
    entered.reason,
  )}</select></div>
  <div class="field"><label for="cn-settlement">Settlement</label><select id="cn-settlement" name="settlement">${options(settlements, entered.settlement)}</select></div>
  <h2>Amounts to credit</h2>
  <p class="hint">In whole cents of ${invoice.currency.toUpperCase()} before tax (1500 credits ${money(1500, invoice.currency)}); leave a line empty to credit nothing on it. Tax is credited in proportion.</p>
  ${table(
    "Lines that can be credited",
    ["Line", "Kind", "Amount", "Credited so far", "Credit (cents)"],
    lines.map((line) => lineRow(line, credited.get(line.id) ?? 0, invoice.currency, entered)),
    "",
    { captionHidden: true },
  )}
  <div class="field"><label for="cn-memo">Memo (optional, printed on the credit note)</label><textarea id="cn-memo" name="memo" maxlength="500" rows="3">${entered.memo ?? ""}</textarea></div>
  <p><button type="submit">Issue the credit note</button></p>
</form>`;
}

async function creditNotePage(c: Context<ConsoleEnv>, view: ConsoleView, extra: Entered = {}) {
  const { tenantId, invoiceId, query } = where(c);
  const [found, listed] = await Promise.all([
    view.api.get(`/invoices/${encodeURIComponent(invoiceId)}`, { tenantId }),
    view.api.get(`/credit-notes?invoiceId=${encodeURIComponent(invoiceId)}&limit=100`, {
      tenantId,
    }),
  ]);
  const back = html`<p><a href="/console/admin/settlement${query}">Back to settlement</a>${
    found.ok
      ? html` · <a href="/console/invoices/${invoiceId}${query}">Invoice ${found.body.invoiceNumber ?? "(draft)"}</a>`
      : ""
  }</p>`;
  let body: Html;
  if (!found.ok) {
    body = html`${back}<p class="error" role="alert">The invoice could not be loaded: ${errorText(found)}</p>`;
  } else {
    const invoice = found.body as InvoiceBody;
    const notes = listed.ok ? (listed.body.data as CreditNote[]) : [];
    body = html`${back}${
      listed.ok
        ? ""
        : html`<p class="error" role="alert">What earlier credit notes took off each line could not be loaded (${errorText(listed)}); the API still refuses more than is left.</p>`
    }<p>${badge(invoice.status)} invoice, total ${money(invoice.total, invoice.currency)}; credited so far ${money(invoice.creditedTotal, invoice.currency)}; amount due ${money(invoice.amountDue, invoice.currency)}.</p>
${
  CREDITABLE_STATUSES.includes(invoice.status)
    ? issueForm(view, invoice, notes, {
        ...extra,
        action: `/console/admin/settlement/${invoiceId}/credit-note${query}`,
      })
    : html`<p class="empty">Credit notes are issued on OPEN or PAID invoices; this one is ${invoice.status}.</p>`
}`;
  }
  return render(c, view, {
    title: found.ok ? `Credit note on ${found.body.invoiceNumber ?? "a draft"}` : "Credit note",
    current: "/console/admin/settlement",
    error: extra.error,
    status: extra.status,
    body,
  });
}

/** The lines the form credits, in whole cents, or why the form cannot be sent as it is. */
function requestedLines(
  form: Record<string, string>,
): { lineItemId: string; amount: number }[] | string {
  const lines: { lineItemId: string; amount: number }[] = [];
  for (const [name, value] of Object.entries(form)) {
    if (!name.startsWith(LINE_FIELD)) continue;
    const trimmed = value.trim();
    if (!trimmed) continue;
    if (!/^\d+$/.test(trimmed)) {
      return `The amount "${trimmed}" is not a whole number of cents: enter, for example, 1500 for 15.00.`;
    }
    const amount = Number(trimmed);
    if (amount > 0) lines.push({ lineItemId: name.slice(LINE_FIELD.length), amount });
  }
  return lines.length > 0 ? lines : "Enter an amount in cents on at least one line to credit.";
}

const issue: PageHandler = async (c, view) => {
  const form = await formOf(c);
  const { tenantId, invoiceId, query } = where(c);
  const lines = requestedLines(form);
  if (typeof lines === "string") {
    return creditNotePage(c, view, { error: lines, status: 400, entered: form });
  }
  const memo = form.memo?.trim();
  const result = await view.api.post(`/invoices/${encodeURIComponent(invoiceId)}/credit-notes`, {
    tenantId,
    idempotencyKey: form._idem,
    body: { reason: form.reason, settlement: form.settlement, lines, ...(memo ? { memo } : {}) },
  });
  if (!result.ok) {
    return creditNotePage(c, view, {
      error: `Could not issue the credit note: ${errorText(result)}`,
      status: result.status,
      entered: form,
    });
  }
  return done(
    c,
    `/console/invoices/${encodeURIComponent(invoiceId)}${query}`,
    "credit-note-issued",
  );
};

export function registerCreditNoteIssuePages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  const page = (handler: PageHandler) =>
    operatorRoute(fetchApi)("/console/admin/settlement", "Settlement", handler);
  app.get(
    "/admin/settlement/:invoiceId/credit-note",
    page((c, v) => creditNotePage(c, v)),
  );
  app.post("/admin/settlement/:invoiceId/credit-note", page(issue));
}
