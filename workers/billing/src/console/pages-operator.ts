import { deadLetterStatuses } from "@edge-platform/shared/db/schema/usage";
import type { Context, Hono } from "hono";
import { html } from "hono/html";
import { type ApiFetch, errorText } from "./api-client.ts";
import { badge, count, formGuard, type Html, money, table, when } from "./layout.ts";
import { invoiceRows, pager } from "./pages-tenant.ts";
import { type PageHandler, signedIn } from "./routes.ts";
import type { ConsoleEnv } from "./session.ts";
import { type ConsoleView, done, formOf, render } from "./view.ts";

type Extra = { error?: string; status?: number };

/** Operator screens: platform administrators only (the API enforces it as well). */
function operatorPage(href: string, title: string, handler: PageHandler): PageHandler {
  return async (c, view) => {
    if (!view.user.isPlatformAdmin) {
      return render(c, view, {
        title,
        current: href,
        status: 403,
        error: "Only platform administrators can use the operator screens.",
        body: html``,
      });
    }
    return handler(c, view);
  };
}

/** Numbers from form fields: empty means "not given". */
function optionalInteger(value: string | undefined): number | undefined {
  const trimmed = value?.trim();
  if (!trimmed) return undefined;
  return Number(trimmed);
}

// ----------------------------------------------------------------- tenants

const tenants: PageHandler = async (c, view) => {
  const search = c.req.query("search")?.trim() || undefined;
  const page = Math.max(1, Number(c.req.query("page")) || 1);
  const params = new URLSearchParams({ limit: "25", page: String(page) });
  if (search) params.set("search", search);
  const list = await view.api.get(`/admin/tenants?${params}`, { tenantId: null });
  return render(c, view, {
    title: "Tenants",
    current: "/console/admin/tenants",
    body: html`<form method="get" action="/console/admin/tenants" class="row panel" role="search">
  <div class="field"><label for="tenant-search">Name or slug contains</label><input id="tenant-search" name="search" value="${search ?? ""}" /></div>
  <button type="submit">Search</button>
</form>
${
  !list.ok
    ? html`<p class="error" role="alert">The tenants could not be loaded: ${errorText(list)}</p>`
    : html`${table(
        "Tenants, newest first",
        ["Name", "Slug", "Status", "Created", ""],
        (
          list.body.data as {
            id: string;
            name: string;
            slug: string;
            status: string;
            createdAt: string;
          }[]
        ).map(
          (t) =>
            html`<tr><td>${t.name}</td><td><code>${t.slug}</code></td><td>${badge(t.status)}</td><td>${when(t.createdAt)}</td><td><a href="/console/admin/settlement?tenantId=${t.id}">Settlement<span class="visually-hidden"> of ${t.name}</span></a></td></tr>`,
        ),
        search ? "No tenant matches." : "No tenant yet.",
      )}${pager(`/console/admin/tenants?${search ? `search=${encodeURIComponent(search)}&` : ""}`, list.body.meta)}`
}`,
  });
};

// ----------------------------------------------------------------- catalog

async function catalogPage(c: Context<ConsoleEnv>, view: ConsoleView, extra: Extra = {}) {
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
      )
}
<form method="post" action="/console/admin/catalog/plans" class="row panel">${formGuard(view.csrfToken)}
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
      )
}
<form method="post" action="/console/admin/catalog/features" class="row panel">${formGuard(view.csrfToken)}
  <div class="field"><label for="feature-name">Feature name</label><input id="feature-name" name="name" required /></div>
  <div class="field"><label for="feature-key">Lookup key</label><input id="feature-key" name="lookupKey" required /></div>
  <div class="field"><label for="feature-type">Type</label><select id="feature-type" name="type"><option>METERED</option><option>QUOTA</option><option>BOOLEAN</option></select></div>
  <div class="field"><label for="feature-unit">Unit (optional)</label><input id="feature-unit" name="unit" /></div>
  <button type="submit">Create feature</button>
</form>`,
  });
}

async function planPage(c: Context<ConsoleEnv>, view: ConsoleView, extra: Extra = {}) {
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
${
  prices.ok
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
      )
    : html`<p class="error">The prices could not be loaded: ${errorText(prices)}</p>`
}
<form method="post" action="/console/admin/catalog/plans/${p.id}/prices" class="row panel">${formGuard(view.csrfToken)}
  <div class="field"><label for="price-interval">Interval</label><select id="price-interval" name="interval"><option>MONTHLY</option><option>ANNUALLY</option></select></div>
  <div class="field"><label for="price-amount">Amount (cents)</label><input id="price-amount" name="amount" type="number" min="0" required inputmode="numeric" /></div>
  <div class="field"><label for="price-currency">Currency</label><input id="price-currency" name="currency" value="usd" size="4" required /></div>
  <div class="field"><label for="price-trial">Trial days (optional)</label><input id="price-trial" name="trialDays" type="number" min="1" inputmode="numeric" /></div>
  <button type="submit">Add price</button>
</form>
<h2>Entitlements</h2>
${
  entitlements.ok
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
      )
    : html`<p class="error">The entitlements could not be loaded: ${errorText(entitlements)}</p>`
}
<form method="post" action="/console/admin/catalog/plans/${p.id}/entitlements" class="row panel">${formGuard(view.csrfToken)}
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

// -------------------------------------------------------------- settlement

async function settlementPage(c: Context<ConsoleEnv>, view: ConsoleView, extra: Extra = {}) {
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
      : html`<form method="post" action="/console/admin/settlement/generate?tenantId=${tenantId}" class="panel">${guard}<button type="submit">Generate the current period's draft</button> <span class="hint">From the usage so far; the billing cycle does this itself when a period closes.</span></form>
${table(
  "The tenant's invoices, newest first",
  ["Number", "Status", "Period", "Total", "Document", "Actions"],
  invoiceRows(
    list.body.data,
    (invoice) =>
      html`${invoice.status === "DRAFT" ? action(invoice.id, "finalize", "Finalize") : ""}${
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
      }${invoice.status === "VOID" ? action(invoice.id, "reissue", "Reissue") : ""}`,
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

// ------------------------------------------------------------ dead letters

async function deadLettersPage(c: Context<ConsoleEnv>, view: ConsoleView, extra: Extra = {}) {
  const status = c.req.query("status") || "FAILED";
  const list = await view.api.get(
    `/admin/dead-letter?limit=50${status === "ALL" ? "" : `&status=${encodeURIComponent(status)}`}`,
    { tenantId: null },
  );
  return render(c, view, {
    title: "Dead letters",
    current: "/console/admin/dead-letters",
    error: extra.error,
    status: extra.status,
    body: html`<form method="get" action="/console/admin/dead-letters" class="row panel">
  <div class="field"><label for="dl-status">Status</label><select id="dl-status" name="status">${[...deadLetterStatuses, "ALL"].map((s) => html`<option${s === status ? html` selected` : ""}>${s}</option>`)}</select></div>
  <button type="submit">Show</button>
</form>
${
  !list.ok
    ? html`<p class="error" role="alert">The dead letters could not be loaded: ${errorText(list)}</p>`
    : table(
        "Dead-lettered usage messages, newest first",
        ["Failed", "Stage", "Reason", "Tenant", "Retries", "Status", ""],
        (
          list.body.data as {
            id: string;
            firstFailedAt: string;
            failureStage: string;
            failureReason: string;
            tenantId: string | null;
            retryCount: number;
            status: string;
          }[]
        ).map(
          (d) =>
            html`<tr><td>${when(d.firstFailedAt)}</td><td>${d.failureStage}</td><td>${d.failureReason}</td><td><code class="hint">${d.tenantId ?? "-"}</code></td><td class="num">${d.retryCount}</td><td>${badge(d.status)}</td><td>${
              d.status === "FAILED" || d.status === "RETRYING"
                ? html`<form method="post" action="/console/admin/dead-letters/${d.id}/retry" class="inline">${formGuard(view.csrfToken)}<button type="submit" class="secondary">Retry</button></form> <form method="post" action="/console/admin/dead-letters/${d.id}/discard" class="inline" data-confirm="Discard this message for good?">${formGuard(view.csrfToken)}<button type="submit" class="danger">Discard</button></form>`
                : ""
            }</td></tr>`,
        ),
        "No dead letter with this status: the usage pipeline has nothing stuck.",
      )
}`,
  });
}

// ------------------------------------------------------------------ routes

export function registerOperatorPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  const page = (href: string, title: string, handler: PageHandler) =>
    signedIn(fetchApi, operatorPage(href, title, handler));

  app.get("/admin/tenants", page("/console/admin/tenants", "Tenants", tenants));

  app.get(
    "/admin/catalog",
    page("/console/admin/catalog", "Catalog", (c, v) => catalogPage(c, v)),
  );
  app.post(
    "/admin/catalog/features",
    page("/console/admin/catalog", "Catalog", async (c, view) => {
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
      if (!result.ok)
        return catalogPage(c, view, { error: errorText(result), status: result.status });
      return done(c, "/console/admin/catalog", "feature-created");
    }),
  );
  app.post(
    "/admin/catalog/plans",
    page("/console/admin/catalog", "Catalog", async (c, view) => {
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
      if (!result.ok)
        return catalogPage(c, view, { error: errorText(result), status: result.status });
      return c.redirect(`/console/admin/catalog/plans/${result.body.id}?notice=plan-created`, 303);
    }),
  );
  app.get(
    "/admin/catalog/plans/:id",
    page("/console/admin/catalog", "Catalog", (c, v) => planPage(c, v)),
  );
  app.post(
    "/admin/catalog/plans/:id/prices",
    page("/console/admin/catalog", "Catalog", async (c, view) => {
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
    }),
  );
  app.post(
    "/admin/catalog/plans/:id/entitlements",
    page("/console/admin/catalog", "Catalog", async (c, view) => {
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
    }),
  );

  app.get(
    "/admin/settlement",
    page("/console/admin/settlement", "Settlement", (c, v) => settlementPage(c, v)),
  );
  const settle = (
    verb: string,
    apiPath: (invoiceId: string) => string,
    notice: string,
    body?: (invoiceId: string) => unknown,
  ) =>
    page("/console/admin/settlement", "Settlement", async (c, view) => {
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
    });
  app.post(
    "/admin/settlement/generate",
    settle("generate the draft", () => "/invoices/generate", "invoice-generated"),
  );
  app.post(
    "/admin/settlement/:invoiceId/finalize",
    settle(
      "finalize the invoice",
      (id) => `/invoices/${encodeURIComponent(id)}/finalize`,
      "invoice-finalized",
    ),
  );
  app.post(
    "/admin/settlement/:invoiceId/void",
    settle(
      "void the invoice",
      (id) => `/invoices/${encodeURIComponent(id)}/void`,
      "invoice-voided",
    ),
  );
  app.post(
    "/admin/settlement/:invoiceId/mark-paid",
    settle(
      "mark the invoice paid",
      (id) => `/invoices/${encodeURIComponent(id)}/mark-paid`,
      "invoice-paid",
    ),
  );
  app.post(
    "/admin/settlement/:invoiceId/reissue",
    settle(
      "reissue the invoice",
      () => "/invoices/generate",
      "invoice-reissued",
      (id) => ({ replacesInvoiceId: id }),
    ),
  );

  app.get(
    "/admin/dead-letters",
    page("/console/admin/dead-letters", "Dead letters", (c, v) => deadLettersPage(c, v)),
  );
  for (const verb of ["retry", "discard"] as const) {
    app.post(
      `/admin/dead-letters/:id/${verb}`,
      page("/console/admin/dead-letters", "Dead letters", async (c, view) => {
        const form = await formOf(c);
        const result = await view.api.post(
          `/admin/dead-letter/${encodeURIComponent(c.req.param("id") as string)}/${verb}`,
          {
            tenantId: null,
            idempotencyKey: form._idem,
          },
        );
        if (!result.ok)
          return deadLettersPage(c, view, { error: errorText(result), status: result.status });
        return done(
          c,
          "/console/admin/dead-letters",
          verb === "retry" ? "dead-letter-retried" : "dead-letter-discarded",
        );
      }),
    );
  }
}
