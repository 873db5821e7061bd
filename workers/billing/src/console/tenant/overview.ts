import type { Context, Hono } from "hono";
import { html } from "hono/html";
import { type ApiBody, type ApiResult, errorText } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { badge, count, day, type Html, money, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { type ConsoleView, CREDIT_ROLES, canSee, done, formOf, render } from "../view.ts";
import { creditSection, topUpCents } from "./prepaid-credit.ts";
import { activeSubscription, countedFeatures, tenantRoute, unavailable } from "./tenant-page.ts";

type CountedFeature = ReturnType<typeof countedFeatures>[number];

/**
 * A meter per counted feature, and the units used per feature: the fired
 * alerts are judged against the same figures the meters show.
 */
async function featureMeters(view: ConsoleView, features: CountedFeature[]) {
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
  return { meters, usedOf };
}

/** The alerts whose threshold the current window's usage has reached. */
function firedAlertsSection(alerts: ApiResult, usedOf: Map<string, number>): Html {
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
          html`<li><strong>${alert.featureLookupKey}</strong> reached ${alert.threshold.type === "percent" ? `${alert.threshold.value}%` : `${count(alert.threshold.value)} units`} (${count(alert.thresholdUnits)} units; now ${count(usedOf.get(alert.featureLookupKey))})</li>`,
      )}</ul>`;
}

function subscriptionStatus(sub: ApiBody): string {
  const status = sub.status as string;
  return status === "TRIALING"
    ? `Trial until ${when(sub.trialEndsAt)}`
    : status === "PAUSED"
      ? `Paused since ${when(sub.pausedAt)}`
      : sub.cancelAtPeriodEnd
        ? `Ends at the period's end (${when(sub.currentPeriodEnd)})`
        : status === "ACTIVE"
          ? `Renews ${day(sub.currentPeriodEnd)}`
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

function creditBalance(balance: ApiResult): string {
  return balance.ok
    ? money(balance.body.creditBalance, balance.body.currency)
    : balance.status === 403
      ? "Not visible to your role"
      : `Not available: ${errorText(balance)}`;
}

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
  const { meters, usedOf } = await featureMeters(view, features);
  return render(c, view, {
    title: "Overview",
    current: "/console/overview",
    error: extra.error,
    status: extra.status,
    body: html`<div class="cards">
  <div class="card"><div class="label">Plan</div><div class="value">${sub.plan.name}</div><div>${money(sub.price.amount, sub.price.currency)} / ${sub.price.interval === "MONTHLY" ? "month" : "year"}</div></div>
  <div class="card"><div class="label">Status</div><div class="value">${badge(sub.status)}</div><div>${subscriptionStatus(sub)}</div></div>
  <div class="card"><div class="label">Current period</div><div class="value">${day(sub.currentPeriodStart)} to ${day(sub.currentPeriodEnd)}</div><div>Ends ${when(sub.currentPeriodEnd)}</div></div>
  <div class="card"><div class="label">Upcoming invoice</div><div class="value" data-testid="upcoming-total">${upcomingTotal(upcoming)}</div></div>
  <div class="card"><div class="label">Credit balance</div><div class="value" data-testid="credit-balance">${creditBalance(balance)}</div></div>
</div>
<h2>Usage this period</h2>
${features.length === 0 ? html`<p class="empty">The plan has no counted features.</p>` : html`<ul class="cards plain">${meters}</ul>`}
<h2>Alerts fired this period</h2>
${firedAlertsSection(alerts, usedOf)}
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
