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

/**
 * The buckets as an SVG bar chart drawn on the server (no script, no
 * library): grid lines at round values, time labels on whole hours or
 * days, each bar's bucket and value in its `<title>`, and a text summary
 * for screen readers.
 */
export function barChart(title: string, buckets: ChartBucket[], granularity: Granularity): Html {
  const total = buckets.reduce((sum, bucket) => sum + bucket.value, 0);
  const largest = Math.max(0, ...buckets.map((bucket) => bucket.value));
  const ticks = yTicks(largest);
  const top = ticks[ticks.length - 1] ?? 1;
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const slot = plotWidth / Math.max(1, buckets.length);
  const barWidth = Math.max(1, slot * 0.8);
  const y = (value: number) => PAD.top + plotHeight - (value / top) * plotHeight;
  const summary = `${title}: ${total.toLocaleString("en-US")} units in ${buckets.length} ${granularity} buckets, at most ${largest.toLocaleString("en-US")} in one.`;
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${summary}" data-total="${total}">
${ticks.map(
  (tick) =>
    html`<line class="grid" x1="${PAD.left}" y1="${y(tick).toFixed(1)}" x2="${WIDTH - PAD.right}" y2="${y(tick).toFixed(1)}" /><text class="y-tick" x="${PAD.left - 8}" y="${y(tick).toFixed(1)}" text-anchor="end" dominant-baseline="middle" data-value="${tick}">${compact.format(tick)}</text>`,
)}
${buckets.map((bucket, index) => {
  const x = PAD.left + index * slot + (slot - barWidth) / 2;
  const height = y(0) - y(bucket.value);
  const label = timeLabel(bucket.start, granularity, buckets.length);
  return html`<rect class="bar" x="${x.toFixed(1)}" y="${y(bucket.value).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${Math.max(0, height).toFixed(1)}" data-start="${bucket.start}" data-value="${bucket.value}"><title>${bucketName(bucket.start, granularity)}: ${bucket.value.toLocaleString("en-US")} units</title></rect>${
    label
      ? html`<line class="tick" x1="${(PAD.left + index * slot).toFixed(1)}" y1="${y(0)}" x2="${(PAD.left + index * slot).toFixed(1)}" y2="${y(0) + 5}" /><text class="x-tick${label.major ? "" : " minor"}" x="${(PAD.left + index * slot).toFixed(1)}" y="${HEIGHT - 14}" text-anchor="middle" data-start="${bucket.start}">${label.text}</text>`
      : ""
  }`;
})}
</svg>`;
}
