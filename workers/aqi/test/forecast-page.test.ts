/**
 * The forecast page at / through the Worker's own fetch handler with the
 * bundled models: a sample day's chart holds the batch API's answer for the
 * same input, bad input comes back with the API's message beside its field and
 * the typed text kept, and the page sends its security headers.
 */
import { describe, expect, it } from "vitest";
import modelCard from "../../../models/aqi-history-1.0.0.json";
import { SAMPLE_DAYS } from "../src/page/samples.ts";
import { BASE, freshIp, postJson, worker } from "./helpers.ts";

const HOUR_MS = 3_600_000;

async function page(path: string, init: RequestInit = {}) {
  const response = await worker(`${BASE}${path}`, {
    ...init,
    headers: { "cf-connecting-ip": freshIp(), ...(init.headers ?? {}) },
  });
  return { response, text: await response.text() };
}

function attributesOf(tag: string): Record<string, string> {
  return Object.fromEntries(
    [...tag.matchAll(/([a-z-]+)="([^"]*)"/g)].map((match) => [match[1]!, match[2]!]),
  );
}

/** The chart's dots, as their data attributes. */
function chartPoints(text: string) {
  return [...text.matchAll(/<circle class="point"[^>]*>/g)].map((match) => attributesOf(match[0]));
}

/** The sample as a client of the API would send it: its own reading of the CSV, one request per hour. */
function batchForSample(
  csv: string,
  station: string,
  hours: number,
  weather: Record<string, number>,
) {
  const [header, ...rows] = csv
    .trim()
    .split("\n")
    .map((line) => line.split(","));
  const column = (prefix: string) => header!.findIndex((name) => name.startsWith(prefix));
  const fields = {
    pm25: "PM2.5",
    pm10: "PM10",
    no2: "NO2",
    so2: "SO2",
    nh3: "NH3",
    co: "CO",
    o3: "Ozone",
  };
  const readings = rows.map((row) => {
    const reading: Record<string, number> = { ms: Date.parse(`${row[0]!.replace(" ", "T")}Z`) };
    for (const [field, name] of Object.entries(fields)) {
      const cell = row[column(name)];
      if (cell) reading[field] = Number(cell);
    }
    return reading;
  });
  const newest = Math.max(...readings.map((reading) => reading.ms!));
  const { latitude, longitude } = modelCard.preprocessing.stations.find((s) => s.name === station)!;
  const days = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
  return Array.from({ length: hours }, (_, index) => {
    const at = new Date(newest + (index + 1) * HOUR_MS);
    const recent = readings
      .map(({ ms, ...values }) => ({ hours_before: (at.getTime() - ms!) / HOUR_MS, ...values }))
      .filter((reading) => reading.hours_before <= 72 && Object.keys(reading).length > 1);
    return {
      station,
      season: "Winter",
      latitude,
      longitude,
      ...weather,
      day: at.getUTCDate(),
      month: at.getUTCMonth() + 1,
      hour: at.getUTCHours(),
      day_of_week: days[at.getUTCDay()],
      is_weekend: [0, 6].includes(at.getUTCDay()) ? 1 : 0,
      recent_hours: recent,
    };
  });
}

describe("forecast page", () => {
  it("GET / is a page without script, with its policy, the stations and the samples", async () => {
    const { response, text } = await page("/");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    expect(response.headers.get("content-security-policy")).toContain("script-src 'none'");
    expect(text).not.toMatch(/<script/i);
    expect(text).toContain('<link rel="icon" href="data:image/svg+xml,');
    for (const station of modelCard.preprocessing.stations) expect(text).toContain(station.name);
    for (const sample of SAMPLE_DAYS) expect(text).toContain(`/samples/${sample.id}.csv`);
    const css = await page("/forecast.css");
    expect(css.response.headers.get("content-type")).toMatch(/^text\/css/);
  });

  it("a sample day's chart and table hold the batch API's answer for the same input", async () => {
    const sample = SAMPLE_DAYS[0]!;
    const { response, text } = await page(`/?sample=${sample.id}&hours=6`);
    expect(response.status).toBe(200);
    const points = chartPoints(text);
    expect(points).toHaveLength(6);
    // Chandni Chowk's newest hour: AT 11.95 C, RH 81.21 %, WS 0.59 m/s; visibility the form's default.
    const requests = batchForSample(sample.csv, sample.station, 6, {
      temperature: 11.95,
      humidity: 81.21,
      wind_speed: 2.12,
      visibility: 4,
    });
    const api = await postJson(worker, "/v1/predict/batch", { requests });
    expect(api.status).toBe(200);
    const { predictions } = (await api.json()) as {
      predictions: {
        aqi_predicted: number;
        aqi_rounded: number;
        category: string;
        aqi_interval: { low: number; high: number };
        aqi_at_latest_reading: { dominant_pollutant: string };
      }[];
    };
    expect(points.map((point) => Number(point["data-aqi"]))).toEqual(
      predictions.map((prediction) => prediction.aqi_predicted),
    );
    expect(points.map((point) => [Number(point["data-low"]), Number(point["data-high"])])).toEqual(
      predictions.map((prediction) => [prediction.aqi_interval.low, prediction.aqi_interval.high]),
    );
    expect(points.map((point) => point["data-category"])).toEqual(
      predictions.map((prediction) => prediction.category),
    );
    expect(points[0]!["data-hour"]).toBe("2022-01-19T08:00");
    expect(text).toContain(predictions[0]!.aqi_at_latest_reading.dominant_pollutant);
    expect(text).toContain(`<td class="num">${predictions[5]!.aqi_rounded}</td>`);
  });

  it("a bad reading gets the API's message beside the readings, with the typed CSV kept", async () => {
    const sample = SAMPLE_DAYS[0]!;
    const bad = sample.csv.replace(/^(2022-01-19 07:00:00,[^,]*,)[^,]*/m, "$1-5");
    const form = new FormData();
    form.set("station", sample.station);
    form.set("readings", bad);
    form.set("temperature", "12");
    form.set("humidity", "150");
    form.set("wind_speed", "3");
    form.set("visibility", "4");
    form.set("hours", "3");
    const { response, text } = await page("/", { method: "POST", body: form });
    expect(response.status).toBe(200);
    expect(text).toContain(
      '<ul class="field-error" id="readings-error"><li>line 73, pm25: Input should be greater than or equal to 0</li></ul>',
    );
    expect(text).toContain(
      '<ul class="field-error" id="humidity-error"><li>Input should be less than or equal to 100</li></ul>',
    );
    expect(text).toContain('value="150"');
    expect(text).toContain("2022-01-19 07:00:00,2022-01-19 08:00:00,-5,");
    expect(text).not.toContain('class="point"');
  });

  it("an uploaded JSON file is read, and its readings need the newest hour", async () => {
    const form = new FormData();
    form.set("station", "Lodhi Road, Delhi");
    form.set("readings", "");
    form.set("readings_file", new File(['[{"hours_before": 3, "pm25": 80}]'], "readings.json"));
    form.set("hours", "2");
    const { text } = await page("/", { method: "POST", body: form });
    expect(text).toContain(
      '<ul class="field-error" id="newest-error"><li>JSON readings carry no clock time: give the hour the newest reading starts</li></ul>',
    );
    expect(text).toContain("[{&quot;hours_before&quot;: 3, &quot;pm25&quot;: 80}]");
  });

  it("serves the samples as CSV files", async () => {
    const { response, text } = await page(`/samples/${SAMPLE_DAYS[2]!.id}.csv`);
    expect(response.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(text).toBe(SAMPLE_DAYS[2]!.csv);
    expect((await page("/samples/nothing.csv")).response.status).toBe(404);
  });
});
