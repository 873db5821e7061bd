/**
 * The forecast page's HTML: one document, rendered on the server, with no
 * script. Both forms send everything back and the answer is the whole page
 * again, so what the person typed is always rendered back into the fields,
 * with the API's messages beside the field they are about.
 */
import { html } from "hono/html";
import type { AqiCategoryLabel } from "../domain/categories.ts";
import { AQI_CATEGORIES } from "../domain/categories.ts";
import type { TrainingStation } from "../domain/features.ts";
import { MAX_HORIZON_HOURS } from "../domain/history.ts";
import { type ChartHour, type ChartLatest, forecastChart, hourLabel } from "./chart.ts";
import type { FieldErrors, FormField } from "./field-errors.ts";
import type { Html } from "./html.ts";
import type { SampleDay } from "./samples.ts";
import { categoryClass } from "./styles.ts";

export const STYLESHEET_PATH = "/forecast.css";

/** Every form field as typed (text), the way it is rendered back. */
export type FormState = Record<FormField, string>;

export interface ForecastView {
  readonly station: string;
  readonly modelVersion: string;
  readonly latest: ChartLatest & { readonly dominantPollutant: string };
  readonly hours: readonly ChartHour[];
}

export interface PageModel {
  readonly form: FormState;
  readonly stations: readonly TrainingStation[];
  readonly samples: readonly SampleDay[];
  readonly errors: FieldErrors;
  /** What the page did with the input (rows left out, weather taken from the CSV). */
  readonly notes: readonly string[];
  readonly forecast?: ForecastView | undefined;
}

const FIELD_LABELS: Record<FormField, string> = {
  sample: "Sample day",
  station: "Station",
  readings: "Readings",
  newest: "Start of the newest reading's hour",
  temperature: "Temperature (°C)",
  humidity: "Relative humidity (%)",
  wind_speed: "Wind speed (km/h)",
  visibility: "Visibility (km)",
  hours: "Hours ahead",
};

const FAVICON = `data:image/svg+xml,${encodeURIComponent(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#0f1b3d"/><path d="M5 24 L12 15 L18 19 L27 8" fill="none" stroke="#92d050" stroke-width="4" stroke-linecap="round" stroke-linejoin="round"/></svg>',
)}`;

/** The ids a control's aria-describedby names: its hint and its errors. */
function describedBy(name: FormField, hint: boolean, errors: readonly string[] | undefined): Html {
  const ids = [hint ? `${name}-hint` : "", errors?.length ? `${name}-error` : ""].filter(Boolean);
  const invalid = errors?.length ? html` aria-invalid="true"` : "";
  return ids.length > 0 ? html` aria-describedby="${ids.join(" ")}"${invalid}` : html`${invalid}`;
}

function errorList(name: FormField, errors: readonly string[] | undefined): Html {
  if (!errors?.length) return html``;
  return html`<ul class="field-error" id="${name}-error">${errors.map((message) => html`<li>${message}</li>`)}</ul>`;
}

/** A labelled field: label, hint, the control, then its errors beside it. */
function field(
  model: PageModel,
  name: FormField,
  control: (describe: Html) => Html,
  hint?: Html | string,
): Html {
  const errors = model.errors[name];
  return html`<div class="field${errors?.length ? " invalid" : ""}"><label for="${name}">${FIELD_LABELS[name]}</label>${
    hint ? html`<p class="hint" id="${name}-hint">${hint}</p>` : ""
  }${control(describedBy(name, Boolean(hint), errors))}${errorList(name, errors)}</div>`;
}

function textInput(model: PageModel, name: FormField, hint?: string): Html {
  return field(
    model,
    name,
    (describe) =>
      html`<input id="${name}" name="${name}" type="text" inputmode="decimal" autocomplete="off" value="${model.form[name]}"${describe} />`,
    hint,
  );
}

function options(values: readonly { value: string; label: string }[], chosen: string): Html[] {
  return values.map(
    (option) =>
      html`<option value="${option.value}"${option.value === chosen ? html` selected` : ""}>${option.label}</option>`,
  );
}

const HOUR_CHOICES = Array.from({ length: MAX_HORIZON_HOURS }, (_, index) => ({
  value: String(index + 1),
  label: index === 0 ? "1 hour" : `${index + 1} hours`,
}));

function sampleForm(model: PageModel): Html {
  const choices = model.samples.map((sample) => ({ value: sample.id, label: sample.label }));
  return html`<section class="panel" aria-labelledby="samples-heading">
<h2 id="samples-heading">Start from a sample day</h2>
<form method="get" action="/" class="inline">
${field(model, "sample", (describe) => html`<select id="sample" name="sample"${describe}>${options(choices, model.form.sample)}</select>`, "72 hours of real CPCB readings before a morning; the forecast runs from the hour after the newest one")}
<input type="hidden" name="hours" value="${model.form.hours}" />
<button type="submit">Load sample and forecast</button>
</form>
<p class="hint">The samples as files: ${model.samples.map(
    (sample, index) =>
      html`${index > 0 ? ", " : ""}<a href="/samples/${sample.id}.csv">${sample.id}.csv</a>`,
  )}</p>
</section>`;
}

const READINGS_HINT = html`A CPCB export (CSV with the columns From Date, PM2.5, PM10, NO2, SO2, NH3, CO, Ozone, with or without their units; AT, RH and WS fill blank weather fields) or the API's <code>recent_hours</code> JSON. Up to the last 72 hours; at least 16 of the last 24 need PM2.5 or PM10.`;

function readingsFields(model: PageModel): Html {
  const stations = model.stations.map((station) => ({ value: station.name, label: station.name }));
  return html`${field(model, "station", (describe) => html`<select id="station" name="station"${describe}>${options(stations, model.form.station)}</select>`, "The stations the models were trained on")}
${field(model, "readings", (describe) => html`<textarea id="readings" name="readings" rows="10" spellcheck="false"${describe}>${model.form.readings}</textarea>`, READINGS_HINT)}
<div class="field"><label for="readings_file">Or upload a file (.csv or .json)</label><p class="hint" id="readings_file-hint">Its contents replace the text above.</p><input id="readings_file" name="readings_file" type="file" accept=".csv,.json,.txt,text/csv,application/json,text/plain" aria-describedby="readings_file-hint" /></div>
${field(model, "newest", (describe) => html`<input id="newest" name="newest" type="datetime-local" step="3600" value="${model.form.newest}"${describe} />`, "Only for JSON readings, which carry no clock time (Indian time). A CSV's From Date gives it.")}`;
}

function forecastForm(model: PageModel): Html {
  return html`<section class="panel" aria-labelledby="input-heading">
<h2 id="input-heading">Your station's readings</h2>
<form method="post" action="/" enctype="multipart/form-data" novalidate>
${readingsFields(model)}
<fieldset><legend>Weather expected over the forecast hours</legend>
<p class="hint">One value for every hour ahead. Blank fields take the CSV's newest AT, RH and WS.</p>
<div class="weather">${textInput(model, "temperature")}${textInput(model, "humidity")}${textInput(model, "wind_speed")}${textInput(model, "visibility", "Required by the API, not used by the model")}</div>
</fieldset>
${field(model, "hours", (describe) => html`<select id="hours" name="hours"${describe}>${options(HOUR_CHOICES, model.form.hours)}</select>`)}
<button type="submit">Forecast</button>
</form>
</section>`;
}

function errorSummary(model: PageModel): Html {
  const entries = Object.entries(model.errors).flatMap(([name, messages]) =>
    (messages ?? []).map((message) => ({ name, message })),
  );
  if (entries.length === 0) return html``;
  return html`<div class="error-summary" role="alert" aria-labelledby="error-heading">
<h2 id="error-heading">The forecast could not be made</h2>
<ul>${entries.map(({ name, message }) =>
    name === "form"
      ? html`<li>${message}</li>`
      : html`<li><a href="#${name}">${FIELD_LABELS[name as FormField]}</a>: ${message}</li>`,
  )}</ul></div>`;
}

function swatch(label: AqiCategoryLabel): Html {
  return html`<span class="swatch ${categoryClass(label)}" aria-hidden="true"></span>`;
}

function forecastTable(forecast: ForecastView): Html {
  return html`<div class="table-wrap" role="region" aria-labelledby="table-caption" tabindex="0">
<table><caption id="table-caption">Forecast by hour (start of the hour, Indian time)</caption>
<thead><tr><th scope="col">Hour</th><th scope="col" class="num">Ahead</th><th scope="col" class="num">AQI</th><th scope="col" class="num">80% interval</th><th scope="col">Category</th></tr></thead>
<tbody>${forecast.hours.map(
    (hour) =>
      html`<tr data-horizon="${hour.horizon}"><td>${hourLabel(hour.hourStart)}</td><td class="num">${hour.horizon} h</td><td class="num">${hour.aqiRounded}</td><td class="num">${hour.low} to ${hour.high}</td><td>${swatch(hour.category)}${hour.category}</td></tr>`,
  )}</tbody></table></div>`;
}

function forecastSection(model: PageModel, forecast: ForecastView): Html {
  const { latest, hours } = forecast;
  const peak = hours.reduce((best, hour) => (hour.aqi > best.aqi ? hour : best), hours[0]!);
  const last = hours[hours.length - 1]!;
  const summary = `AQI forecast for ${forecast.station}, ${hours.length} hours from ${hourLabel(hours[0]!.hourStart)}: from ${latest.aqiRounded} (${latest.category}) at the newest reading to ${last.aqiRounded} (${last.category}); highest ${peak.aqiRounded} (${peak.category}) at ${hourLabel(peak.hourStart)}.`;
  return html`<section class="panel" id="forecast" aria-labelledby="forecast-heading">
<h2 id="forecast-heading">Forecast for ${forecast.station}: the next ${hours.length === 1 ? "hour" : `${hours.length} hours`}</h2>
<dl class="facts">
<dt>Newest reading</dt><dd>${hourLabel(latest.hourStart)}, AQI <strong>${latest.aqiRounded}</strong> ${swatch(latest.category)}${latest.category}</dd>
<dt>Dominant pollutant</dt><dd>${latest.dominantPollutant} (at the newest reading)</dd>
<dt>Highest forecast</dt><dd>AQI <strong>${peak.aqiRounded}</strong> ${swatch(peak.category)}${peak.category}, ${hourLabel(peak.hourStart)}</dd>
<dt>Model</dt><dd>${forecast.modelVersion}</dd>
</dl>
<figure>${forecastChart(hours, latest, summary)}
<figcaption>Dots: the forecast AQI of each hour; square: the newest reading; shaded: the 80% interval.
<ul class="legend">${AQI_CATEGORIES.map((category) => html`<li>${swatch(category.label)}${category.label} (${category.low}-${category.high})</li>`)}<li><span class="swatch interval" aria-hidden="true"></span>80% interval</li></ul></figcaption></figure>
${forecastTable(forecast)}
${model.notes.length > 0 ? html`<ul class="notes">${model.notes.map((note) => html`<li>${note}</li>`)}</ul>` : ""}
</section>`;
}

export function forecastPage(model: PageModel): Html {
  const title = model.forecast ? `AQI forecast for ${model.forecast.station}` : "AQI forecast";
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8" />
<meta name="viewport" content="width=device-width, initial-scale=1" />
<title>${title} · AirSense</title>
<link rel="icon" href="${FAVICON}" />
<link rel="stylesheet" href="${STYLESHEET_PATH}" />
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><span class="brand">AirSense AQI</span>
<nav aria-label="Service"><ul><li><a href="/docs">API reference</a></li><li><a href="/redoc">ReDoc</a></li></ul></nav></header>
<main id="main" tabindex="-1">
<h1>AQI forecast for a Delhi station</h1>
<p class="lead">The national (CPCB) AQI for the next 1 to 48 hours from a station's last hours of pollutant readings, with its 80% interval, computed by the same code as the prediction API (<code>POST /v1/predict/batch</code>, one request per hour ahead).</p>
${errorSummary(model)}
${model.forecast ? forecastSection(model, model.forecast) : ""}
${sampleForm(model)}
${forecastForm(model)}
</main>
<footer>Readings and forecasts are in Indian Standard Time, hour by hour, as CPCB publishes them.</footer>
</body>
</html>`;
}
