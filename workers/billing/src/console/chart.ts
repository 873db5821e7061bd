import { html } from "hono/html";
import type { Html } from "./layout.ts";

export interface ChartBucket {
  start: string;
  end: string;
  value: number;
}

const WIDTH = 760;
const HEIGHT = 240;
const PAD = { left: 48, right: 32, top: 12, bottom: 34 };

/** A round upper bound for the axis (1, 2 or 5 times a power of ten). */
export function niceCeiling(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

function label(iso: string, granularity: "hour" | "day"): string {
  return granularity === "hour" ? `${iso.slice(5, 10)} ${iso.slice(11, 13)}h` : iso.slice(5, 10);
}

/**
 * The buckets as an SVG bar chart drawn on the server (no script, no
 * library), with a text summary for screen readers; each bar carries its
 * bucket and value as a tooltip.
 */
export function barChart(title: string, buckets: ChartBucket[], granularity: "hour" | "day"): Html {
  const total = buckets.reduce((sum, bucket) => sum + bucket.value, 0);
  const top = niceCeiling(Math.max(0, ...buckets.map((bucket) => bucket.value)));
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const slot = plotWidth / Math.max(1, buckets.length);
  const barWidth = Math.max(1, slot * 0.8);
  const labelEvery = Math.max(1, Math.ceil(buckets.length / 8));
  const y = (value: number) => PAD.top + plotHeight - (value / top) * plotHeight;
  const summary = `${title}: ${total.toLocaleString("en-US")} units in ${buckets.length} ${granularity} buckets, at most ${Math.max(0, ...buckets.map((b) => b.value)).toLocaleString("en-US")} in one.`;
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${summary}" data-total="${total}">
<line class="axis" x1="${PAD.left}" y1="${y(0)}" x2="${WIDTH - PAD.right}" y2="${y(0)}" />
<line class="axis" x1="${PAD.left}" y1="${y(top)}" x2="${WIDTH - PAD.right}" y2="${y(top)}" />
<text x="${PAD.left - 6}" y="${y(top) + 4}" text-anchor="end">${top.toLocaleString("en-US")}</text>
<text x="${PAD.left - 6}" y="${y(0) + 4}" text-anchor="end">0</text>
${buckets.map((bucket, index) => {
  const x = PAD.left + index * slot + (slot - barWidth) / 2;
  const height = y(0) - y(bucket.value);
  return html`<rect class="bar" x="${x.toFixed(1)}" y="${y(bucket.value).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${Math.max(0, height).toFixed(1)}"><title>${label(bucket.start, granularity)}: ${bucket.value.toLocaleString("en-US")}</title></rect>${
    index % labelEvery === 0
      ? html`<text x="${(x + barWidth / 2).toFixed(1)}" y="${HEIGHT - 12}" text-anchor="middle">${label(bucket.start, granularity)}</text>`
      : ""
  }`;
})}
</svg>`;
}
