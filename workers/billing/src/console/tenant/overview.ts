import type { Context, Hono } from "hono";
import { html } from "hono/html";
import { type ApiBody, type ApiResult, errorText } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { badge, count, day, type Html, money, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { type ConsoleView, CREDIT_ROLES, canSee, done, formOf, render } from "../view.ts";
import { creditSection, topUpCents } from "./prepaid-credit.ts";
import {
  activeSubscription,
  capOf,
  countedFeatures,
  featureLabel,
  featureNames,
  tenantRoute,
  unavailable,
  usageChecks,
} from "./tenant-page.ts";

type CountedFeature = ReturnType<typeof countedFeatures>[number];

/**
 * When the window a meter counts in resets, said only where it differs
 * from the period's end shown above: counters follow the real clock, so a
 * simulated period close (`npm run cron -- --at`) moves the period and not
 * the window.
 */
function windowNote(resetAt: string | undefined, periodEnd: string | undefined): Html | string {
  if (!resetAt) return "";
  if (periodEnd && Date.parse(resetAt) === Date.parse(periodEnd)) return "";
  return html` · this window resets ${when(resetAt)}`;
}

/**
 * A meter per counted feature, and the units used per feature: the fired
 * alerts are judged against the same figures the meters show.
 */
async function featureMeters(
  view: ConsoleView,
  features: CountedFeature[],
  names: Map<string, string>,
  subscription: ApiBody,
) {
  const checks = await usageChecks(
    view,
    features.map((feature) => feature.featureLookupKey),
  );
  const usedOf = new Map<string, number>();
  const meters = features.map((feature) => {
    const check = checks.get(feature.featureLookupKey);
    const used = check?.ok ? (check.body.used ?? 0) : null;
    if (used !== null) usedOf.set(feature.featureLookupKey, used);
    const cap = capOf(feature);
    const capLabel =
      feature.featureType === "METERED" ? "included" : `limit (${feature.limitBehavior ?? "HARD"})`;
    const label = featureLabel(names, feature.featureLookupKey);
    return html`<li class="panel">
      <strong>${label}</strong> <span class="hint">${feature.featureType}</span>
      ${
        used === null
          ? html`<p class="error">The usage could not be read: ${check ? errorText(check) : ""}</p>`
          : html`<meter class="usage-meter" min="0" max="${cap ?? Math.max(used, 1)}" low="${Math.round((cap ?? used) * 0.8)}" high="${cap ?? Math.max(used, 1)}" optimum="0" value="${used}" aria-label="${label}: ${count(used)} used${cap !== null && cap !== undefined ? ` of ${count(cap)}` : ""}">${count(used)}</meter>
      <p>${count(used)} used${cap !== null && cap !== undefined ? html` of ${count(cap)} ${capLabel}` : " (no limit)"}${windowNote(check?.body.resetAt, subscription.currentPeriodEnd)}</p>`
      }
    </li>`;
  });
  return { meters, usedOf };
}

/**
 * "API calls reached 80% of its limit (8,000 units); 8,312 used now" for a
 * percent alert, "API calls reached 7,000 units; 7,383 used now" for a
 * units one: each figure once.
 */
export function alertLine(
  alert: {
    featureLookupKey: string;
    thresholdUnits: number | null;
    threshold: { type: string; value: number };
  },
  used: number,
  names: Map<string, string>,
): string {
  const feature = featureLabel(names, alert.featureLookupKey);
  const reached =
    alert.threshold.type === "percent"
      ? `${alert.threshold.value}% of its limit (${count(alert.thresholdUnits)} units)`
      : `${count(alert.thresholdUnits)} units`;
  return `${feature} reached ${reached}; ${count(used)} used now`;
}

/** The alerts whose threshold the current window's usage has reached. */
function firedAlertsSection(
  alerts: ApiResult,
  usedOf: Map<string, number>,
  names: Map<string, string>,
): Html {
  if (!alerts.ok) return unavailable("the usage alerts", alerts);
  const fired = (
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
  );
  return fired.length === 0
    ? html`<p class="empty">No alert has fired in the current reset window.</p>`
    : html`<ul>${fired.map(
        (alert) =>
          html`<li>${alertLine(alert, usedOf.get(alert.featureLookupKey) ?? 0, names)}</li>`,
      )}</ul>`;
}

function subscriptionStatus(sub: ApiBody): string {
  const status = sub.status as string;
  return status === "TRIALING"
    ? `Trial until ${when(sub.trialEndsAt)}`
    : status === "PAUSED"
      ? `Paused since ${when(sub.pausedAt)}`
      : sub.cancelAtPeriodEnd
        ? "Ends at the end of this period"
        : status === "ACTIVE"
          ? "Renews at the end of this period"
          : `Status ${status}`;
}

function upcomingTotal(upcoming: ApiResult): string {
  return upcoming.ok
    ? money(upcoming.body.total, upcoming.body.currency)
    : upcoming.status === 409
      ? errorText(upcoming)
      : upcoming.status === 403
        ? "Not visible to your role"
        : `Not available: ${errorText(upcoming)}`;
}

/** The prepaid credit, with money received that no invoice needed yet (it pays the next one). */
function creditCard(credits: ApiResult | null, balance: ApiResult): Html {
  const unapplied =
    balance.ok && (balance.body.creditBalance ?? 0) > 0
      ? html`<div>and ${money(balance.body.creditBalance, balance.body.currency)} of unapplied payments, for the next invoice</div>`
      : "";
  const value = !credits
    ? "Not visible to your role"
    : credits.ok
      ? html`<span data-testid="prepaid-balance">${money(credits.body.balance, credits.body.currency)}</span>`
      : `Not available: ${errorText(credits)}`;
  return html`<div class="card"><div class="label">Prepaid credit</div><div class="value">${value}</div>${unapplied}</div>`;
}

type InvoiceSummary = {
  id: string;
  invoiceNumber: string | null;
  status: string;
  total: number;
  currency: string;
  dueDate: string | null;
};
type PaymentSummary = {
  invoiceId: string;
  status: string;
  failureReason: string | null;
  nextRetryAt: string | null;
};

/**
 * A warning above everything when money is waiting: the newest open
 * invoice past its due date, or whose latest payment attempt failed.
 */
export function paymentBanner(invoices: ApiResult, payments: ApiResult, now: Date): Html {
  if (!invoices.ok) return html``;
  const open = (invoices.body.data as InvoiceSummary[]).filter((i) => i.status === "OPEN");
  const attempts = payments.ok ? (payments.body.data as PaymentSummary[]) : [];
  for (const invoice of open) {
    const latest = attempts.find((attempt) => attempt.invoiceId === invoice.id);
    const name = `Invoice ${invoice.invoiceNumber ?? invoice.id} (${money(invoice.total, invoice.currency)})`;
    const link = html`<a href="/console/invoices/${invoice.id}">See the invoice</a>`;
    if (latest?.status === "FAILED") {
      const retry = latest.nextRetryAt ? ` It is tried again ${when(latest.nextRetryAt)}.` : "";
      return html`<p class="error" role="alert" data-testid="payment-banner">${name}: the payment failed${latest.failureReason ? ` (${latest.failureReason})` : ""}.${retry} ${link}</p>`;
    }
    if (invoice.dueDate && Date.parse(invoice.dueDate) < now.getTime()) {
      return html`<p class="error" role="alert" data-testid="payment-banner">${name} is past due since ${when(invoice.dueDate)}. ${link}</p>`;
    }
  }
  return html``;
}

async function overviewPage(
  c: Context<ConsoleEnv>,
  view: ConsoleView,
  extra: { error?: string; status?: number } = {},
) {
  const [subscription, upcoming, balance, alerts, credits, invoices, payments, names] =
    await Promise.all([
      activeSubscription(view),
      view.api.get("/invoices/upcoming"),
      view.api.get("/billing/balance"),
      view.api.get("/usage-alerts?limit=100"),
      canSee(view, CREDIT_ROLES) ? view.api.get("/credits") : Promise.resolve(null),
      view.api.get("/invoices?limit=10"),
      view.api.get("/billing/payments?limit=20"),
      featureNames(view),
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
  const { meters, usedOf } = await featureMeters(view, features, names, sub);
  return render(c, view, {
    title: "Overview",
    current: "/console/overview",
    error: extra.error,
    status: extra.status,
    body: html`${paymentBanner(invoices, payments, new Date())}<div class="cards">
  <div class="card"><div class="label">Plan</div><div class="value">${sub.plan.name}</div><div>${money(sub.price.amount, sub.price.currency)} / ${sub.price.interval === "MONTHLY" ? "month" : "year"}</div></div>
  <div class="card"><div class="label">Status</div><div class="value">${badge(sub.status)}</div><div>${subscriptionStatus(sub)}</div></div>
  <div class="card"><div class="label">Current period (UTC)</div><div class="value">${day(sub.currentPeriodStart)} to ${day(sub.currentPeriodEnd)}</div></div>
  <div class="card"><div class="label">Upcoming invoice</div><div class="value" data-testid="upcoming-total">${upcomingTotal(upcoming)}</div></div>
  ${creditCard(credits, balance)}
</div>
<h2>Usage this period</h2>
${features.length === 0 ? html`<p class="empty">The plan has no counted features.</p>` : html`<ul class="cards plain">${meters}</ul>`}
<h2>Alerts fired this period</h2>
${firedAlertsSection(alerts, usedOf, names)}
<h2>Prepaid credit</h2>
${creditSection(view, credits)}`,
  });
}

const overview: PageHandler = (c, view) => overviewPage(c, view);

/** Buying prepaid credit answers with the overview, where the credit is shown. */
const buyCredit: PageHandler = async (c, view) => {
  const form = await formOf(c);
  const amount = topUpCents(form.amount);
  if (typeof amount === "string") return overviewPage(c, view, { error: amount, status: 400 });
  const result = await view.api.post("/credits/top-up", {
    idempotencyKey: form._idem,
    body: { amount },
  });
  if (!result.ok) return overviewPage(c, view, { error: errorText(result), status: result.status });
  return done(c, "/console/overview", "credit-bought");
};

export function registerOverviewPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  const page = tenantRoute(fetchApi);
  app.get("/overview", page("/console/overview", "Overview", overview));
  app.post("/credits/top-up", page("/console/overview", "Overview", buyCredit));
}
