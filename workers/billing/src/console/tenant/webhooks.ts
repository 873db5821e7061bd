import type { Context, Hono } from "hono";
import { html } from "hono/html";
import { TENANT_EVENT_TYPES } from "../../notifications/index.ts";
import { errorText } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { badge, formGuard, type Html, table, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { type ConsoleView, done, formOf, formValues, render } from "../view.ts";
import { tenantRoute, unavailable } from "./tenant-page.ts";

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
  ${e.previousSecretExpiresAt ? html`<dt>Previous secret</dt><dd>signs too until ${when(e.previousSecretExpiresAt)}</dd>` : ""}
</dl></div>
${
  canWrite
    ? html`<div class="row">
${e.enabled ? html`<form method="post" action="/console/webhooks/${e.id}/send-example" class="inline">${formGuard(view.csrfToken)}<button type="submit" class="secondary">Send test event</button></form>` : ""}
<form method="post" action="/console/webhooks/${e.id}/rotate" class="inline" data-confirm="Rotate the signing secret? The old one keeps signing beside the new one for 24 hours.">${formGuard(view.csrfToken)}<button type="submit" class="secondary">Rotate secret</button></form>
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

/** The signing secret is shown on the answer itself: it is never shown again, so no redirect. */
const registerEndpoint: PageHandler = async (c, view) => {
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
  if (!result.ok) return webhooksPage(c, view, { error: errorText(result), status: result.status });
  return webhooksPage(c, view, { created: result.body });
};

const rotateSecret: PageHandler = async (c, view) => {
  const form = await formOf(c);
  const result = await view.api.post(
    `/webhook-endpoints/${encodeURIComponent(c.req.param("id") as string)}/rotate-secret`,
    { idempotencyKey: form._idem },
  );
  if (!result.ok)
    return webhookDetail(c, view, { error: errorText(result), status: result.status });
  return webhookDetail(c, view, { secret: result.body.secret });
};

const enableEndpoint: PageHandler = async (c, view) => {
  const id = c.req.param("id") as string;
  const result = await view.api.call("PATCH", `/webhook-endpoints/${encodeURIComponent(id)}`, {
    body: { enabled: true },
  });
  if (!result.ok)
    return webhookDetail(c, view, { error: errorText(result), status: result.status });
  return done(c, `/console/webhooks/${id}`, "webhook-updated");
};

const deleteEndpoint: PageHandler = async (c, view) => {
  const result = await view.api.call(
    "DELETE",
    `/webhook-endpoints/${encodeURIComponent(c.req.param("id") as string)}`,
  );
  if (!result.ok)
    return webhookDetail(c, view, { error: errorText(result), status: result.status });
  return done(c, "/console/webhooks", "webhook-deleted");
};

const resendDelivery: PageHandler = async (c, view) => {
  const form = await formOf(c);
  const id = c.req.param("id") as string;
  const result = await view.api.post(
    `/webhook-endpoints/${encodeURIComponent(id)}/deliveries/${encodeURIComponent(c.req.param("deliveryId") as string)}/resend`,
    { idempotencyKey: form._idem },
  );
  if (!result.ok)
    return webhookDetail(c, view, { error: errorText(result), status: result.status });
  return done(c, `/console/webhooks/${id}`, "delivery-resent");
};

const sendExample: PageHandler = async (c, view) => {
  const form = await formOf(c);
  const id = c.req.param("id") as string;
  const result = await view.api.post(`/webhook-endpoints/${encodeURIComponent(id)}/send-example`, {
    idempotencyKey: form._idem,
  });
  if (!result.ok)
    return webhookDetail(c, view, { error: errorText(result), status: result.status });
  return done(c, `/console/webhooks/${id}`, "example-sent");
};

export function registerWebhookPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  const page = (handler: PageHandler) =>
    tenantRoute(fetchApi)("/console/webhooks", "Webhooks", handler);
  app.get(
    "/webhooks",
    page((c, view) => webhooksPage(c, view)),
  );
  app.post("/webhooks", page(registerEndpoint));
  app.get(
    "/webhooks/:id",
    page((c, view) => webhookDetail(c, view)),
  );
  app.post("/webhooks/:id/rotate", page(rotateSecret));
  app.post("/webhooks/:id/send-example", page(sendExample));
  app.post("/webhooks/:id/enable", page(enableEndpoint));
  app.post("/webhooks/:id/delete", page(deleteEndpoint));
  app.post("/webhooks/:id/deliveries/:deliveryId/resend", page(resendDelivery));
}
