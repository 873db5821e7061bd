import { html } from "hono/html";
import type { Html } from "./layout.ts";

export interface ChartBucket {
  start: string;
  end: string;
  value: number;
}

export type Granularity = "hour" | "day";

const WIDTH = 760;
const HEIGHT = 240;
const PAD = { left: 56, right: 24, top: 18, bottom: 40 };
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * Round y ticks from 0: a step of 1, 2 or 5 times a power of ten giving
 * two to four steps (three to five ticks), the one whose top is nearest
 * above the largest value, so the tallest bar fills most of the chart.
 */
export function yTicks(max: number): number[] {
  let best: { step: number; steps: number } | null = null;
  for (let power = 1; power <= 1e15; power *= 10) {
    for (const factor of [1, 2, 5]) {
      const step = factor * power;
      const steps = Math.max(2, Math.ceil(max / step));
      if (steps <= 4 && (!best || steps * step <= best.step * best.steps)) best = { step, steps };
    }
  }
  const { step, steps } = best ?? { step: 1, steps: 2 };
  return Array.from({ length: steps + 1 }, (_, index) => index * step);
}

const compact = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });

/**
 * Which buckets carry a time label: only those starting on a natural UTC
 * boundary (every 6 hours for hourly buckets over a day, midnight for
 * hourly buckets over days, every 5th or 15th day for daily ones).
 * `major` labels stay on a phone; the others are dropped there.
 */
export function timeLabel(
  startIso: string,
  granularity: Granularity,
  bucketCount: number,
): { text: string; major: boolean } | null {
  const start = Date.parse(startIso);
  const hour = new Date(start).getUTCHours();
  if (granularity === "hour" && bucketCount <= 48) {
    if (hour % 3 !== 0) return null;
    return { text: `${String(hour).padStart(2, "0")}:00`, major: hour % 6 === 0 };
  }
  const day = Math.floor(start / DAY_MS);
  if (granularity === "hour") {
    if (start % DAY_MS !== 0) return null;
    return { text: startIso.slice(5, 10), major: day % 2 === 0 };
  }
  const every = bucketCount <= 35 ? 5 : 15;
  if (day % every !== 0) return null;
  return { text: startIso.slice(5, 10), major: day % (every * 2) === 0 };
}

function bucketName(iso: string, granularity: Granularity): string {
  return granularity === "hour" ? `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` : iso.slice(0, 10);
}

/** The range a chart shows: whole buckets, ending with the one that holds `now`. */
export function chartRange(now: Date, hours: number, granularity: Granularity) {
  const size = granularity === "hour" ? HOUR_MS : DAY_MS;
  const to = new Date(Math.ceil((now.getTime() + 1) / size) * size);
  return { from: new Date(to.getTime() - hours * HOUR_MS), to };
}

/** The plot area for `count` buckets up to `largest`: round y ticks, each bucket's slot, and y of a value. */
function plotArea(largest: number, count: number) {
  const ticks = yTicks(largest);
  const top = ticks[ticks.length - 1] ?? 1;
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const slot = plotWidth / Math.max(1, count);
  const y = (value: number) => PAD.top + plotHeight - (value / top) * plotHeight;
  return { ticks, slot, y };
}

function gridLines(ticks: number[], y: (value: number) => number): Html[] {
  return ticks.map(
    (tick) =>
      html`<line class="grid" x1="${PAD.left}" y1="${y(tick).toFixed(1)}" x2="${WIDTH - PAD.right}" y2="${y(tick).toFixed(1)}" /><text class="y-tick" x="${PAD.left - 8}" y="${y(tick).toFixed(1)}" text-anchor="end" dominant-baseline="middle" data-value="${tick}">${compact.format(tick)}</text>`,
  );
}

/** The time label of bucket `index`, with its tick, or nothing off the natural boundaries. */
function xLabel(
  start: string,
  index: number,
  count: number,
  area: ReturnType<typeof plotArea>,
  granularity: Granularity,
): Html | "" {
  const label = timeLabel(start, granularity, count);
  const x = (PAD.left + index * area.slot).toFixed(1);
  return label
    ? html`<line class="tick" x1="${x}" y1="${area.y(0)}" x2="${x}" y2="${area.y(0) + 5}" /><text class="x-tick${label.major ? "" : " minor"}" x="${x}" y="${HEIGHT - 14}" text-anchor="middle" data-start="${start}">${label.text}</text>`
    : "";
}

/**
 * The buckets as an SVG bar chart drawn on the server (no script, no
 * library): grid lines at round values, time labels on whole hours or
 * days, each bar's bucket and value in its `<title>`, and a text summary
 * for screen readers.
 */
export function barChart(title: string, buckets: ChartBucket[], granularity: Granularity): Html {
  const total = buckets.reduce((sum, bucket) => sum + bucket.value, 0);
  const largest = Math.max(0, ...buckets.map((bucket) => bucket.value));
  const area = plotArea(largest, buckets.length);
  const { slot, y } = area;
  const barWidth = Math.max(1, slot * 0.8);
  const summary = `${title}: ${total.toLocaleString("en-US")} units in ${buckets.length} ${granularity} buckets, at most ${largest.toLocaleString("en-US")} in one.`;
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${summary}" data-total="${total}">
${gridLines(area.ticks, y)}
${buckets.map((bucket, index) => {
  const x = PAD.left + index * slot + (slot - barWidth) / 2;
  const height = y(0) - y(bucket.value);
  return html`<rect class="bar" x="${x.toFixed(1)}" y="${y(bucket.value).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${Math.max(0, height).toFixed(1)}" data-start="${bucket.start}" data-value="${bucket.value}"><title>${bucketName(bucket.start, granularity)}: ${bucket.value.toLocaleString("en-US")} units</title></rect>${xLabel(bucket.start, index, buckets.length, area, granularity)}`;
})}
</svg>`;
}

/** One line of a line chart: what it stands for, and its buckets (the same boundaries for every line). */
export interface ChartSeries {
  label: string;
  buckets: ChartBucket[];
}

/**
 * Line colours told apart by most colour-blind readers (Okabe and Ito's
 * palette), each line also dashed its own way so it is found without
 * colour, matched by the legend's samples.
 */
const SERIES_STYLES = [
  { colour: "#0072B2", dash: "" },
  { colour: "#E69F00", dash: "8 4" },
  { colour: "#009E73", dash: "2 3" },
  { colour: "#CC79A7", dash: "10 3 2 3" },
  { colour: "#D55E00", dash: "4 4" },
  { colour: "#56B4E9", dash: "12 4" },
  { colour: "#000000", dash: "1 4" },
  { colour: "#999999", dash: "6 2 2 2 2 2" },
] as const;

/** The most lines one chart draws: beyond, colours and dashes stop being told apart. */
export const MAX_CHART_SERIES = SERIES_STYLES.length;

const styleOf = (index: number) => SERIES_STYLES[index % SERIES_STYLES.length] ?? SERIES_STYLES[0];

/**
 * Several series as lines over the same axes as barChart, with a legend
 * (a colour and dash sample, the label and the series' total, or its
 * peak for values that do not add up over time) and a text summary naming
 * every line for screen readers. Draws the first MAX_CHART_SERIES series.
 */
export function lineChart(
  title: string,
  series: ChartSeries[],
  granularity: Granularity,
  measure: "total" | "peak" = "total",
): Html {
  const drawn = series.slice(0, MAX_CHART_SERIES);
  const count = drawn[0]?.buckets.length ?? 0;
  const largest = Math.max(0, ...drawn.flatMap((line) => line.buckets.map((b) => b.value)));
  const area = plotArea(largest, count);
  const totals = drawn.map((line) =>
    measure === "total"
      ? line.buckets.reduce((sum, bucket) => sum + bucket.value, 0)
      : Math.max(0, ...line.buckets.map((bucket) => bucket.value)),
  );
  const summary = `${title}: ${drawn.length} lines in ${count} ${granularity} buckets, ${measure} of each: ${drawn
    .map((line, index) => `${line.label} ${(totals[index] ?? 0).toLocaleString("en-US")}`)
    .join("; ")}.`;
  const x = (index: number) => (PAD.left + index * area.slot + area.slot / 2).toFixed(1);
  return html`<figure class="chart-figure"><svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${summary}">
${gridLines(area.ticks, area.y)}
${(drawn[0]?.buckets ?? []).map((bucket, index) => xLabel(bucket.start, index, count, area, granularity))}
${drawn.map((line, index) => {
  const style = styleOf(index);
  const points = line.buckets.map((b, i) => `${x(i)},${area.y(b.value).toFixed(1)}`).join(" ");
  return html`<polyline class="line" points="${points}" fill="none" stroke="${style.colour}" stroke-width="2"${style.dash ? html` stroke-dasharray="${style.dash}"` : ""} data-series="${line.label}"><title>${line.label}: ${measure} ${(totals[index] ?? 0).toLocaleString("en-US")}</title></polyline>`;
})}
</svg>
<figcaption><ul class="legend">${drawn.map((line, index) => {
    const style = styleOf(index);
    return html`<li><svg class="swatch" viewBox="0 0 28 10" width="28" height="10" aria-hidden="true"><line x1="0" y1="5" x2="28" y2="5" stroke="${style.colour}" stroke-width="3"${style.dash ? html` stroke-dasharray="${style.dash}"` : ""} /></svg> ${line.label} <span class="hint">${measure} ${(totals[index] ?? 0).toLocaleString("en-US")}</span></li>`;
  })}</ul></figcaption></figure>`;
}
