import { GROWING_AGGREGATIONS, type MeterAggregation } from "@edge-platform/shared/billing/meter";
import type { Hono } from "hono";
import { html } from "hono/html";
import type { ApiBody, ApiResult, ConsoleApi } from "../api-client.ts";
import type { ApiFetch } from "../api-fetch.ts";
import { barChart, chartRange, lineChart, MAX_CHART_SERIES } from "../chart.ts";
import { badge, count, type Html, table, when } from "../layout.ts";
import type { ConsoleEnv } from "../session.ts";
import type { PageHandler } from "../signed-in.ts";
import { render } from "../view.ts";
import {
  activeSubscription,
  type CatalogFeature,
  countedFeatures,
  featureCatalog,
  featureLabel,
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
type Bucket = { start: string; end: string; value: number };
type SplitSeries = { dimensions: Record<string, unknown>; overflow: boolean; data: Bucket[] };

const namesOf = (catalog: Map<string, CatalogFeature>) =>
  new Map([...catalog].map(([key, feature]) => [key, feature.name]));

/** Whether a feature's buckets add up over time (plain units, SUM, COUNT, UNIQUE_COUNT) or are levels and averages. */
function additive(feature: CatalogFeature | undefined): boolean {
  const aggregation = feature?.meter?.aggregation ?? "SUM";
  return GROWING_AGGREGATIONS.has(aggregation as MeterAggregation);
}

/** A split line's name: the property's value, or what stands for a missing one. */
function splitLabel(series: SplitSeries, property: string): string {
  if (series.overflow) return "(other combinations)";
  const value = series.dimensions[property];
  return value === null || value === undefined ? "(no value)" : String(value);
}

/** The chart of one feature's usage split by `split`: a line per value, the largest first, and a table of them. */
function splitChart(
  feature: string,
  split: string,
  body: { series?: SplitSeries[] },
  range: Range,
  measure: "total" | "peak",
): Html {
  const size = (buckets: Bucket[]) =>
    measure === "total"
      ? buckets.reduce((sum, bucket) => sum + bucket.value, 0)
      : Math.max(0, ...buckets.map((bucket) => bucket.value));
  const lines = (body.series ?? [])
    .map((series) => ({ label: splitLabel(series, split), buckets: series.data }))
    .sort((a, b) => size(b.buckets) - size(a.buckets));
  if (lines.length === 0) return html`<p class="empty">No usage of ${feature} in this range.</p>`;
  const drawn = lines.slice(0, MAX_CHART_SERIES);
  const first = drawn[0]?.buckets ?? [];
  return html`${lineChart(`${feature} by ${split}`, drawn, range.granularity, measure)}
${lines.length > drawn.length ? html`<p class="hint">The ${drawn.length} largest of ${lines.length} values of ${split} are drawn.</p>` : ""}
<details><summary>The same data as a table</summary>
${table(
  `${feature} by ${split}, per ${range.granularity}`,
  ["From", "To", ...drawn.map((line) => line.label)],
  first
    .map((bucket, index) => ({ bucket, index }))
    .filter(({ index }) => drawn.some((line) => (line.buckets[index]?.value ?? 0) !== 0))
    .map(
      ({ bucket, index }) =>
        html`<tr><td>${when(bucket.start)}</td><td>${when(bucket.end)}</td>${drawn.map(
          (line) => html`<td class="num">${count(line.buckets[index]?.value ?? 0)}</td>`,
        )}</tr>`,
    ),
  "No usage in this range.",
)}</details>`;
}

/** The chart of one feature's usage (split by a property of its meter when asked), and the same figures as a table. */
function usageSeries(
  feature: string | undefined,
  series: ApiResult | null,
  range: Range,
  catalog: Map<string, CatalogFeature>,
  split: string | undefined,
): Html {
  if (!feature) {
    return html`<p class="empty">No counted feature to chart: the tenant has no subscription with a QUOTA or METERED feature.</p>`;
  }
  if (!series?.ok) return unavailable("the usage series", series as ApiResult);
  const names = namesOf(catalog);
  const sums = additive(catalog.get(feature));
  const data = series.body.data as Bucket[];
  const heading = sums
    ? html`<h2>${featureLabel(names, feature)}: ${count(data.reduce((s, b) => s + b.value, 0))} units</h2>`
    : html`<h2>${featureLabel(names, feature)}: ${catalog.get(feature)?.meter?.aggregation ?? ""} per ${range.granularity}</h2>`;
  const hint = html`<p class="hint">Units are charted once the counter has written them (a second or so after use). Times are UTC.</p>`;
  if (split) {
    return html`${heading}${splitChart(feature, split, series.body, range, sums ? "total" : "peak")}${hint}`;
  }
  return html`${heading}
${barChart(feature, data, range.granularity)}
${hint}
<details><summary>The same data as a table</summary>
${table(
  `${feature} per ${range.granularity}`,
  ["From", "To", "Units"],
  data
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

/** The "Split by" choice: none, or one property the feature's meter groups by. */
function splitField(groupBy: string[], split: string | undefined): Html {
  if (groupBy.length === 0) return html``;
  return html`<div class="field"><label for="split">Split by</label><select id="split" name="split"><option value="">None</option>${groupBy.map(
    (property) =>
      html`<option value="${property}"${property === split ? html` selected` : ""}>${property}</option>`,
  )}</select></div>`;
}

const usage: PageHandler = async (c, view) => {
  const [subscription, catalog] = await Promise.all([
    activeSubscription(view),
    featureCatalog(view),
  ]);
  const features = countedFeatures(subscription.ok ? subscription.body : null);
  const feature = c.req.query("feature") || features[0]?.featureLookupKey;
  const rangeKey = RANGES[c.req.query("range") ?? ""] ? (c.req.query("range") as string) : "24h";
  const range = RANGES[rangeKey] as Range;
  const { from, to } = chartRange(new Date(), range.hours, range.granularity);
  // A property the chosen feature does not group by (one kept from another feature) is no split.
  const groupBy = (feature && catalog.get(feature)?.meter?.groupBy) || [];
  const asked = c.req.query("split");
  const split = asked && groupBy.includes(asked) ? asked : undefined;
  const query = new URLSearchParams({
    from: from.toISOString(),
    to: to.toISOString(),
    granularity: range.granularity,
    ...(split ? { groupBy: split } : {}),
  });
  const [series, events] = await Promise.all([
    feature
      ? view.api.get(`/usage/timeseries?feature=${encodeURIComponent(feature)}&${query}`)
      : Promise.resolve(null),
    latestUsageEvents(view.api),
  ]);
  const names = namesOf(catalog);
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
  ${splitField(groupBy, split)}
  <button type="submit">Show</button>
</form>
${usageSeries(feature, series, range, catalog, split)}
<h2>Latest events</h2>
${latestEventsTable(events, names)}`,
  });
};

/**
 * The 20 latest received events of the last day, newest first. The
 * listing answers in event-time order, so the console asks for the most
 * recent window of receipt that holds any (a minute, an hour, a day),
 * following at most a few pages so a busy tenant's page stays quick, and
 * keeps the 20 received last.
 */
async function latestUsageEvents(api: ConsoleApi): Promise<ApiResult> {
  const now = Date.now();
  let last: ApiResult | undefined;
  for (const hours of [1 / 60, 1, 24]) {
    const receivedFrom = new Date(now - hours * 3_600_000).toISOString();
    const events: ApiBody[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 5; page++) {
      const query = new URLSearchParams({ receivedFrom, limit: "1000" });
      if (cursor) query.set("cursor", cursor);
      last = await api.get(`/usage/events?${query}`);
      if (!last.ok) return last;
      events.push(...last.body.data);
      cursor = last.body.meta.nextCursor;
      if (!cursor) break;
    }
    if (events.length > 0) {
      const latest = byReceiptNewestFirst(events as ListedEvent[]).slice(0, 20);
      return { ...(last as ApiResult), body: { data: latest } };
    }
  }
  return last as ApiResult;
}

export function registerUsagePages(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  app.get("/usage", tenantRoute(fetchApi)("/console/usage", "Usage", usage));
}
