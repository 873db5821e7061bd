import type { Context, Hono } from "hono";
import { html } from "hono/html";
import { errorText } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { count, formGuard, table, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { type ConsoleView, done, formOf, render } from "../view.ts";
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

type Alert = {
  id: string;
  featureLookupKey: string;
  threshold: { type: string; value: number };
  thresholdUnits: number | null;
  createdAt: string;
};

type Feature = ReturnType<typeof countedFeatures>[number];

/** Whether a percent threshold has something to be a percent of: a limit or included amount above 0. */
function percentable(feature: Feature): boolean {
  return (capOf(feature) ?? 0) > 0;
}

function thresholdText(alert: Alert): string {
  if (alert.threshold.type !== "percent") return `${count(alert.threshold.value)} units`;
  return alert.thresholdUnits === null || alert.thresholdUnits === undefined
    ? `${alert.threshold.value}%`
    : `${alert.threshold.value}% (${count(alert.thresholdUnits)} units)`;
}

/** Whether the current window's usage has reached the alert, from the same figure the overview shows. */
function reachedText(alert: Alert, used: number | undefined): string {
  if (used === undefined || alert.thresholdUnits === null || alert.thresholdUnits === undefined) {
    return "-";
  }
  return used >= alert.thresholdUnits
    ? `Yes (${count(used)} used)`
    : `Not yet (${count(used)} used)`;
}

/** Units used now in each alerted feature's window. */
async function usedNow(view: ConsoleView, alerts: Alert[]): Promise<Map<string, number>> {
  const checks = await usageChecks(
    view,
    alerts.map((alert) => alert.featureLookupKey),
  );
  const used = new Map<string, number>();
  for (const [key, check] of checks) if (check.ok) used.set(key, check.body.used ?? 0);
  return used;
}

async function alertsPage(
  c: Context<ConsoleEnv>,
  view: ConsoleView,
  extra: { error?: string; status?: number } = {},
) {
  const [list, subscription, names] = await Promise.all([
    view.api.get("/usage-alerts?limit=100"),
    activeSubscription(view),
    featureNames(view),
  ]);
  const features = countedFeatures(subscription.ok ? subscription.body : null);
  const usedOf = await usedNow(view, list.ok ? (list.body.data as Alert[]) : []);
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
      ? html`<select id="alert-feature" name="featureLookupKey" data-percent-for>${features.map(
          (f) =>
            html`<option value="${f.featureLookupKey}" data-capped="${String(percentable(f))}">${featureLabel(names, f.featureLookupKey)}</option>`,
        )}</select>`
      : html`<input id="alert-feature" name="featureLookupKey" required />`
  }</div>
  <div class="field"><label for="alert-type">Threshold in</label><select id="alert-type" name="type"><option value="units">units</option>${
    features.some(percentable)
      ? html`<option value="percent">percent of the limit or included amount</option>`
      : ""
  }</select></div>
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
        ["Feature", "Threshold", "Reached in this window", "Created", ""],
        (list.body.data as Alert[]).map(
          (a) =>
            html`<tr><td>${featureLabel(names, a.featureLookupKey)}</td><td>${thresholdText(a)}</td><td>${reachedText(a, usedOf.get(a.featureLookupKey))}</td><td>${when(a.createdAt)}</td><td>${
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
  if (form.type === "percent") {
    const subscription = await activeSubscription(view);
    const feature = countedFeatures(subscription.ok ? subscription.body : null).find(
      (f) => f.featureLookupKey === form.featureLookupKey,
    );
    if (feature && !percentable(feature)) {
      const error = `${feature.featureLookupKey} has no limit or included amount, so a percent has nothing to be a percent of: set the threshold in units.`;
      return alertsPage(c, view, { error, status: 400 });
    }
  }
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
