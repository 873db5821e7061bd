/**
 * The forecast as an SVG chart drawn on the server (no script, no library):
 * the CPCB category bands behind, the 80% interval as a shaded band, the
 * point forecast as a line of dots coloured by category, and the AQI at the
 * newest reading where the line starts. Every dot carries its numbers in
 * data attributes and a <title>, so a pointer, a screen reader's "explore"
 * mode and a test all read the same values; the page's table repeats them.
 */
import { html } from "hono/html";
import {
  AQI_CATEGORIES,
  type AqiCategoryLabel,
  categoryIndexForAqi,
} from "../domain/categories.ts";
import type { Html } from "./html.ts";

/** CPCB's colours of the national AQI categories. */
export const CATEGORY_COLOURS: Readonly<Record<AqiCategoryLabel, string>> = {
  Good: "#00b050",
  Satisfactory: "#92d050",
  Moderate: "#ffff00",
  Poor: "#ff9900",
  "Very Poor": "#ff0000",
  Severe: "#c00000",
};

export interface ChartHour {
  /** Hours after the newest reading. */
  readonly horizon: number;
  /** Start of the hour, "YYYY-MM-DDTHH:00". */
  readonly hourStart: string;
  readonly aqi: number;
  readonly aqiRounded: number;
  readonly category: AqiCategoryLabel;
  readonly low: number;
  readonly high: number;
}

export interface ChartLatest {
  readonly hourStart: string;
  readonly aqi: number;
  readonly aqiRounded: number;
  readonly category: AqiCategoryLabel;
}

const WIDTH = 720;
const HEIGHT = 300;
const PAD = { left: 46, right: 24, top: 12, bottom: 42 };
const INK = "#16181d";

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** "19 Jan 08:00" of "2022-01-19T08:00". */
export function hourLabel(hourStart: string): string {
  const month = MONTHS[Number(hourStart.slice(5, 7)) - 1];
  return `${Number(hourStart.slice(8, 10))} ${month} ${hourStart.slice(11, 16)}`;
}

/** The top of the axis: the upper end of the category band holding the largest value (at least 100). */
export function axisTop(values: readonly number[]): number {
  const largest = Math.max(100, ...values);
  if (largest > 500) return Math.ceil(largest / 100) * 100;
  return AQI_CATEGORIES[categoryIndexForAqi(largest)]!.high;
}

/** Every how many hours an hour is labelled: at most eight labels. */
export function labelStep(hours: number): number {
  return [1, 2, 3, 6, 12].find((step) => hours / step <= 8) ?? 12;
}

/** The category bands up to `top`: each band's rectangle, and its name and upper bound. */
function bands(y: (value: number) => number, top: number) {
  const left = PAD.left;
  const right = WIDTH - PAD.right;
  const shown = AQI_CATEGORIES.filter((category) => category.low <= top);
  const fills = shown.map((category, index) => {
    const lower = index === 0 ? 0 : shown[index - 1]!.high;
    const upper = Math.min(category.high, top);
    return html`<rect class="band" x="${left}" y="${y(upper).toFixed(1)}" width="${right - left}" height="${(y(lower) - y(upper)).toFixed(1)}" fill="${CATEGORY_COLOURS[category.label]}" fill-opacity="0.16"></rect>`;
  });
  // Drawn over the interval, so a wide interval cannot hide them.
  const labels = shown.map((category, index) => {
    const lower = index === 0 ? 0 : shown[index - 1]!.high;
    const upper = Math.min(category.high, top);
    return html`${
      y(lower) - y(upper) >= 16
        ? html`<text class="band-label" x="${right - 6}" y="${(y(upper) + 14).toFixed(1)}" text-anchor="end">${category.label}</text>`
        : ""
    }<text x="${left - 6}" y="${(y(upper) + 4).toFixed(1)}" text-anchor="end">${upper}</text>`;
  });
  return { fills, labels };
}

function intervalBand(
  hours: readonly ChartHour[],
  x: (h: number) => number,
  y: (v: number) => number,
): Html {
  const title = html`<title>80% interval</title>`;
  if (hours.length === 1) {
    const [only] = hours as [ChartHour];
    return html`<rect class="interval" x="${(x(only.horizon) - 6).toFixed(1)}" y="${y(only.high).toFixed(1)}" width="12" height="${(y(only.low) - y(only.high)).toFixed(1)}" fill="#1f2a44" fill-opacity="0.25">${title}</rect>`;
  }
  const upper = hours.map((hour) => `${x(hour.horizon).toFixed(1)},${y(hour.high).toFixed(1)}`);
  const lower = [...hours]
    .reverse()
    .map((hour) => `${x(hour.horizon).toFixed(1)},${y(hour.low).toFixed(1)}`);
  return html`<polygon class="interval" points="${[...upper, ...lower].join(" ")}" fill="#1f2a44" fill-opacity="0.25">${title}</polygon>`;
}

function point(hour: ChartHour, cx: number, cy: number, radius: number): Html {
  return html`<circle class="point" cx="${cx.toFixed(1)}" cy="${cy.toFixed(1)}" r="${radius}" fill="${CATEGORY_COLOURS[hour.category]}" stroke="${INK}" stroke-width="1" data-horizon="${hour.horizon}" data-hour="${hour.hourStart}" data-aqi="${hour.aqi}" data-aqi-rounded="${hour.aqiRounded}" data-low="${hour.low}" data-high="${hour.high}" data-category="${hour.category}"><title>${hourLabel(hour.hourStart)} (+${hour.horizon} h): AQI ${hour.aqiRounded}, ${hour.category}; 80% interval ${hour.low} to ${hour.high}</title></circle>`;
}

function hourTicks(
  hours: readonly ChartHour[],
  latest: ChartLatest,
  x: (h: number) => number,
): Html[] {
  const step = labelStep(hours.length);
  const baseline = HEIGHT - PAD.bottom;
  const ticks = [{ horizon: 0, hourStart: latest.hourStart }, ...hours].filter(
    (hour) => hour.horizon % step === 0,
  );
  return ticks.map((hour) => {
    const time = hour.hourStart.slice(11, 16);
    const day = hourLabel(hour.hourStart).split(" ").slice(0, 2).join(" ");
    const showDay = hour.horizon === 0 || time === "00:00" || hour.horizon < step;
    return html`<line class="tick" x1="${x(hour.horizon).toFixed(1)}" y1="${baseline}" x2="${x(hour.horizon).toFixed(1)}" y2="${baseline + 5}" stroke="${INK}"></line><text x="${x(hour.horizon).toFixed(1)}" y="${baseline + 18}" text-anchor="middle">${time}</text>${
      showDay
        ? html`<text x="${x(hour.horizon).toFixed(1)}" y="${baseline + 33}" text-anchor="middle">${day}</text>`
        : ""
    }`;
  });
}

/** The chart, or nothing for an empty forecast. `summary` is its accessible name. */
export function forecastChart(
  hours: readonly ChartHour[],
  latest: ChartLatest,
  summary: string,
): Html {
  if (hours.length === 0) return html``;
  const top = axisTop([latest.aqi, ...hours.flatMap((hour) => [hour.aqi, hour.high])]);
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const span = hours[hours.length - 1]!.horizon;
  // A margin on both sides keeps the first and last dots inside the plot.
  const x = (horizon: number) => PAD.left + 10 + (horizon / span) * (plotWidth - 20);
  const y = (value: number) =>
    PAD.top + plotHeight - (Math.min(Math.max(value, 0), top) / top) * plotHeight;
  const radius = hours.length > 24 ? 3.5 : 5;
  const line = [latest, ...hours].map(
    (hour, index) =>
      `${x(index === 0 ? 0 : (hour as ChartHour).horizon).toFixed(1)},${y(hour.aqi).toFixed(1)}`,
  );
  const { fills, labels } = bands(y, top);
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${summary}" data-axis-top="${top}">
${fills}
<line class="axis" x1="${PAD.left}" y1="${y(0)}" x2="${WIDTH - PAD.right}" y2="${y(0)}" stroke="${INK}"></line>
<text x="${PAD.left - 6}" y="${y(0) + 4}" text-anchor="end">0</text>
${intervalBand(hours, x, y)}
${labels}
<polyline class="forecast-line" points="${line.join(" ")}" fill="none" stroke="${INK}" stroke-width="2"></polyline>
<rect class="latest" x="${(x(0) - 5).toFixed(1)}" y="${(y(latest.aqi) - 5).toFixed(1)}" width="10" height="10" fill="${CATEGORY_COLOURS[latest.category]}" stroke="${INK}" stroke-width="1.5" data-hour="${latest.hourStart}" data-aqi="${latest.aqi}" data-aqi-rounded="${latest.aqiRounded}" data-category="${latest.category}"><title>Newest reading, ${hourLabel(latest.hourStart)}: AQI ${latest.aqiRounded}, ${latest.category}</title></rect>
${hours.map((hour) => point(hour, x(hour.horizon), y(hour.aqi), radius))}
${hourTicks(hours, latest, x)}
</svg>`;
}
