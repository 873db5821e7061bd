import { html } from "hono/html";
import type { ApiResult } from "../api-client.ts";
import { badge, formGuard, type Html, money, table, when } from "../layout.ts";
import type { ConsoleView } from "../view.ts";
import { unavailable } from "./tenant-page.ts";

type CreditGrant = {
  id: string;
  amount: number;
  remaining: number;
  currency: string;
  category: string;
  priority: number;
  expiresAt: string | null;
  features: string[] | null;
  status: string;
  invoiceId: string | null;
};

/** The prepaid credit: the live grants in burn-down order and buying more (the balance is on the overview's card). */
export function creditSection(view: ConsoleView, credits: ApiResult | null): Html {
  if (!credits) {
    return html`<p class="empty">Your role (${view.role}) cannot see the prepaid credit; owners, admins and billing members can.</p>`;
  }
  if (!credits.ok) return unavailable("the prepaid credit", credits);
  const { balance, currency, grants, autoTopUp } = credits.body as {
    balance: number;
    currency: string;
    grants: CreditGrant[];
    autoTopUp: {
      enabled: boolean;
      threshold: number;
      amount: number;
      disabledReason: string | null;
    } | null;
  };
  return html`<p class="hint">The balance above is the sum of the active, unexpired grants below (${money(balance, currency)}); priced usage draws it before it is invoiced.</p>
${
  autoTopUp
    ? html`<p>Automatic top-up: ${
        autoTopUp.enabled
          ? `buys ${money(autoTopUp.amount, currency)} when the balance falls below ${money(autoTopUp.threshold, currency)}.`
          : `off${autoTopUp.disabledReason ? ` (${autoTopUp.disabledReason})` : ""}.`
      }</p>`
    : ""
}
${table(
  "Credit grants in the order usage draws them",
  ["Kind", "Status", "Granted", "Remaining", "Priority", "Expires", "Pays for", "Invoice"],
  grants.map(
    (grant) =>
      html`<tr><td>${grant.category}</td><td>${badge(grant.status)}</td><td class="num">${money(grant.amount, grant.currency)}</td><td class="num">${money(grant.remaining, grant.currency)}</td><td class="num">${grant.priority}</td><td>${grant.expiresAt ? when(grant.expiresAt) : "never"}</td><td>${grant.features ? grant.features.join(", ") : "all priced usage"}</td><td>${
        grant.invoiceId
          ? html`<a href="/console/invoices/${grant.invoiceId}">Invoice<span class="visually-hidden"> of the ${money(grant.amount, grant.currency)} grant</span></a>`
          : "-"
      }</td></tr>`,
  ),
  "No credit yet: buy some below. Usage with a price then draws it down before it is invoiced.",
)}
<form method="post" action="/console/credits/top-up" class="row panel">${formGuard(view.csrfToken)}
  <div class="field"><label for="top-up-amount">Amount (cents)</label><input id="top-up-amount" name="amount" type="number" min="1" max="1000000000" step="1" required inputmode="numeric" aria-describedby="top-up-hint" /></div>
  <button type="submit">Buy credit</button>
  <p id="top-up-hint" class="hint">In whole cents of ${currency.toUpperCase()}: 5000 buys ${money(5000, currency)}. It is invoiced now (TOP_UP) and the credit counts once that invoice is paid.</p>
</form>`;
}

/** The form's amount in whole cents, or why it is not one. */
export function topUpCents(value: string | undefined): number | string {
  const trimmed = value?.trim() ?? "";
  if (!trimmed) return "Enter the amount of credit to buy, in cents.";
  if (!/^\d+$/.test(trimmed)) {
    return `The amount "${trimmed}" is not a whole number of cents: enter, for example, 5000 for 50.00.`;
  }
  return Number(trimmed);
}
