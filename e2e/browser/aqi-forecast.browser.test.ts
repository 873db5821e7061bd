/**
 * The AQI forecast page in headless Chromium against the AQI Worker under
 * `wrangler dev`: a sample day's chart holds what POST /v1/predict/batch
 * answers for the same readings, station and weather; a bad CSV comes back
 * with the API's own message beside the readings and the typed text kept; an
 * uploaded file is forecast too. On a 390 px phone nothing scrolls sideways,
 * axe finds no serious or critical violation, the page logs no error, every
 * request succeeds and none leaves the machine (no /favicon.ico either).
 *
 * With AQI_SCREENSHOTS=<dir> it also saves forecast.png (desktop) and
 * forecast-phone.png there.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../scripts/lib/stack.ts";
import { ROOT, startWrangler } from "../../scripts/lib/wrangler.ts";
import { seriousAxeFindings } from "./axe.ts";
import { type Browser, launchChromium, skipBrowserTests } from "./chromium.ts";

const HOUR_MS = 3_600_000;
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const screenshotDir = process.env.AQI_SCREENSHOTS
  ? path.resolve(process.env.AQI_SCREENSHOTS)
  : undefined;
const stations = (
  JSON.parse(readFileSync(path.join(ROOT, "models/aqi-history-1.0.0.json"), "utf8")) as {
    preprocessing: { stations: { name: string; latitude: number; longitude: number }[] };
  }
).preprocessing.stations;

interface Prediction {
  aqi_predicted: number;
  aqi_rounded: number;
  category: string;
  aqi_interval: { low: number; high: number };
  aqi_at_latest_reading: { aqi: number; category: string; dominant_pollutant: string };
}

/** The AQI Worker alone under `wrangler dev`, on a free port with throw-away state. */
async function startAqiWorker(timeoutMs = 120_000) {
  const stateDir = mkdtempSync(path.join(tmpdir(), "aqi-page-"));
  const port = await freePort();
  const child = startWrangler([
    "dev",
    ...["-c", "workers/aqi/wrangler.toml", "--port", String(port), "--ip", "127.0.0.1"],
    ...["--persist-to", stateDir, "--env-file", path.join(ROOT, "workers/aqi/.dev.vars.example")],
    ...["--inspector-port", String(await freePort()), "--show-interactive-dev-session=false"],
    ...["--log-level", "warn"],
  ]);
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    for (const signal of ["SIGTERM", "SIGKILL"] as const) {
      if (!child.pid || child.exitCode !== null) break;
      try {
        process.kill(-child.pid, signal);
      } catch {
        // already gone
      }
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
    }
    rmSync(stateDir, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (child.exitCode !== null) break;
    try {
      const health = await fetch(`${url}/v1/health`, { signal: AbortSignal.timeout(5000) });
      if (health.ok && ((await health.json()) as { model_loaded: boolean }).model_loaded) {
        return { url, stop };
      }
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  await stop();
  throw new Error(`the AQI worker did not start:\n${output}`);
}

/**
 * The batch a client of the API sends for these readings: its own reading of
 * the CPCB CSV (no quoting in CPCB files), one request per hour after the
 * newest reading, the station's coordinates, the weather as given.
 */
function batchFor(csv: string, station: string, hours: number, weather: Record<string, string>) {
  const [header, ...rows] = csv
    .trim()
    .split(/\r?\n/)
    .map((line) => line.split(","));
  const fields = {
    pm25: "PM2.5",
    pm10: "PM10",
    no2: "NO2",
    so2: "SO2",
    nh3: "NH3",
    co: "CO",
    o3: "Ozone",
  };
  const at = (name: string) => header!.findIndex((column) => column.split(" (")[0] === name);
  const readings = rows.map((row) => {
    const values: Record<string, number> = {};
    for (const [field, name] of Object.entries(fields)) {
      const cell = row[at(name)];
      if (cell) values[field] = Number(cell);
    }
    return { ms: Date.parse(`${row[0]!.replace(" ", "T")}Z`), values };
  });
  const newest = Math.max(...readings.map((reading) => reading.ms));
  const { latitude, longitude } = stations.find((candidate) => candidate.name === station)!;
  return Array.from({ length: hours }, (_, index) => {
    const target = new Date(newest + (index + 1) * HOUR_MS);
    const month = target.getUTCMonth() + 1;
    return {
      station,
      season: [12, 1, 2].includes(month)
        ? "Winter"
        : month <= 5
          ? "Summer"
          : month <= 9
            ? "Monsoon"
            : "Post-Monsoon",
      latitude,
      longitude,
      ...weather,
      day: target.getUTCDate(),
      month,
      hour: target.getUTCHours(),
      day_of_week: DAYS[target.getUTCDay()],
      is_weekend: [0, 6].includes(target.getUTCDay()) ? 1 : 0,
      recent_hours: readings
        .map(({ ms, values }) => ({ hours_before: (target.getTime() - ms) / HOUR_MS, ...values }))
        .filter((reading) => reading.hours_before <= 72 && Object.keys(reading).length > 1),
    };
  });
}

describe.skipIf(skipBrowserTests)("AQI forecast page in Chromium", () => {
  let worker: Awaited<ReturnType<typeof startAqiWorker>>;
  let chromium: Browser;
  let browser: BrowserContext;
  const outside: string[] = [];
  const problems: string[] = [];
  const axeFindings: string[] = [];
  const requested: string[] = [];

  async function checkScreen(page: Page, name: string, screenshot?: string) {
    axeFindings.push(...(await seriousAxeFindings(page, name)));
    if (screenshotDir && screenshot) {
      mkdirSync(screenshotDir, { recursive: true });
      // The first screen: the forecast comes first on the page.
      await page.screenshot({ path: path.join(screenshotDir, screenshot) });
    }
  }

  /** On a 390 x 844 screen nothing scrolls sideways; `then` runs there. */
  async function onPhone(page: Page, then: () => Promise<void>) {
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = await page.evaluate<number>(
      "document.documentElement.scrollWidth - window.innerWidth",
    );
    expect(overflow, page.url()).toBeLessThanOrEqual(0);
    await then();
    await page.setViewportSize({ width: 1280, height: 1000 });
  }

  async function apiBatch(requests: unknown[]) {
    const response = await fetch(`${worker.url}/v1/predict/batch`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ requests }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: test-side JSON bodies
    return { status: response.status, body: (await response.json()) as any };
  }

  async function weatherOf(page: Page): Promise<Record<string, string>> {
    const weather: Record<string, string> = {};
    for (const name of ["temperature", "humidity", "wind_speed", "visibility"]) {
      weather[name] = await page.locator(`#${name}`).inputValue();
    }
    return weather;
  }

  beforeAll(async () => {
    worker = await startAqiWorker();
    chromium = await launchChromium();
    browser = chromium.context;
    await browser.route("**/*", (route) => {
      const url = new URL(route.request().url());
      requested.push(url.pathname);
      if (url.hostname === "127.0.0.1" || url.hostname === "localhost") return route.continue();
      outside.push(url.href);
      return route.abort();
    });
  }, 180_000);

  afterAll(async () => {
    await chromium?.close();
    await worker?.stop();
  });

  it("forecasts a sample day as the API does, keeps bad input with the API's message, works on a phone", async () => {
    const page = await browser.newPage();
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`${page.url()}: ${message.text()}`);
    });
    page.on("pageerror", (error) => problems.push(`${page.url()}: ${error.message}`));
    page.on("requestfailed", (request) => problems.push(`failed: ${request.url()}`));
    page.on("response", (response) => {
      if (response.status() >= 400) {
        problems.push(`${response.status()}: ${response.url()}`);
      }
    });
    await page.setViewportSize({ width: 1280, height: 1000 });

    const first = await page.goto(`${worker.url}/`);
    expect(first?.headers()["content-security-policy"]).toContain("script-src 'none'");
    await expect(page.title()).resolves.toBe("AQI forecast · AirSense");
    await checkScreen(page, "empty form");

    // Keyboard: the skip link comes first and moves focus to the content.
    await page.keyboard.press("Tab");
    await expect(page.evaluate<string>("document.activeElement.textContent")).resolves.toBe(
      "Skip to content",
    );
    await page.keyboard.press("Enter");
    await expect(page.evaluate<string>("document.activeElement.id")).resolves.toBe("main");

    await sampleDay(page);
    await badCsv(page);
    await uploadedFile(page);

    expect(requested.filter((pathname) => pathname === "/favicon.ico")).toEqual([]);
    expect({ outside, problems, axeFindings }).toEqual({
      outside: [],
      problems: [],
      axeFindings: [],
    });
  }, 120_000);

  async function sampleDay(page: Page) {
    await page
      .getByLabel("Sample day", { exact: true })
      .selectOption({ label: "Chandni Chowk, 19 Jan 2022, from 08:00 (winter smog)" });
    await page.getByRole("button", { name: "Load sample and forecast" }).click();
    await page.locator("#forecast").waitFor();

    const points = await page.locator("svg.chart circle.point").evaluateAll((circles) =>
      circles.map((circle) => ({
        ...(circle as unknown as { dataset: Record<string, string> }).dataset,
      })),
    );
    expect(points).toHaveLength(24);
    const station = await page.locator("#station").inputValue();
    const csv = await page.locator("#readings").inputValue();
    const api = await apiBatch(batchFor(csv, station, 24, await weatherOf(page)));
    expect(api.status, JSON.stringify(api.body)).toBe(200);
    const predictions = api.body.predictions as Prediction[];
    expect(points.map((point) => Number(point.aqi))).toEqual(
      predictions.map((p) => p.aqi_predicted),
    );
    expect(points.map((point) => [Number(point.low), Number(point.high)])).toEqual(
      predictions.map((p) => [p.aqi_interval.low, p.aqi_interval.high]),
    );
    expect(points.map((point) => point.category)).toEqual(predictions.map((p) => p.category));
    expect(points[0]!.hour).toBe("2022-01-19T08:00");
    await expect(
      page.locator("svg.chart circle.point title").first().textContent(),
    ).resolves.toContain(`AQI ${predictions[0]!.aqi_rounded}, ${predictions[0]!.category}`);
    const latest = await page.locator("svg.chart rect.latest").evaluate((rect) => ({
      ...(rect as unknown as { dataset: Record<string, string> }).dataset,
    }));
    expect(Number(latest.aqi)).toBe(predictions[0]!.aqi_at_latest_reading.aqi);
    await expect(page.locator("#forecast dl").textContent()).resolves.toContain(
      predictions[0]!.aqi_at_latest_reading.dominant_pollutant,
    );
    const tableAqi = await page.locator("#forecast tbody tr td:nth-child(3)").allTextContents();
    expect(tableAqi.map(Number)).toEqual(predictions.map((p) => p.aqi_rounded));
    await checkScreen(page, "sample forecast", "forecast.png");

    await onPhone(page, () => checkScreen(page, "sample forecast, phone", "forecast-phone.png"));
  }

  async function badCsv(page: Page) {
    const csv = await page.locator("#readings").inputValue();
    const lines = csv.trim().split("\n");
    const last = lines[lines.length - 1]!.split(",");
    last[2] = "-5"; // PM2.5 of the newest hour
    const typed = [...lines.slice(0, -1), last.join(",")].join("\n");
    await page.locator("#readings").fill(typed);
    await page.getByRole("button", { name: "Forecast", exact: true }).click();
    await page.locator("#readings-error").waitFor();

    const api = await apiBatch(
      batchFor(typed, await page.locator("#station").inputValue(), 24, await weatherOf(page)),
    );
    expect(api.status).toBe(422);
    const message = (api.body.detail as { loc: unknown[]; msg: string }[]).find(
      (issue) => issue.loc[3] === "recent_hours",
    )!.msg;
    expect(message).toBe("Input should be greater than or equal to 0");
    await expect(page.locator("#readings-error").textContent()).resolves.toBe(
      `line ${lines.length}, pm25: ${message}`,
    );
    await expect(page.locator("#readings").getAttribute("aria-invalid")).resolves.toBe("true");
    await expect(page.locator("#readings").inputValue()).resolves.toBe(typed);
    await expect(page.locator("#temperature").inputValue()).resolves.toBe("11.95");
    expect(await page.locator("svg.chart").count()).toBe(0);
    await checkScreen(page, "bad CSV");
    await onPhone(page, async () => {});
  }

  async function uploadedFile(page: Page) {
    const file = readFileSync(
      path.join(ROOT, "workers/aqi/src/page/samples/lodhi-road-2022-07-21.csv"),
    );
    await page.locator("#readings").fill("");
    await page.getByLabel("Station", { exact: true }).selectOption("Lodhi Road, Delhi");
    for (const name of ["temperature", "humidity", "wind_speed"])
      await page.locator(`#${name}`).fill("");
    await page.locator("#temperature").fill("31");
    await page.getByLabel("Hours ahead", { exact: true }).selectOption("6");
    await page.getByLabel("Or upload a file (.csv or .json)").setInputFiles({
      name: "lodhi-road.csv",
      mimeType: "text/csv",
      buffer: file,
    });
    await page.getByRole("button", { name: "Forecast", exact: true }).click();
    await page.locator("#forecast").waitFor();
    expect(await page.locator("svg.chart circle.point").count()).toBe(6);
    await expect(page.locator("#readings").inputValue()).resolves.toBe(file.toString("utf8"));
    // The typed temperature stays; the blank humidity and wind take the CSV's newest values.
    await expect(page.locator("#temperature").inputValue()).resolves.toBe("31");
    await expect(page.locator("#humidity").inputValue()).resolves.toBe("89.1");
  }
});
