import type { Context, Hono } from "hono";
import { html } from "hono/html";
import { type ApiResult, errorText } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { badge, count, formGuard, type Html, money, table } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { type ConsoleView, done, formOf, render } from "../view.ts";
import { operatorRoute, optionalInteger, type WriteError } from "./operator-page.ts";

async function catalogPage(c: Context<ConsoleEnv>, view: ConsoleView, extra: WriteError = {}) {
  const [features, plans] = await Promise.all([
    view.api.get("/features?includeArchived=true", { tenantId: null }),
    view.api.get("/plans?includeArchived=true", { tenantId: null }),
  ]);
  return render(c, view, {
    title: "Catalog",
    current: "/console/admin/catalog",
    error: extra.error,
    status: extra.status,
    body: html`<h2>Plans</h2>
${
  !plans.ok
    ? html`<p class="error">The plans could not be loaded: ${errorText(plans)}</p>`
    : table(
        "Plans",
        ["Name", "Slug", "Status", "Prices"],
        (
          plans.body.data as {
            id: string;
            name: string;
            slug: string;
            status: string;
            prices: { interval: string; amount: number; currency: string }[];
          }[]
        ).map(
          (p) =>
            html`<tr><td><a href="/console/admin/catalog/plans/${p.id}">${p.name}</a></td><td><code>${p.slug}</code></td><td>${badge(p.status)}</td><td>${p.prices.map((price) => `${money(price.amount, price.currency)} ${price.interval.toLowerCase()}`).join(", ") || "-"}</td></tr>`,
        ),
        "No plan yet.",
        { captionHidden: true },
      )
}
<form method="post" action="/console/admin/catalog/plans" class="row panel" aria-labelledby="new-plan-title"><h3 id="new-plan-title" class="form-title">New plan</h3>${formGuard(view.csrfToken)}
  <div class="field"><label for="plan-name">Plan name</label><input id="plan-name" name="name" required /></div>
  <div class="field"><label for="plan-slug">Slug</label><input id="plan-slug" name="slug" required pattern="[a-z][a-z0-9\\-]*" /></div>
  <div class="field"><label for="plan-description">Description</label><input id="plan-description" name="description" /></div>
  <button type="submit">Create plan</button>
</form>
<h2>Features</h2>
${
  !features.ok
    ? html`<p class="error">The features could not be loaded: ${errorText(features)}</p>`
    : table(
        "Features",
        ["Name", "Lookup key", "Type", "Unit", "Status"],
        (
          features.body.data as {
            name: string;
            lookupKey: string;
            type: string;
            unit: string | null;
            status: string;
          }[]
        ).map(
          (f) =>
            html`<tr><td>${f.name}</td><td><code>${f.lookupKey}</code></td><td>${f.type}</td><td>${f.unit ?? "-"}</td><td>${badge(f.status)}</td></tr>`,
        ),
        "No feature yet.",
        { captionHidden: true },
      )
}
<form method="post" action="/console/admin/catalog/features" class="row panel" aria-labelledby="new-feature-title"><h3 id="new-feature-title" class="form-title">New feature</h3>${formGuard(view.csrfToken)}
  <div class="field"><label for="feature-name">Feature name</label><input id="feature-name" name="name" required /></div>
  <div class="field"><label for="feature-key">Lookup key</label><input id="feature-key" name="lookupKey" required /></div>
  <div class="field"><label for="feature-type">Type</label><select id="feature-type" name="type"><option>METERED</option><option>QUOTA</option><option>BOOLEAN</option></select></div>
  <div class="field"><label for="feature-unit">Unit (optional)</label><input id="feature-unit" name="unit" /></div>
  <button type="submit">Create feature</button>
</form>`,
  });
}

function pricesTable(prices: ApiResult): Html {
  return prices.ok
    ? table(
        "Prices",
        ["Interval", "Amount", "Trial", "Active"],
        (
          prices.body.data as {
            interval: string;
            amount: number;
            currency: string;
            trialDays: number | null;
            isActive: boolean;
          }[]
        ).map(
          (price) =>
            html`<tr><td>${price.interval}</td><td class="num">${money(price.amount, price.currency)}</td><td>${price.trialDays ? `${price.trialDays} days` : "none"}</td><td>${price.isActive ? "yes" : "no"}</td></tr>`,
        ),
        "No price yet: add one so tenants can subscribe.",
        { captionHidden: true },
      )
    : html`<p class="error">The prices could not be loaded: ${errorText(prices)}</p>`;
}

function entitlementsTable(entitlements: ApiResult): Html {
  return entitlements.ok
    ? table(
        "What the plan grants",
        ["Feature", "Type", "Limit", "Included", "Overage price (micro-cents)", "Resets"],
        (
          entitlements.body.data as {
            feature: { name: string; lookupKey: string; type: string };
            limit: number | null;
            limitBehavior: string | null;
            includedAmount: number | null;
            overagePrice: number | null;
            resetPeriod: string | null;
            value: boolean | null;
          }[]
        ).map(
          (e) =>
            html`<tr><td>${e.feature.name} <code>${e.feature.lookupKey}</code></td><td>${e.feature.type}</td><td class="num">${e.limit !== null ? `${count(e.limit)} ${e.limitBehavior ?? ""}` : e.value === null ? "-" : e.value ? "on" : "off"}</td><td class="num">${count(e.includedAmount)}</td><td class="num">${count(e.overagePrice)}</td><td>${e.resetPeriod ?? "-"}</td></tr>`,
        ),
        "The plan grants nothing yet.",
        { captionHidden: true },
      )
    : html`<p class="error">The entitlements could not be loaded: ${errorText(entitlements)}</p>`;
}

async function planPage(c: Context<ConsoleEnv>, view: ConsoleView, extra: WriteError = {}) {
  const id = encodeURIComponent(c.req.param("id") as string);
  const [plan, prices, entitlements, features] = await Promise.all([
    view.api.get(`/plans/${id}`, { tenantId: null }),
    view.api.get(`/plans/${id}/prices?includeInactive=true`, { tenantId: null }),
    view.api.get(`/plans/${id}/entitlements`, { tenantId: null }),
    view.api.get("/features", { tenantId: null }),
  ]);
  if (!plan.ok) {
    return render(c, view, {
      title: "Plan",
      current: "/console/admin/catalog",
      status: plan.status === 400 ? 404 : plan.status,
      body: html`<p class="empty">There is no such plan.</p><p><a href="/console/admin/catalog">The catalog</a></p>`,
    });
  }
  const p = plan.body;
  return render(c, view, {
    title: `Plan ${p.name}`,
    current: "/console/admin/catalog",
    error: extra.error,
    status: extra.status,
    body: html`<p><a href="/console/admin/catalog">The catalog</a></p>
<h2>Prices</h2>
${pricesTable(prices)}
<form method="post" action="/console/admin/catalog/plans/${p.id}/prices" class="row panel" aria-labelledby="new-price-title"><h3 id="new-price-title" class="form-title">New price</h3>${formGuard(view.csrfToken)}
  <div class="field"><label for="price-interval">Interval</label><select id="price-interval" name="interval"><option>MONTHLY</option><option>ANNUALLY</option></select></div>
  <div class="field"><label for="price-amount">Amount (cents)</label><input id="price-amount" name="amount" type="number" min="0" required inputmode="numeric" /></div>
  <div class="field"><label for="price-currency">Currency</label><input id="price-currency" name="currency" value="usd" size="4" required /></div>
  <div class="field"><label for="price-trial">Trial days (optional)</label><input id="price-trial" name="trialDays" type="number" min="1" inputmode="numeric" /></div>
  <button type="submit">Add price</button>
</form>
<h2>Entitlements</h2>
${entitlementsTable(entitlements)}
<form method="post" action="/console/admin/catalog/plans/${p.id}/entitlements" class="row panel" aria-labelledby="new-entitlement-title"><h3 id="new-entitlement-title" class="form-title">New entitlement</h3>${formGuard(view.csrfToken)}
  <div class="field"><label for="grant-feature">Feature</label><select id="grant-feature" name="featureId">${(
    features.ok ? (features.body.data as { id: string; name: string; type: string }[]) : []
  ).map((f) => html`<option value="${f.id}">${f.name} (${f.type})</option>`)}</select></div>
  <div class="field"><label for="grant-limit">Limit</label><input id="grant-limit" name="limit" type="number" min="0" inputmode="numeric" /></div>
  <div class="field"><label for="grant-behavior">At the limit</label><select id="grant-behavior" name="limitBehavior"><option value="">-</option><option>HARD</option><option>SOFT</option></select></div>
  <div class="field"><label for="grant-included">Included</label><input id="grant-included" name="includedAmount" type="number" min="0" inputmode="numeric" /></div>
  <div class="field"><label for="grant-overage">Overage price (micro-cents)</label><input id="grant-overage" name="overagePrice" type="number" min="0" inputmode="numeric" /></div>
  <div class="field"><label for="grant-reset">Resets</label><select id="grant-reset" name="resetPeriod"><option value="">-</option><option>MONTHLY</option><option>ANNUALLY</option><option>NEVER</option></select></div>
  <div class="field"><label for="grant-value">On/off (BOOLEAN)</label><select id="grant-value" name="value"><option value="">-</option><option value="true">on</option><option value="false">off</option></select></div>
  <button type="submit">Grant</button>
</form>`,
  });
}

const createFeature: PageHandler = async (c, view) => {
  const form = await formOf(c);
  const result = await view.api.post("/features", {
    tenantId: null,
    idempotencyKey: form._idem,
    body: {
      name: form.name ?? "",
      lookupKey: form.lookupKey ?? "",
      type: form.type,
      ...(form.unit?.trim() ? { unit: form.unit.trim() } : {}),
    },
  });
  if (!result.ok) return catalogPage(c, view, { error: errorText(result), status: result.status });
  return done(c, "/console/admin/catalog", "feature-created");
};

/** A new plan has no prices or entitlements yet: the answer is its page, to add them. */
const createPlan: PageHandler = async (c, view) => {
  const form = await formOf(c);
  const result = await view.api.post("/plans", {
    tenantId: null,
    idempotencyKey: form._idem,
    body: {
      name: form.name ?? "",
      slug: form.slug ?? "",
      ...(form.description?.trim() ? { description: form.description.trim() } : {}),
    },
  });
  if (!result.ok) return catalogPage(c, view, { error: errorText(result), status: result.status });
  return c.redirect(`/console/admin/catalog/plans/${result.body.id}?notice=plan-created`, 303);
};

const addPrice: PageHandler = async (c, view) => {
  const form = await formOf(c);
  const id = c.req.param("id") as string;
  const trialDays = optionalInteger(form.trialDays);
  const result = await view.api.post(`/plans/${encodeURIComponent(id)}/prices`, {
    tenantId: null,
    idempotencyKey: form._idem,
    body: {
      interval: form.interval,
      amount: optionalInteger(form.amount) ?? Number.NaN,
      currency: form.currency ?? "",
      ...(trialDays !== undefined ? { trialDays } : {}),
    },
  });
  if (!result.ok) return planPage(c, view, { error: errorText(result), status: result.status });
  return done(c, `/console/admin/catalog/plans/${id}`, "price-created");
};

const grantEntitlement: PageHandler = async (c, view) => {
  const form = await formOf(c);
  const id = c.req.param("id") as string;
  const body: Record<string, unknown> = { featureId: form.featureId ?? "" };
  for (const name of ["limit", "includedAmount", "overagePrice"]) {
    const value = optionalInteger(form[name]);
    if (value !== undefined) body[name] = value;
  }
  if (form.limitBehavior) body.limitBehavior = form.limitBehavior;
  if (form.resetPeriod) body.resetPeriod = form.resetPeriod;
  if (form.value) body.value = form.value === "true";
  const result = await view.api.post(`/plans/${encodeURIComponent(id)}/entitlements`, {
    tenantId: null,
    idempotencyKey: form._idem,
    body,
  });
  if (!result.ok) return planPage(c, view, { error: errorText(result), status: result.status });
  return done(c, `/console/admin/catalog/plans/${id}`, "entitlement-created");
};

export function registerCatalogPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  const page = (handler: PageHandler) =>
    operatorRoute(fetchApi)("/console/admin/catalog", "Catalog", handler);
  app.get(
    "/admin/catalog",
    page((c, v) => catalogPage(c, v)),
  );
  app.post("/admin/catalog/features", page(createFeature));
  app.post("/admin/catalog/plans", page(createPlan));
  app.get(
    "/admin/catalog/plans/:id",
    page((c, v) => planPage(c, v)),
  );
  app.post("/admin/catalog/plans/:id/prices", page(addPrice));
  app.post("/admin/catalog/plans/:id/entitlements", page(grantEntitlement));
}
