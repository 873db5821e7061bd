import type { Context, Hono } from "hono";
import { html } from "hono/html";
import type { InvoiceBody } from "../invoicing/index.ts";
import { TENANT_EVENT_TYPES } from "../notifications/index.ts";
import {
  type ApiBody,
  type ApiFetch,
  type ApiResult,
  type ConsoleApi,
  errorText,
} from "./api-client.ts";
import { barChart } from "./chart.ts";
import { badge, count, day, formGuard, type Html, money, table, when } from "./layout.ts";
import { type PageHandler, signedIn } from "./routes.ts";
import type { ConsoleEnv } from "./session.ts";
import {
  type ConsoleView,
  CREDIT_ROLES,
  canSee,
  done,
  formOf,
  formValues,
  render,
} from "./view.ts";

type Snapshot = {
  featureLookupKey: string;
  featureType: "BOOLEAN" | "QUOTA" | "METERED";
  limit: number | null;
  includedAmount: number | null;
  limitBehavior: string | null;
  resetPeriod: string | null;
};

/** A page for the tenant's members of some roles; others are told why not. */
function tenantPage(href: string, title: string, handler: PageHandler): PageHandler {
  return async (c, view) => {
    if (!view.tenantId) {
      return render(c, view, {
        title,
        current: href,
        body: html`<p class="empty">You are not a member of any tenant yet, so there is nothing to show here.${
          view.user.isPlatformAdmin ? " The operator screens are in the navigation." : ""
        }</p>`,
      });
    }
    if (!canSee(view, href)) {
      return render(c, view, {
        title,
        current: href,
        status: 403,
        error: `Your role in this tenant (${view.role}) does not give access to ${title.toLowerCase()}. Ask an owner or admin if you need it.`,
        body: html``,
      });
    }
    return handler(c, view);
  };
}

/** Why a section could not be shown, in words. */
function unavailable(what: string, result: ApiResult): Html {
  if (result.status === 403) return html`<p class="empty">Your role cannot see ${what}.</p>`;
  return html`<p class="error" role="alert">${what[0]?.toUpperCase()}${what.slice(1)} could not be loaded: ${errorText(result)}</p>`;
}

async function activeSubscription(view: ConsoleView) {
  return view.api.get("/subscriptions/active");
}

function countedFeatures(subscription: { entitlementSnapshots?: Snapshot[] } | null): Snapshot[] {
  return (subscription?.entitlementSnapshots ?? []).filter((s) => s.featureType !== "BOOLEAN");
}

// ---------------------------------------------------------------- overview

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

/** The prepaid credit: its balance, the live grants in burn-down order, buying more. */
function creditSection(view: ConsoleView, credits: ApiResult | null): Html {
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
  return html`<p>Balance: <strong data-testid="prepaid-balance">${money(balance, currency)}</strong> <span class="hint">(active, unexpired grants; priced usage draws it before it is invoiced)</span></p>
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

const overview: PageHandler = (c, view) => overviewPage(c, view);

async function overviewPage(
  c: Context<ConsoleEnv>,
  view: ConsoleView,
  extra: { error?: string; status?: number } = {},
) {
  const [subscription, upcoming, balance, alerts, credits] = await Promise.all([
    activeSubscription(view),
    view.api.get("/invoices/upcoming"),
    view.api.get("/billing/balance"),
    view.api.get("/usage-alerts?limit=100"),
    canSee(view, CREDIT_ROLES) ? view.api.get("/credits") : Promise.resolve(null),
  ]);
  if (!subscription.ok) {
    return render(c, view, {
      title: "Overview",
      current: "/console/overview",
      error: extra.error,
      status: extra.status,
      body:
        subscription.status === 404
          ? html`<p class="empty">This tenant has no subscription yet, so there is no plan, usage or invoice to show. Subscribe through the API (POST /api/v1/subscriptions) to start.</p>`
          : unavailable("the subscription", subscription),
    });
  }
  const sub = subscription.body;
  const features = countedFeatures(sub);
  const checks = await Promise.all(
    features.map((feature) =>
      view.api.get(`/entitlements/${encodeURIComponent(feature.featureLookupKey)}/check`),
    ),
  );
  const usedOf = new Map<string, number>();
  const meters = features.map((feature, index) => {
    const check = checks[index];
    const used = check?.ok ? (check.body.used ?? 0) : null;
    if (used !== null) usedOf.set(feature.featureLookupKey, used);
    const cap = feature.featureType === "METERED" ? feature.includedAmount : feature.limit;
    const capLabel =
      feature.featureType === "METERED" ? "included" : `limit (${feature.limitBehavior ?? "HARD"})`;
    return html`<li class="panel">
      <strong>${feature.featureLookupKey}</strong> <span class="hint">${feature.featureType}</span>
      ${
        used === null
          ? html`<p class="error">The usage could not be read: ${check ? errorText(check) : ""}</p>`
          : html`<meter class="usage-meter" min="0" max="${cap ?? Math.max(used, 1)}" low="${Math.round((cap ?? used) * 0.8)}" high="${cap ?? Math.max(used, 1)}" optimum="0" value="${used}" aria-label="${feature.featureLookupKey}: ${count(used)} used${cap !== null && cap !== undefined ? ` of ${count(cap)}` : ""}">${count(used)}</meter>
      <p>${count(used)} used${cap !== null && cap !== undefined ? html` of ${count(cap)} ${capLabel}` : " (no limit)"}${
        check?.body.resetAt ? html` · resets ${when(check.body.resetAt)}` : ""
      }</p>`
      }
    </li>`;
  });
  const fired = alerts.ok
    ? (
        alerts.body.data as {
          id: string;
          featureLookupKey: string;
          thresholdUnits: number | null;
          threshold: { type: string; value: number };
        }[]
      ).filter(
        (alert) =>
          alert.thresholdUnits !== null &&
          alert.thresholdUnits !== undefined &&
          (usedOf.get(alert.featureLookupKey) ?? -1) >= alert.thresholdUnits,
      )
    : [];
  const status = sub.status as string;
  const statusText =
    status === "TRIALING"
      ? `Trial until ${when(sub.trialEndsAt)}`
      : status === "PAUSED"
        ? `Paused since ${when(sub.pausedAt)}`
        : sub.cancelAtPeriodEnd
          ? `Ends at the period's end (${when(sub.currentPeriodEnd)})`
          : status === "ACTIVE"
            ? `Renews ${day(sub.currentPeriodEnd)}`
            : `Status ${status}`;
  const upcomingText = upcoming.ok
    ? money(upcoming.body.total, upcoming.body.currency)
    : upcoming.status === 409
      ? errorText(upcoming)
      : upcoming.status === 403
        ? "Not visible to your role"
        : `Not available: ${errorText(upcoming)}`;
  const balanceText = balance.ok
    ? money(balance.body.creditBalance, balance.body.currency)
    : balance.status === 403
      ? "Not visible to your role"
      : `Not available: ${errorText(balance)}`;
  return render(c, view, {
    title: "Overview",
    current: "/console/overview",
    error: extra.error,
    status: extra.status,
    body: html`<div class="cards">
  <div class="card"><div class="label">Plan</div><div class="value">${sub.plan.name}</div><div>${money(sub.price.amount, sub.price.currency)} / ${sub.price.interval === "MONTHLY" ? "month" : "year"}</div></div>
  <div class="card"><div class="label">Status</div><div class="value">${badge(status)}</div><div>${statusText}</div></div>
  <div class="card"><div class="label">Current period</div><div class="value">${day(sub.currentPeriodStart)} to ${day(sub.currentPeriodEnd)}</div><div>Ends ${when(sub.currentPeriodEnd)}</div></div>
  <div class="card"><div class="label">Upcoming invoice</div><div class="value" data-testid="upcoming-total">${upcomingText}</div></div>
  <div class="card"><div class="label">Credit balance</div><div class="value" data-testid="credit-balance">${balanceText}</div></div>
</div>
<h2>Usage this period</h2>
${features.length === 0 ? html`<p class="empty">The plan has no counted features.</p>` : html`<ul class="cards plain">${meters}</ul>`}
<h2>Alerts fired this period</h2>
${
  !alerts.ok
    ? unavailable("the usage alerts", alerts)
    : fired.length === 0
      ? html`<p class="empty">No alert has fired in the current reset window.</p>`
      : html`<ul>${fired.map(
          (alert) =>
            html`<li><strong>${alert.featureLookupKey}</strong> reached ${alert.threshold.type === "percent" ? `${alert.threshold.value}%` : `${count(alert.threshold.value)} units`} (${count(alert.thresholdUnits)} units; now ${count(usedOf.get(alert.featureLookupKey))})</li>`,
        )}</ul>`
}
<h2>Prepaid credit</h2>
${creditSection(view, credits)}`,
  });
}

// ------------------------------------------------------------------- usage

const RANGES: Record<string, { label: string; hours: number; granularity: "hour" | "day" }> = {
  "24h": { label: "Last 24 hours (hourly)", hours: 24, granularity: "hour" },
  "7d": { label: "Last 7 days (hourly)", hours: 24 * 7, granularity: "hour" },
  "30d": { label: "Last 30 days (daily)", hours: 24 * 30, granularity: "day" },
  "90d": { label: "Last 90 days (daily)", hours: 24 * 90, granularity: "day" },
};

const usage: PageHandler = async (c, view) => {
  const subscription = await activeSubscription(view);
  const features = countedFeatures(subscription.ok ? subscription.body : null);
  const feature = c.req.query("feature") || features[0]?.featureLookupKey;
  const rangeKey = RANGES[c.req.query("range") ?? ""] ? (c.req.query("range") as string) : "24h";
  const range = RANGES[rangeKey] as (typeof RANGES)[string];
  const to = new Date();
  const from = new Date(to.getTime() - range.hours * 3_600_000);
  const [series, events] = await Promise.all([
    feature
      ? view.api.get(
          `/usage/timeseries?feature=${encodeURIComponent(feature)}&from=${from.toISOString()}&to=${to.toISOString()}&granularity=${range.granularity}`,
        )
      : Promise.resolve(null),
    latestUsageEvents(view.api),
  ]);
  const featureOptions = [
    ...new Set([...features.map((f) => f.featureLookupKey), ...(feature ? [feature] : [])]),
  ];
  return render(c, view, {
    title: "Usage",
    current: "/console/usage",
    body: html`<form method="get" action="/console/usage" class="row panel" autocomplete="off">
  <div class="field"><label for="feature">Feature</label><select id="feature" name="feature">${featureOptions.map(
    (key) => html`<option value="${key}"${key === feature ? html` selected` : ""}>${key}</option>`,
  )}</select></div>
  <div class="field"><label for="range">Range</label><select id="range" name="range">${Object.entries(
    RANGES,
  ).map(
    ([key, value]) =>
      html`<option value="${key}"${key === rangeKey ? html` selected` : ""}>${value.label}</option>`,
  )}</select></div>
  <button type="submit">Show</button>
</form>
${
  !feature
    ? html`<p class="empty">No counted feature to chart: the tenant has no subscription with a QUOTA or METERED feature.</p>`
    : !series?.ok
      ? unavailable("the usage series", series as ApiResult)
      : html`<h2>${feature}: ${count(series.body.data.reduce((s: number, b: { value: number }) => s + b.value, 0))} units</h2>
${barChart(feature, series.body.data, range.granularity)}
<p class="hint">Units are charted once the counter has written them (a second or so after use). Times are UTC.</p>
<details><summary>The same data as a table</summary>
${table(
  `${feature} per ${range.granularity}`,
  ["From", "To", "Units"],
  (series.body.data as { start: string; end: string; value: number }[])
    .filter((b) => b.value > 0)
    .map(
      (b) =>
        html`<tr><td>${when(b.start)}</td><td>${when(b.end)}</td><td class="num">${count(b.value)}</td></tr>`,
    ),
  "No usage in this range.",
)}</details>`
}
<h2>Latest events</h2>
${
  !events.ok
    ? unavailable("the latest events", events)
    : table(
        "The 20 most recently received usage events of the last day, newest first",
        ["Event id", "Feature", "Units", "Happened", "Status"],
        (
          events.body.data as {
            eventId: string;
            feature: string;
            amount: number;
            timestamp: string;
            status: string;
            reason: string | null;
            message: string | null;
          }[]
        ).map(
          (e) =>
            html`<tr><td><code>${e.eventId}</code></td><td>${e.feature}</td><td class="num">${count(e.amount)}</td><td>${when(e.timestamp)}</td><td>${badge(e.status)}${e.reason ? html` <span class="hint">${e.reason}: ${e.message ?? ""}</span>` : ""}</td></tr>`,
        ),
        "No usage event received in the last day. Send some with POST /api/v1/usage/events and an API key.",
      )
}`,
  });
};

/**
 * The 20 latest events of the last day, newest first. The listing answers
 * in the order events were received, so the console asks for the most
 * recent window that holds any (a minute, an hour, a day) and keeps its
 * tail, following at most a few pages so a busy tenant's page stays quick.
 */
async function latestUsageEvents(api: ConsoleApi): Promise<ApiResult> {
  const now = Date.now();
  let last: ApiResult | undefined;
  for (const hours of [1 / 60, 1, 24]) {
    const from = new Date(now - hours * 3_600_000).toISOString();
    const events: ApiBody[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 5; page++) {
      const query = new URLSearchParams({ from, limit: "1000" });
      if (cursor) query.set("cursor", cursor);
      last = await api.get(`/usage/events?${query}`);
      if (!last.ok) return last;
      events.push(...last.body.data);
      cursor = last.body.meta.nextCursor;
      if (!cursor) break;
    }
    if (events.length > 0) {
      return { ...(last as ApiResult), body: { data: events.slice(-20).reverse() } };
    }
  }
  return last as ApiResult;
}

// ---------------------------------------------------------------- invoices

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

export function pager(base: string, meta: { page: number; totalPages: number } | undefined): Html {
  if (!meta || meta.totalPages <= 1) return html``;
  return html`<nav aria-label="Pages" class="row"><span>Page ${meta.page} of ${meta.totalPages}</span>${
    meta.page > 1 ? html` <a href="${base}page=${meta.page - 1}">Previous</a>` : ""
  }${meta.page < meta.totalPages ? html` <a href="${base}page=${meta.page + 1}">Next</a>` : ""}</nav>`;
}

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

// ---------------------------------------------------------------- API keys

async function keysPage(
  c: Context<ConsoleEnv>,
  view: ConsoleView,
  extra: {
    created?: { name: string; key?: string; notice?: string };
    error?: string;
    status?: number;
  } = {},
) {
  const list = await view.api.get("/api-keys?limit=100");
  const created = extra.created;
  return render(c, view, {
    title: "API keys",
    current: "/console/keys",
    error: extra.error,
    status: extra.status,
    body: html`${
      created
        ? created.key
          ? html`<div class="panel" role="status"><h2>Key "${created.name}" created</h2>
<p>Copy it now: it is shown this once and cannot be shown again.</p>
<div class="secret"><code id="new-key">${created.key}</code><button type="button" class="secondary" data-copy="new-key">Copy</button><span id="new-key-status" role="status"></span></div></div>`
          : html`<p class="notice" role="status">${created.notice ?? "The key was created earlier; it is not shown again."}</p>`
        : ""
    }
<h2>Create a key</h2>
<form method="post" action="/console/keys" class="row panel">${formGuard(view.csrfToken)}
  <div class="field"><label for="key-name">Name</label><input id="key-name" name="name" required maxlength="255" /></div>
  <div class="field"><label for="key-days">Expires after (days, optional)</label><input id="key-days" name="expiresInDays" type="number" min="1" max="365" inputmode="numeric" /></div>
  <button type="submit">Create key</button>
</form>
<h2>Keys</h2>
${
  !list.ok
    ? unavailable("the keys", list)
    : table(
        "API keys, newest first",
        ["Name", "Prefix", "Status", "Created", "Last used", "Expires", ""],
        (
          list.body.data as {
            id: string;
            name: string;
            prefix: string;
            status: string;
            createdAt: string;
            lastUsedAt: string | null;
            expiresAt: string | null;
          }[]
        ).map(
          (key) =>
            html`<tr><td>${key.name}</td><td><code>${key.prefix}…</code></td><td>${badge(key.status)}</td><td>${when(key.createdAt)}</td><td>${when(key.lastUsedAt)}</td><td>${when(key.expiresAt)}</td><td>${
              key.status === "ACTIVE"
                ? html`<form method="post" action="/console/keys/${key.id}/revoke" class="inline" data-confirm="Revoke the key ${key.name}? Requests with it will be refused.">${formGuard(view.csrfToken)}<button type="submit" class="danger">Revoke<span class="visually-hidden"> ${key.name}</span></button></form>`
                : ""
            }</td></tr>`,
        ),
        "No API key yet. Create one for your servers to report usage.",
      )
}`,
  });
}

// ----------------------------------------------------------------- members

const members: PageHandler = async (c, view) => {
  const list = await view.api.get(`/tenants/${view.tenantId}/members`);
  return render(c, view, {
    title: "Members",
    current: "/console/members",
    body: !list.ok
      ? unavailable("the members", list)
      : table(
          "Members and their roles",
          ["Name", "Email", "Role", "Joined"],
          (
            list.body.data as {
              userId: string;
              email: string;
              firstName: string;
              lastName: string;
              role: string;
              joinedAt: string;
            }[]
          ).map(
            (m) =>
              html`<tr><td>${m.firstName} ${m.lastName}${m.userId === view.user.id ? " (you)" : ""}</td><td>${m.email}</td><td>${badge(m.role)}</td><td>${when(m.joinedAt)}</td></tr>`,
          ),
          "No members.",
        ),
  });
};

// ------------------------------------------------------------------ alerts

async function alertsPage(
  c: Context<ConsoleEnv>,
  view: ConsoleView,
  extra: { error?: string; status?: number } = {},
) {
  const [list, subscription] = await Promise.all([
    view.api.get("/usage-alerts?limit=100"),
    activeSubscription(view),
  ]);
  const features = countedFeatures(subscription.ok ? subscription.body : null);
  const canWrite = view.role !== "DEVELOPER";
  return render(c, view, {
    title: "Usage alerts",
    current: "/console/alerts",
    error: extra.error,
    status: extra.status,
    body: html`${
      canWrite
        ? html`<h2>Add an alert</h2>
<form method="post" action="/console/alerts" class="row panel">${formGuard(view.csrfToken)}
  <div class="field"><label for="alert-feature">Feature</label>${
    features.length > 0
      ? html`<select id="alert-feature" name="featureLookupKey">${features.map((f) => html`<option>${f.featureLookupKey}</option>`)}</select>`
      : html`<input id="alert-feature" name="featureLookupKey" required />`
  }</div>
  <div class="field"><label for="alert-type">Threshold in</label><select id="alert-type" name="type"><option value="percent">percent of the limit</option><option value="units">units</option></select></div>
  <div class="field"><label for="alert-value">Threshold</label><input id="alert-value" name="value" type="number" min="1" required inputmode="numeric" /></div>
  <button type="submit">Add alert</button>
</form>`
        : ""
    }
<h2>Alerts</h2>
${
  !list.ok
    ? unavailable("the alerts", list)
    : table(
        "Usage alerts",
        ["Feature", "Threshold", "Reached at (units)", "Created", ""],
        (
          list.body.data as {
            id: string;
            featureLookupKey: string;
            threshold: { type: string; value: number };
            thresholdUnits: number | null;
            createdAt: string;
          }[]
        ).map(
          (a) =>
            html`<tr><td>${a.featureLookupKey}</td><td>${a.threshold.type === "percent" ? `${a.threshold.value}%` : `${count(a.threshold.value)} units`}</td><td class="num">${count(a.thresholdUnits)}</td><td>${when(a.createdAt)}</td><td>${
              canWrite
                ? html`<form method="post" action="/console/alerts/${a.id}/delete" class="inline" data-confirm="Delete this alert?">${formGuard(view.csrfToken)}<button type="submit" class="danger">Delete<span class="visually-hidden"> the ${a.featureLookupKey} alert</span></button></form>`
                : ""
            }</td></tr>`,
        ),
        "No alert yet. An alert sends a usage.threshold_reached webhook event once per reset window.",
      )
}`,
  });
}

// ---------------------------------------------------------------- webhooks

async function webhooksPage(
  c: Context<ConsoleEnv>,
  view: ConsoleView,
  extra: {
    created?: { id: string; url: string; secret?: string };
    error?: string;
    status?: number;
  } = {},
) {
  const list = await view.api.get("/webhook-endpoints?limit=100");
  const canWrite = view.role === "OWNER" || view.role === "ADMIN";
  return render(c, view, {
    title: "Webhooks",
    current: "/console/webhooks",
    error: extra.error,
    status: extra.status,
    body: html`${extra.created ? secretPanel("Endpoint registered", extra.created.secret, "endpoint-secret") : ""}
${
  canWrite
    ? html`<h2>Register an endpoint</h2>
<form method="post" action="/console/webhooks" class="stack panel">${formGuard(view.csrfToken)}
  <div class="field"><label for="hook-url">URL</label><input id="hook-url" name="url" type="url" required placeholder="https://hooks.example.com/billing" /></div>
  <div class="field"><label for="hook-description">Description (optional)</label><input id="hook-description" name="description" maxlength="500" /></div>
  <fieldset><legend>Events</legend>
    <label><input type="checkbox" name="eventTypes" value="*" checked /> Every event (also types added later)</label><br />
    ${TENANT_EVENT_TYPES.map((type) => html`<label><input type="checkbox" name="eventTypes" value="${type}" /> ${type}</label><br />`)}
  </fieldset>
  <div><button type="submit">Register endpoint</button></div>
</form>`
    : ""
}
<h2>Endpoints</h2>
${
  !list.ok
    ? unavailable("the endpoints", list)
    : table(
        "Webhook endpoints",
        ["URL", "Events", "State", "Created"],
        (
          list.body.data as {
            id: string;
            url: string;
            eventTypes: string[];
            enabled: boolean;
            disabledReason: string | null;
            createdAt: string;
          }[]
        ).map(
          (e) =>
            html`<tr><td><a href="/console/webhooks/${e.id}">${e.url}</a></td><td>${e.eventTypes.join(", ")}</td><td>${badge(e.enabled ? "Enabled" : "Disabled")}${e.disabledReason ? html` <span class="hint">${e.disabledReason}</span>` : ""}</td><td>${when(e.createdAt)}</td></tr>`,
        ),
        "No endpoint yet. Register one to receive invoice, payment and usage events.",
      )
}`,
  });
}

function secretPanel(title: string, secret: string | undefined, id: string): Html {
  if (!secret) {
    return html`<p class="notice" role="status">${title}. The signing secret was shown in the first answer only; rotate it if it was lost.</p>`;
  }
  return html`<div class="panel" role="status"><h2>${title}</h2><p>Copy the signing secret now: it is shown this once.</p>
<div class="secret"><code id="${id}">${secret}</code><button type="button" class="secondary" data-copy="${id}">Copy</button><span id="${id}-status" role="status"></span></div></div>`;
}

async function webhookDetail(
  c: Context<ConsoleEnv>,
  view: ConsoleView,
  extra: { secret?: string; error?: string; status?: number } = {},
) {
  const id = c.req.param("id") as string;
  const [endpoint, deliveries] = await Promise.all([
    view.api.get(`/webhook-endpoints/${encodeURIComponent(id)}`),
    view.api.get(`/webhook-endpoints/${encodeURIComponent(id)}/deliveries?limit=50`),
  ]);
  if (!endpoint.ok) {
    return render(c, view, {
      title: "Webhook endpoint",
      current: "/console/webhooks",
      status: endpoint.status === 400 ? 404 : endpoint.status,
      body:
        endpoint.status === 404 || endpoint.status === 400
          ? html`<p class="empty">There is no such endpoint in this tenant.</p><p><a href="/console/webhooks">All endpoints</a></p>`
          : unavailable("the endpoint", endpoint),
    });
  }
  const e = endpoint.body;
  const canWrite = view.role === "OWNER" || view.role === "ADMIN";
  return render(c, view, {
    title: "Webhook endpoint",
    current: "/console/webhooks",
    error: extra.error,
    status: extra.status,
    body: html`<p><a href="/console/webhooks">All endpoints</a></p>
${extra.secret ? secretPanel("Secret rotated", extra.secret, "rotated-secret") : ""}
<div class="panel"><dl class="facts">
  <dt>URL</dt><dd>${e.url}</dd><dt>Events</dt><dd>${e.eventTypes.join(", ")}</dd>
  <dt>State</dt><dd>${badge(e.enabled ? "Enabled" : "Disabled")} ${e.disabledReason ?? ""}</dd>
  <dt>Description</dt><dd>${e.description ?? "-"}</dd><dt>Created</dt><dd>${when(e.createdAt)}</dd>
</dl></div>
${
  canWrite
    ? html`<div class="row">
<form method="post" action="/console/webhooks/${e.id}/rotate" class="inline" data-confirm="Rotate the signing secret? The old one stops signing at once.">${formGuard(view.csrfToken)}<button type="submit" class="secondary">Rotate secret</button></form>
${!e.enabled ? html`<form method="post" action="/console/webhooks/${e.id}/enable" class="inline">${formGuard(view.csrfToken)}<button type="submit" class="secondary">Enable again</button></form>` : ""}
<form method="post" action="/console/webhooks/${e.id}/delete" class="inline" data-confirm="Delete this endpoint?">${formGuard(view.csrfToken)}<button type="submit" class="danger">Delete endpoint</button></form>
</div>`
    : ""
}
<h2>Deliveries</h2>
${
  !deliveries.ok
    ? unavailable("the deliveries", deliveries)
    : table(
        "Delivery log, newest first",
        ["Event", "Status", "Attempts", "Last answer", "Created", ""],
        (
          deliveries.body.data as {
            id: string;
            eventType: string;
            eventId: string;
            status: string;
            attemptCount: number;
            lastStatusCode: number | null;
            lastError: string | null;
            createdAt: string;
          }[]
        ).map(
          (d) =>
            html`<tr><td>${d.eventType}<br /><code class="hint">${d.eventId}</code></td><td>${badge(d.status)}</td><td class="num">${d.attemptCount}</td><td>${d.lastStatusCode ? `HTTP ${d.lastStatusCode}` : (d.lastError ?? "-")}</td><td>${when(d.createdAt)}</td><td>${
              canWrite && d.status !== "PENDING"
                ? html`<form method="post" action="/console/webhooks/${e.id}/deliveries/${d.id}/resend" class="inline">${formGuard(view.csrfToken)}<button type="submit" class="secondary">Resend<span class="visually-hidden"> ${d.eventType}</span></button></form>`
                : ""
            }</td></tr>`,
        ),
        "Nothing delivered yet. Deliveries appear here as events happen.",
      )
}`,
  });
}

// ------------------------------------------------------------------- audit

const audit: PageHandler = async (c, view) => {
  const q = (name: string) => c.req.query(name)?.trim() || undefined;
  const filters = {
    action: q("action"),
    actorId: q("actorId"),
    targetId: q("targetId"),
    from: q("from"),
    to: q("to"),
  };
  const page = Math.max(1, Number(c.req.query("page")) || 1);
  const params = new URLSearchParams({ limit: "50", page: String(page) });
  for (const [name, value] of Object.entries(filters)) {
    if (!value) continue;
    // Date inputs give a day; the API wants an instant.
    params.set(name, name === "from" || name === "to" ? `${value}T00:00:00Z` : value);
  }
  const list = await view.api.get(`/audit-events?${params}`);
  const keep = new URLSearchParams(
    Object.entries(filters).filter((entry): entry is [string, string] => Boolean(entry[1])),
  );
  return render(c, view, {
    title: "Audit log",
    current: "/console/audit",
    body: html`<form method="get" action="/console/audit" class="row panel">
  <div class="field"><label for="audit-action">Action</label><input id="audit-action" name="action" value="${filters.action ?? ""}" placeholder="api_key.created" /></div>
  <div class="field"><label for="audit-actor">Actor id</label><input id="audit-actor" name="actorId" value="${filters.actorId ?? ""}" /></div>
  <div class="field"><label for="audit-target">Target id</label><input id="audit-target" name="targetId" value="${filters.targetId ?? ""}" /></div>
  <div class="field"><label for="audit-from">From (day)</label><input id="audit-from" name="from" type="date" value="${filters.from ?? ""}" /></div>
  <div class="field"><label for="audit-to">Until (day, exclusive)</label><input id="audit-to" name="to" type="date" value="${filters.to ?? ""}" /></div>
  <button type="submit">Filter</button> <a href="/console/audit">Clear</a>
</form>
${
  !list.ok
    ? list.status === 400
      ? html`<p class="error" role="alert">The filter is not valid: ${errorText(list)}</p>`
      : unavailable("the audit log", list)
    : html`${table(
        "Audit events, newest first",
        ["When", "Action", "Actor", "Target"],
        (
          list.body.data as {
            id: string;
            occurredAt?: string;
            createdAt?: string;
            action: string;
            actorType: string;
            actorId: string | null;
            targetType?: string;
            targetId?: string | null;
          }[]
        ).map(
          (event) =>
            html`<tr><td>${when(event.occurredAt ?? event.createdAt)}</td><td><code>${event.action}</code></td><td>${event.actorType}${event.actorId ? html`<br /><code class="hint">${event.actorId}</code>` : ""}</td><td>${event.targetType ?? ""}${event.targetId ? html`<br /><code class="hint">${event.targetId}</code>` : ""}</td></tr>`,
        ),
        "No audit event matches.",
      )}${pager(`/console/audit?${keep.size ? `${keep}&` : ""}`, list.body.meta)}`
}`,
  });
};

// ------------------------------------------------------------------ routes

export function registerTenantPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  const page = (href: string, title: string, handler: PageHandler) =>
    signedIn(fetchApi, tenantPage(href, title, handler));

  app.get("/overview", page("/console/overview", "Overview", overview));
  app.post(
    "/credits/top-up",
    page("/console/overview", "Overview", async (c, view) => {
      const form = await formOf(c);
      const amount = topUpCents(form.amount);
      if (typeof amount === "string") return overviewPage(c, view, { error: amount, status: 400 });
      const result = await view.api.post("/credits/top-up", {
        idempotencyKey: form._idem,
        body: { amount },
      });
      if (!result.ok)
        return overviewPage(c, view, { error: errorText(result), status: result.status });
      return done(c, "/console/overview", "credit-bought");
    }),
  );
  app.get("/usage", page("/console/usage", "Usage", usage));
  app.get("/invoices", page("/console/invoices", "Invoices", invoices));
  app.get(
    "/invoices/:id",
    signedIn(fetchApi, async (c, view) =>
      operatorTenant(c, view)
        ? invoiceDetail(c, view)
        : tenantPage("/console/invoices", "Invoices", invoiceDetail)(c, view),
    ),
  );
  app.get(
    "/invoices/:id/pdf",
    signedIn(fetchApi, async (c, view) =>
      operatorTenant(c, view)
        ? invoicePdf(c, view)
        : tenantPage("/console/invoices", "Invoices", invoicePdf)(c, view),
    ),
  );

  app.get(
    "/keys",
    page("/console/keys", "API keys", (c, view) => keysPage(c, view)),
  );
  app.post(
    "/keys",
    page("/console/keys", "API keys", async (c, view) => {
      const form = await formOf(c);
      const days = form.expiresInDays?.trim();
      const result = await view.api.post("/api-keys", {
        idempotencyKey: form._idem,
        body: { name: form.name ?? "", ...(days ? { expiresInDays: Number(days) } : {}) },
      });
      if (!result.ok) return keysPage(c, view, { error: errorText(result), status: result.status });
      return keysPage(c, view, { created: result.body });
    }),
  );
  app.post(
    "/keys/:id/revoke",
    page("/console/keys", "API keys", async (c, view) => {
      const result = await view.api.call(
        "DELETE",
        `/api-keys/${encodeURIComponent(c.req.param("id") as string)}`,
      );
      if (!result.ok) return keysPage(c, view, { error: errorText(result), status: result.status });
      return done(c, "/console/keys", "key-revoked");
    }),
  );

  app.get("/members", page("/console/members", "Members", members));

  app.get(
    "/alerts",
    page("/console/alerts", "Usage alerts", (c, view) => alertsPage(c, view)),
  );
  app.post(
    "/alerts",
    page("/console/alerts", "Usage alerts", async (c, view) => {
      const form = await formOf(c);
      const result = await view.api.post("/usage-alerts", {
        idempotencyKey: form._idem,
        body: {
          featureLookupKey: form.featureLookupKey ?? "",
          threshold: { type: form.type, value: Number(form.value) },
        },
      });
      if (!result.ok)
        return alertsPage(c, view, { error: errorText(result), status: result.status });
      return done(c, "/console/alerts", "alert-created");
    }),
  );
  app.post(
    "/alerts/:id/delete",
    page("/console/alerts", "Usage alerts", async (c, view) => {
      const result = await view.api.call(
        "DELETE",
        `/usage-alerts/${encodeURIComponent(c.req.param("id") as string)}`,
      );
      if (!result.ok)
        return alertsPage(c, view, { error: errorText(result), status: result.status });
      return done(c, "/console/alerts", "alert-deleted");
    }),
  );

  app.get(
    "/webhooks",
    page("/console/webhooks", "Webhooks", (c, view) => webhooksPage(c, view)),
  );
  app.post(
    "/webhooks",
    page("/console/webhooks", "Webhooks", async (c, view) => {
      const form = await formOf(c);
      const types = await formValues(c, "eventTypes");
      const result = await view.api.post("/webhook-endpoints", {
        idempotencyKey: form._idem,
        body: {
          url: form.url ?? "",
          eventTypes: types.includes("*") ? ["*"] : types,
          ...(form.description?.trim() ? { description: form.description.trim() } : {}),
        },
      });
      if (!result.ok)
        return webhooksPage(c, view, { error: errorText(result), status: result.status });
      return webhooksPage(c, view, { created: result.body });
    }),
  );
  app.get(
    "/webhooks/:id",
    page("/console/webhooks", "Webhooks", (c, view) => webhookDetail(c, view)),
  );
  app.post(
    "/webhooks/:id/rotate",
    page("/console/webhooks", "Webhooks", async (c, view) => {
      const form = await formOf(c);
      const result = await view.api.post(
        `/webhook-endpoints/${encodeURIComponent(c.req.param("id") as string)}/rotate-secret`,
        { idempotencyKey: form._idem },
      );
      if (!result.ok)
        return webhookDetail(c, view, { error: errorText(result), status: result.status });
      return webhookDetail(c, view, { secret: result.body.secret });
    }),
  );
  app.post(
    "/webhooks/:id/enable",
    page("/console/webhooks", "Webhooks", async (c, view) => {
      const id = c.req.param("id") as string;
      const result = await view.api.call("PATCH", `/webhook-endpoints/${encodeURIComponent(id)}`, {
        body: { enabled: true },
      });
      if (!result.ok)
        return webhookDetail(c, view, { error: errorText(result), status: result.status });
      return done(c, `/console/webhooks/${id}`, "webhook-updated");
    }),
  );
  app.post(
    "/webhooks/:id/delete",
    page("/console/webhooks", "Webhooks", async (c, view) => {
      const result = await view.api.call(
        "DELETE",
        `/webhook-endpoints/${encodeURIComponent(c.req.param("id") as string)}`,
      );
      if (!result.ok)
        return webhookDetail(c, view, { error: errorText(result), status: result.status });
      return done(c, "/console/webhooks", "webhook-deleted");
    }),
  );
  app.post(
    "/webhooks/:id/deliveries/:deliveryId/resend",
    page("/console/webhooks", "Webhooks", async (c, view) => {
      const form = await formOf(c);
      const id = c.req.param("id") as string;
      const result = await view.api.post(
        `/webhook-endpoints/${encodeURIComponent(id)}/deliveries/${encodeURIComponent(c.req.param("deliveryId") as string)}/resend`,
        { idempotencyKey: form._idem },
      );
      if (!result.ok)
        return webhookDetail(c, view, { error: errorText(result), status: result.status });
      return done(c, `/console/webhooks/${id}`, "delivery-resent");
    }),
  );

  app.get("/audit", page("/console/audit", "Audit log", audit));
}
