/**
 * The recent-hours variant through the Worker's own fetch handler with the
 * bundled models: every validation rule of `recent_hours` (in FastAPI's 422
 * shape), the recent-hours model answering with the AQI at the newest reading,
 * a 100-row batch scored in one model run, and requests without the field
 * answering as before.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import historyHoldout from "../../../models/aqi-history-1.0.0.holdout.json";
import { createApp } from "../src/app.ts";
import { subIndex } from "../src/domain/aqi-calculator.ts";
import { ModelHost } from "../src/inference/model-host.ts";
import { HISTORY_MODEL_NOT_LOADED } from "../src/inference/predictions.ts";
import {
  shippedHistoryModel,
  shippedModel,
  shippedReadingModel,
} from "../src/inference/shipped-model.ts";
import { type Fetcher, postJson, validRequest, worker } from "./helpers.ts";

interface Prediction {
  aqi_predicted: number;
  aqi_interval: { low: number; high: number };
  model_version: string;
  inputs_used: Record<string, unknown>;
  aqi_at_latest_reading?: Record<string, unknown>;
}

const HISTORY = historyHoldout.modelVersion;

/** Hourly readings hours_before from..to, the same concentrations every hour unless `at` says otherwise. */
function hours(
  from: number,
  to: number,
  at: (hoursBefore: number) => Record<string, unknown> = () => ({
    pm25: 100,
    pm10: 200,
    no2: 40,
    so2: 10,
    co: 1.2,
    o3: 30,
  }),
): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let hoursBefore = from; hoursBefore <= to; hoursBefore += 1) {
    out.push({ hours_before: hoursBefore, ...at(hoursBefore) });
  }
  return out;
}

async function predict(body: unknown, fetcher: Fetcher = worker) {
  const response = await postJson(fetcher, "/v1/predict", body);
  return { status: response.status, body: (await response.json()) as Prediction };
}

async function detail(body: unknown, path = "/v1/predict"): Promise<Record<string, unknown>[]> {
  const response = await postJson(worker, path, body);
  expect(response.status).toBe(422);
  return ((await response.json()) as { detail: Record<string, unknown>[] }).detail;
}

describe("recent_hours: validation (FastAPI 422 shape)", () => {
  it.each([
    ["pm25", -1, "greater_than_equal", { ge: 0 }],
    ["pm10", 3000.5, "less_than_equal", { le: 3000 }],
    ["co", 101, "less_than_equal", { le: 100 }],
    ["o3", -0.01, "greater_than_equal", { ge: 0 }],
    ["no2", "much", "float_parsing", undefined],
  ])("a concentration %s = %j is refused at its reading", async (field, value, type, ctx) => {
    const readings = hours(1, 30);
    readings[3] = { ...readings[3], [field]: value };
    const [entry, ...rest] = await detail(validRequest({ recent_hours: readings }));
    expect(rest).toEqual([]);
    expect(entry).toMatchObject({ type, loc: ["body", "recent_hours", 3, field], input: value });
    if (ctx) expect(entry?.ctx).toEqual(ctx);
  });

  it.each([
    [0, "greater_than_equal", "Input should be greater than or equal to 1"],
    [73, "less_than_equal", "Input should be less than or equal to 72"],
    [2.5, "int_from_float", "Input should be a valid integer, got a number with a fractional part"],
  ])("hours_before %j is refused (%s)", async (value, type, msg) => {
    const readings = hours(1, 30);
    readings[0] = { ...readings[0], hours_before: value };
    const [entry] = await detail(validRequest({ recent_hours: readings }));
    expect(entry).toEqual({
      type,
      loc: ["body", "recent_hours", 0, "hours_before"],
      msg,
      input: value,
      ...(type === "int_from_float"
        ? {}
        : { ctx: type === "less_than_equal" ? { le: 72 } : { ge: 1 } }),
    });
  });

  it("a reading without hours_before, a reading that is not an object, and a list that is not a list", async () => {
    const missing = await detail(validRequest({ recent_hours: [{ pm25: 50 }, ...hours(1, 30)] }));
    expect(missing[0]).toMatchObject({
      type: "missing",
      loc: ["body", "recent_hours", 0, "hours_before"],
      msg: "Field required",
    });
    const notObject = await detail(validRequest({ recent_hours: [42, ...hours(1, 30)] }));
    expect(notObject[0]).toMatchObject({
      type: "model_attributes_type",
      loc: ["body", "recent_hours", 0],
    });
    const notList = await detail(validRequest({ recent_hours: { hours_before: 1, pm25: 50 } }));
    expect(notList).toEqual([
      {
        type: "list_type",
        loc: ["body", "recent_hours"],
        msg: "Input should be a valid list",
        input: { hours_before: 1, pm25: 50 },
      },
    ]);
  });

  it("an empty list and more than 72 readings are refused by length", async () => {
    const [empty] = await detail(validRequest({ recent_hours: [] }));
    expect(empty).toMatchObject({
      type: "too_short",
      loc: ["body", "recent_hours"],
      msg: "List should have at least 1 item after validation, not 0",
    });
    const [long] = await detail(validRequest({ recent_hours: hours(1, 73) }));
    expect(long).toMatchObject({
      type: "too_long",
      loc: ["body", "recent_hours"],
      msg: "List should have at most 72 items after validation, not 73",
    });
  });

  it("a reading with no concentration is refused at its position", async () => {
    const readings = [...hours(1, 30), { hours_before: 31, pm25: null }];
    expect(await detail(validRequest({ recent_hours: readings }))).toEqual([
      {
        type: "value_error",
        loc: ["body", "recent_hours", 30],
        msg: "Value error, the reading 31 hours before has no concentration: send at least one of pm25, pm10, no2, so2, nh3, co, o3",
        input: { hours_before: 31, pm25: null },
        ctx: { error: "a reading needs at least one concentration" },
      },
    ]);
  });

  it("hours_before must be unique", async () => {
    const readings = [...hours(1, 30), { hours_before: 7, pm25: 80 }, { hours_before: 2, no2: 5 }];
    expect(await detail(validRequest({ recent_hours: readings }))).toEqual([
      {
        type: "value_error",
        loc: ["body", "recent_hours"],
        msg: "Value error, hours_before must be unique within recent_hours: 2, 7 appear more than once",
        input: [2, 7],
        ctx: { error: "repeated hours_before" },
      },
    ]);
  });

  it("the newest reading must be 1 to 48 hours before the predicted hour", async () => {
    const [entry] = await detail(validRequest({ recent_hours: hours(49, 72) }));
    expect(entry).toMatchObject({
      type: "value_error",
      loc: ["body", "recent_hours"],
      msg: "Value error, the newest reading is 49 hours before the predicted hour; it must be 1 to 48 hours before (forecasts reach at most 48 hours ahead)",
      input: 49,
    });
    const atLimit = await predict(validRequest({ recent_hours: hours(48, 72) }));
    expect(atLimit.status).toBe(200);
  });

  it("recent_hours together with recent_aqi is refused", async () => {
    const body = validRequest({
      recent_aqi: 250,
      recent_aqi_age_hours: 2,
      recent_hours: hours(1, 30),
    });
    expect(await detail(body)).toEqual([
      {
        type: "value_error",
        loc: ["body"],
        msg: "Value error, send either recent_hours (the station's hourly readings) or recent_aqi with recent_aqi_age_hours (its latest AQI), not both",
        input: { recent_aqi: 250, recent_aqi_age_hours: 2, recent_hours: "30 readings" },
        ctx: { error: "recent_hours and recent_aqi are exclusive" },
      },
    ]);
  });

  it("too few PM2.5 and PM10 hours for the CPCB AQI at the newest reading: a 422 that says so", async () => {
    // PM2.5 every other hour: 12 of the 24 hours ending at the newest reading; no PM10.
    const readings = hours(2, 40, (k) => ({
      ...(k % 2 === 1 ? { pm25: 90 } : {}),
      no2: 30,
      co: 1,
    }));
    const [entry] = await detail(validRequest({ recent_hours: readings }));
    expect(entry).toEqual({
      type: "value_error",
      loc: ["body", "recent_hours"],
      msg: "Value error, too few readings to compute the CPCB AQI at the newest reading (2 hours before the predicted hour): its 24-hour averages need at least 16 of the 24 hours of PM2.5 or PM10; hours 2-25 before the predicted hour hold 12 of PM2.5 and 0 of PM10",
      input: { newest_hours_before: 2, pm25_hours: 12, pm10_hours: 0 },
      ctx: { error: "too few readings for a CPCB AQI at the newest reading" },
    });
    const fifteen = hours(1, 30, (k) => (k <= 15 ? { pm25: 90, no2: 30, co: 1 } : { no2: 30 }));
    const [short] = await detail(validRequest({ recent_hours: fifteen }));
    expect(short?.msg).toMatch(
      /need at least 16 of the 24 hours of PM2\.5 or PM10; hours 1-24 before the predicted hour hold 15 of PM2\.5 and 0 of PM10$/,
    );
  });

  it("fewer than three pollutants with enough data: a 422 naming those that have it", async () => {
    const [entry] = await detail(
      validRequest({ recent_hours: hours(1, 30, () => ({ pm10: 180 })) }),
    );
    expect(entry?.msg).toMatch(/it needs at least 3 pollutants .* only PM10 has enough$/);
  });

  it("in a batch each failing item is named by its position", async () => {
    const entries = await detail(
      {
        requests: [
          validRequest({ recent_hours: hours(1, 30) }),
          validRequest({ recent_hours: hours(49, 72) }),
          validRequest({ recent_hours: [{ hours_before: 1, pm25: -5 }] }),
        ],
      },
      "/v1/predict/batch",
    );
    expect(entries.map((entry) => entry.loc)).toEqual([
      ["body", "requests", 2, "recent_hours", 0, "pm25"],
    ]);
    const crossField = await detail(
      {
        requests: [
          validRequest({ recent_hours: hours(1, 30) }),
          validRequest({ recent_hours: hours(49, 72) }),
        ],
      },
      "/v1/predict/batch",
    );
    expect(crossField.map((entry) => entry.loc)).toEqual([["body", "requests", 1, "recent_hours"]]);
  });

  it("null or an absent field is the weather-only request", async () => {
    const none = await predict(validRequest({ recent_hours: null }));
    expect(none.status).toBe(200);
    expect(none.body.model_version).toBe("aqi-1.0.0");
    expect(none.body).not.toHaveProperty("aqi_at_latest_reading");
    expect(none.body.inputs_used).not.toHaveProperty("recent_hours");
  });
});

describe("the recent-hours model through the Worker", () => {
  it("answers with the AQI at the newest reading and names the model and what it was given", async () => {
    const { status, body } = await predict(validRequest({ recent_hours: hours(1, 30) }));
    expect(status).toBe(200);
    expect(body.model_version).toBe(HISTORY);
    const latest = subIndex("PM2.5", 100);
    expect(body.aqi_at_latest_reading).toEqual({
      aqi: Math.round(latest * 100) / 100,
      aqi_rounded: 233,
      category: "Poor",
      dominant_pollutant: "PM2.5",
      hours_before: 1,
    });
    expect(body.inputs_used).toEqual({
      variant: "recent-hours",
      recent_aqi: null,
      recent_aqi_age_hours: null,
      season: "Winter",
      season_derived_from_month: false,
      recent_hours: { readings: 30, horizon_hours: 1, window_arithmetic_aqi: 233.33 },
    });
    // An hour after 30 flat hours the 24-hour mean has not moved.
    expect(Math.abs(body.aqi_predicted - latest)).toBeLessThan(15);
    expect(body.aqi_interval.low).toBeLessThanOrEqual(body.aqi_predicted);
    expect(body.aqi_interval.high).toBeGreaterThanOrEqual(body.aqi_predicted);
  });

  it("follows the readings: a sharp rise over the last hours raises the forecast above the AQI at the newest reading", async () => {
    const rising = hours(3, 40, (k) => ({ pm25: k <= 8 ? 300 : 60, pm10: 150, no2: 40 }));
    const { body } = await predict(validRequest({ recent_hours: rising }));
    // AQI at the newest reading 300 (PM2.5 mean 120); the predicted hour's window holds 9 hours at 300 ug/m3
    // instead of 6: the window arithmetic says 323.
    const latest = body.aqi_at_latest_reading?.aqi as number;
    expect(latest).toBe(300);
    expect(body.inputs_used.recent_hours).toMatchObject({ window_arithmetic_aqi: 323.08 });
    expect(body.aqi_predicted).toBeGreaterThan(latest + 10);
    expect(Math.abs(body.aqi_predicted - 323.08)).toBeLessThan(20);
  });

  it("the interval widens with the horizon", async () => {
    const widths: number[] = [];
    for (const newest of [1, 6, 24, 48]) {
      const { body } = await predict(validRequest({ recent_hours: hours(newest, 72) }));
      expect(body.inputs_used.recent_hours).toMatchObject({ horizon_hours: newest });
      widths.push(body.aqi_interval.high - body.aqi_interval.low);
    }
    for (let index = 1; index < widths.length; index += 1) {
      expect(widths[index]!).toBeGreaterThan(widths[index - 1]!);
    }
  });

  it("a mixed batch of all three variants keeps input order", async () => {
    const requests = [
      validRequest({ recent_hours: hours(2, 40) }),
      validRequest(),
      validRequest({ recent_aqi: 300, recent_aqi_age_hours: 3 }),
      validRequest({ recent_hours: hours(12, 60), hour: 20 }),
    ];
    const response = await postJson(worker, "/v1/predict/batch", { requests });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { predictions: Prediction[] };
    expect(body.predictions.map((p) => p.model_version)).toEqual([
      HISTORY,
      "aqi-1.0.0",
      "aqi-reading-1.2.0",
      HISTORY,
    ]);
    const single = await predict(requests[3]);
    expect(body.predictions[3]!.aqi_predicted).toBe(single.body.aqi_predicted);
  });

  it("a batch of 100 recent-hours requests is one model run", async () => {
    const history = new ModelHost(shippedHistoryModel);
    const state = await history.state();
    if (state.status !== "ready") throw new Error("history model not loaded");
    const run = vi.spyOn(state.model, "run");
    const app = createApp({
      model: new ModelHost(shippedModel),
      readingModel: new ModelHost(shippedReadingModel),
      historyModel: history,
    });
    const fetcher: Fetcher = async (url, init) => app.fetch(new Request(url, init), env);
    const requests = Array.from({ length: 100 }, (_, index) =>
      validRequest({ recent_hours: hours(1 + (index % 48), 72), hour: index % 24 }),
    );
    const response = await postJson(fetcher, "/v1/predict/batch", { requests });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { count: number }).count).toBe(100);
    expect(run).toHaveBeenCalledTimes(1);
    expect(run.mock.calls[0]![1]).toBe(100);
  });

  it("without a recent-hours model such requests get a 503; others are still answered", async () => {
    const app = createApp({ model: new ModelHost(shippedModel) });
    const fetcher: Fetcher = async (url, init) => app.fetch(new Request(url, init), env);
    const response = await postJson(
      fetcher,
      "/v1/predict",
      validRequest({ recent_hours: hours(1, 30) }),
    );
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ detail: HISTORY_MODEL_NOT_LOADED });
    expect((await predict(validRequest(), fetcher)).status).toBe(200);
  });

  it("model info names the recent-hours model", async () => {
    const response = await worker("http://aqi/v1/model/info");
    expect(await response.json()).toMatchObject({ history_model_version: HISTORY });
  });
});
