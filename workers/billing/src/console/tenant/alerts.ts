import type { Context, Hono } from "hono";
import { html } from "hono/html";
import { errorText } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { count, formGuard, table, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { type ConsoleView, done, formOf, render } from "../view.ts";
import { activeSubscription, countedFeatures, tenantRoute, unavailable } from "./tenant-page.ts";

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

const createAlert: PageHandler = async (c, view) => {
  const form = await formOf(c);
  const result = await view.api.post("/usage-alerts", {
    idempotencyKey: form._idem,
    body: {
      featureLookupKey: form.featureLookupKey ?? "",
      threshold: { type: form.type, value: Number(form.value) },
    },
  });
  if (!result.ok) return alertsPage(c, view, { error: errorText(result), status: result.status });
  return done(c, "/console/alerts", "alert-created");
};

const deleteAlert: PageHandler = async (c, view) => {
  const result = await view.api.call(
    "DELETE",
    `/usage-alerts/${encodeURIComponent(c.req.param("id") as string)}`,
  );
  if (!result.ok) return alertsPage(c, view, { error: errorText(result), status: result.status });
  return done(c, "/console/alerts", "alert-deleted");
};

export function registerAlertPages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  const page = tenantRoute(fetchApi);
  app.get(
    "/alerts",
    page("/console/alerts", "Usage alerts", (c, view) => alertsPage(c, view)),
  );
  app.post("/alerts", page("/console/alerts", "Usage alerts", createAlert));
  app.post("/alerts/:id/delete", page("/console/alerts", "Usage alerts", deleteAlert));
}
