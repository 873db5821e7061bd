import type { Context, Hono } from "hono";
import { html } from "hono/html";
import { errorText } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { badge, formGuard, table, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { type ConsoleView, done, formOf, render } from "../view.ts";
import { activeSubscription, countedFeatures, tenantRoute, unavailable } from "./tenant-page.ts";

/** A first request with a new key, ready to paste: one usage event, now, with a fresh id. */
export function usageCurl(origin: string, key: string, feature: string): string {
  const event = {
    eventId: crypto.randomUUID(),
    feature,
    amount: 1,
    timestamp: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
  };
  return `curl -s ${origin}/api/v1/usage/events \\
  -H 'authorization: Bearer ${key}' -H 'content-type: application/json' \\
  -d '${JSON.stringify({ events: [event] })}'`;
}

async function firstCountedFeature(view: ConsoleView): Promise<string> {
  const subscription = await activeSubscription(view);
  const features = countedFeatures(subscription.ok ? subscription.body : null);
  return (
    features.find((f) => f.featureType === "METERED")?.featureLookupKey ??
    features[0]?.featureLookupKey ??
    "api_calls"
  );
}

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
<div class="secret"><code id="new-key">${created.key}</code><button type="button" class="secondary" data-copy="new-key">Copy</button><span id="new-key-status" role="status"></span></div>
<h3>Try it</h3>
<p>Report one unit of usage from a terminal, as your servers will (then see it under Usage):</p>
<pre class="command"><code id="new-key-curl">${usageCurl(new URL(c.req.url).origin, created.key, await firstCountedFeature(view))}</code></pre>
<button type="button" class="secondary" data-copy="new-key-curl">Copy the command</button><span id="new-key-curl-status" role="status"></span></div>`
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

/** The new key is shown on the answer itself: it is never shown again, so no redirect. */
const createKey: PageHandler = async (c, view) => {
  const form = await formOf(c);
  const days = form.expiresInDays?.trim();
  const result = await view.api.post("/api-keys", {
    idempotencyKey: form._idem,
    body: { name: form.name ?? "", ...(days ? { expiresInDays: Number(days) } : {}) },
  });
  if (!result.ok) return keysPage(c, view, { error: errorText(result), status: result.status });
  return keysPage(c, view, { created: result.body });
};

const revokeKey: PageHandler = async (c, view) => {
  const result = await view.api.call(
    "DELETE",
    `/api-keys/${encodeURIComponent(c.req.param("id") as string)}`,
  );
  if (!result.ok) return keysPage(c, view, { error: errorText(result), status: result.status });
  return done(c, "/console/keys", "key-revoked");
};

export function registerApiKeyPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  const page = tenantRoute(fetchApi);
  app.get(
    "/keys",
    page("/console/keys", "API keys", (c, view) => keysPage(c, view)),
  );
  app.post("/keys", page("/console/keys", "API keys", createKey));
  app.post("/keys/:id/revoke", page("/console/keys", "API keys", revokeKey));
}
