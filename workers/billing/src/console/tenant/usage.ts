import type { Hono } from "hono";
import { html } from "hono/html";
import type { ApiBody, ApiResult, ConsoleApi } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { barChart, chartRange } from "../chart.ts";
import { badge, count, type Html, table, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { render } from "../view.ts";
import {
  activeSubscription,
  countedFeatures,
  featureLabel,
  featureNames,
  tenantRoute,
  unavailable,
} from "./tenant-page.ts";

const RANGES: Record<string, { label: string; hours: number; granularity: "hour" | "day" }> = {
  "24h": { label: "Last 24 hours (hourly)", hours: 24, granularity: "hour" },
  "7d": { label: "Last 7 days (hourly)", hours: 24 * 7, granularity: "hour" },
  "30d": { label: "Last 30 days (daily)", hours: 24 * 30, granularity: "day" },
  "90d": { label: "Last 90 days (daily)", hours: 24 * 90, granularity: "day" },
};

type Range = (typeof RANGES)[string];

/** The chart of one feature's usage, and the same figures as a table. */
function usageSeries(
  feature: string | undefined,
  series: ApiResult | null,
  range: Range,
  names: Map<string, string>,
): Html {
  return !feature
    ? html`<p class="empty">No counted feature to chart: the tenant has no subscription with a QUOTA or METERED feature.</p>`
    : !series?.ok
      ? unavailable("the usage series", series as ApiResult)
      : html`<h2>${featureLabel(names, feature)}: ${count(series.body.data.reduce((s: number, b: { value: number }) => s + b.value, 0))} units</h2>
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
)}</details>`;
}

type ListedEvent = {
  eventId: string;
  feature: string;
  amount: number;
  timestamp: string;
  receivedAt: string;
  status: string;
  reason: string | null;
  message: string | null;
};

/** Newest received first; events of one request (one receipt time) newest happened first. */
export function byReceiptNewestFirst(events: ListedEvent[]): ListedEvent[] {
  return events
    .map((event, index) => ({ event, index }))
    .sort(
      (a, b) =>
        b.event.receivedAt.localeCompare(a.event.receivedAt) ||
        b.event.timestamp.localeCompare(a.event.timestamp) ||
        b.index - a.index,
    )
    .map(({ event }) => event);
}

function latestEventsTable(events: ApiResult, names: Map<string, string>): Html {
  return !events.ok
    ? unavailable("the latest events", events)
    : table(
        "The 20 most recently received usage events of the last day, newest received first",
        ["Received", "Happened", "Feature", "Units", "Status", "Event id"],
        byReceiptNewestFirst(events.body.data as ListedEvent[]).map(
          (e) =>
            html`<tr><td>${when(e.receivedAt)}</td><td>${when(e.timestamp)}</td><td>${featureLabel(names, e.feature)}</td><td class="num">${count(e.amount)}</td><td>${badge(e.status)}${e.reason ? html` <span class="hint">${e.reason}: ${e.message ?? ""}</span>` : ""}</td><td><code>${e.eventId}</code></td></tr>`,
        ),
        "No usage event received in the last day. Send some with POST /api/v1/usage/events and an API key.",
      );
}

const usage: PageHandler = async (c, view) => {
  const subscription = await activeSubscription(view);
  const features = countedFeatures(subscription.ok ? subscription.body : null);
  const feature = c.req.query("feature") || features[0]?.featureLookupKey;
  const rangeKey = RANGES[c.req.query("range") ?? ""] ? (c.req.query("range") as string) : "24h";
  const range = RANGES[rangeKey] as Range;
  const { from, to } = chartRange(new Date(), range.hours, range.granularity);
  const [series, events, names] = await Promise.all([
    feature
      ? view.api.get(
          `/usage/timeseries?feature=${encodeURIComponent(feature)}&from=${from.toISOString()}&to=${to.toISOString()}&granularity=${range.granularity}`,
        )
      : Promise.resolve(null),
    latestUsageEvents(view.api),
    featureNames(view),
  ]);
  const featureOptions = [
    ...new Set([...features.map((f) => f.featureLookupKey), ...(feature ? [feature] : [])]),
  ];
  return render(c, view, {
    title: "Usage",
    current: "/console/usage",
    body: html`<form method="get" action="/console/usage" class="row panel" autocomplete="off">
  <div class="field"><label for="feature">Feature</label><select id="feature" name="feature">${featureOptions.map(
    (key) =>
      html`<option value="${key}"${key === feature ? html` selected` : ""}>${featureLabel(names, key)}</option>`,
  )}</select></div>
  <div class="field"><label for="range">Range</label><select id="range" name="range">${Object.entries(
    RANGES,
  ).map(
    ([key, value]) =>
      html`<option value="${key}"${key === rangeKey ? html` selected` : ""}>${value.label}</option>`,
  )}</select></div>
  <button type="submit">Show</button>
</form>
${usageSeries(feature, series, range, names)}
<h2>Latest events</h2>
${latestEventsTable(events, names)}`,
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

export function registerUsagePages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  app.get("/usage", tenantRoute(fetchApi)("/console/usage", "Usage", usage));
}
