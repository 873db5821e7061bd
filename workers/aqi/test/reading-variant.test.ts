/**
 * The recent-reading variant and the input checks, through the Worker's own
 * fetch handler with the bundled models: validation of the new fields, both
 * variants answering, the service area, the season rule, and old requests
 * answering exactly as recorded before the variant existed.
 */
import { describe, expect, it } from "vitest";
import readingHoldout from "../../../models/aqi-reading-1.2.0.holdout.json";
import recorded from "./fixtures/recorded-1.0.0-responses.json";
import { postJson, validRequest, worker } from "./helpers.ts";

interface Prediction {
  aqi_predicted: number;
  aqi_rounded: number;
  category: string;
  aqi_interval: { low: number; high: number };
  model_version: string;
  inputs_used: {
    variant: string;
    recent_aqi: number | null;
    recent_aqi_age_hours: number | null;
    season: string;
    season_derived_from_month: boolean;
  };
  notes: string[];
  resolved_station: { name: string; matched_by: string; distance_km: number };
}

const WEATHER_ONLY = "aqi-1.0.0";
const READING = readingHoldout.modelVersion;

async function predict(body: unknown): Promise<{ status: number; body: Prediction }> {
  const response = await postJson(worker, "/v1/predict", body);
  return { status: response.status, body: (await response.json()) as Prediction };
}

async function detail(path: string, body: unknown): Promise<Record<string, unknown>[]> {
  const response = await postJson(worker, path, body);
  expect(response.status).toBe(422);
  return ((await response.json()) as { detail: Record<string, unknown>[] }).detail;
}

describe("recent_aqi and recent_aqi_age_hours: validation", () => {
  it("one without the other is a 422 value_error at the body (single) or the item (batch)", async () => {
    const alone = validRequest({ recent_aqi: 250 });
    expect(await detail("/v1/predict", alone)).toEqual([
      {
        type: "value_error",
        loc: ["body"],
        msg: expect.stringMatching(
          /^Value error, recent_aqi was sent without recent_aqi_age_hours/,
        ),
        input: alone,
        ctx: { error: "recent_aqi_age_hours is required when recent_aqi is given" },
      },
    ]);
    const ageAlone = validRequest({ recent_aqi_age_hours: 3 });
    const [entry] = await detail("/v1/predict/batch", { requests: [validRequest(), ageAlone] });
    expect(entry).toMatchObject({
      type: "value_error",
      loc: ["body", "requests", 1],
      input: ageAlone,
    });
    expect(entry?.msg).toMatch(/recent_aqi_age_hours was sent without recent_aqi/);
  });

  it.each([
    [
      "recent_aqi",
      1000.5,
      "less_than_equal",
      "Input should be less than or equal to 1000",
      { le: 1000 },
    ],
    [
      "recent_aqi",
      -1,
      "greater_than_equal",
      "Input should be greater than or equal to 0",
      { ge: 0 },
    ],
    [
      "recent_aqi_age_hours",
      0.25,
      "greater_than_equal",
      "Input should be greater than or equal to 0.5",
      { ge: 0.5 },
    ],
    [
      "recent_aqi_age_hours",
      72.5,
      "less_than_equal",
      "Input should be less than or equal to 72",
      { le: 72 },
    ],
  ])("%s = %j: %s", async (field, value, type, msg, ctx) => {
    const body = validRequest({ recent_aqi: 200, recent_aqi_age_hours: 3, [field]: value });
    expect(await detail("/v1/predict", body)).toEqual([
      { type, loc: ["body", field], msg, input: value, ctx },
    ]);
  });

  it("a non-number reading is a float error; null for both means no reading", async () => {
    const [entry] = await detail(
      "/v1/predict",
      validRequest({ recent_aqi: "high", recent_aqi_age_hours: 3 }),
    );
    expect(entry).toMatchObject({ type: "float_parsing", loc: ["body", "recent_aqi"] });
    const none = await predict(validRequest({ recent_aqi: null, recent_aqi_age_hours: null }));
    expect(none.status).toBe(200);
    expect(none.body.model_version).toBe(WEATHER_ONLY);
  });
});

describe("physical bounds and the service area", () => {
  it('the issue\'s example ("Nowhere", lat 1e308, lon -1e308, temperature 1e308) is refused', async () => {
    const body = validRequest({
      station: "Nowhere",
      latitude: 1e308,
      longitude: -1e308,
      temperature: 1e308,
    });
    const entries = await detail("/v1/predict", body);
    expect(entries.map((entry) => [entry.loc, entry.type])).toEqual([
      [["body", "latitude"], "less_than_equal"],
      [["body", "longitude"], "greater_than_equal"],
      [["body", "temperature"], "less_than_equal"],
    ]);
  });

  it.each([
    ["temperature", 61, { le: 60 }],
    ["temperature", -91, { ge: -90 }],
    ["wind_speed", 351, { le: 350 }],
    ["visibility", 101, { le: 100 }],
    ["latitude", 91, { le: 90 }],
    ["longitude", -181, { ge: -180 }],
  ])("%s = %j is outside its physical bound", async (field, value, ctx) => {
    const [entry] = await detail("/v1/predict", validRequest({ [field]: value }));
    expect(entry).toMatchObject({ loc: ["body", field], input: value, ctx });
  });

  it("an in-range station outside the service area (Mumbai) is a 422 saying the service covers Delhi", async () => {
    const body = validRequest({ station: "Bandra, Mumbai", latitude: 19.0596, longitude: 72.8295 });
    const [entry] = await detail("/v1/predict", body);
    expect(entry).toMatchObject({
      type: "value_error",
      loc: ["body"],
      input: { latitude: 19.0596, longitude: 72.8295 },
    });
    expect(entry?.msg).toMatch(/the service covers Delhi/);
    expect(entry?.msg).toMatch(/11\d\d km from the nearest station/);
  });

  it("a training station's name with coordinates far away is refused too; the batch names the item", async () => {
    const far = validRequest({ latitude: 28.5918, longitude: 80.5 });
    const [entry] = await detail("/v1/predict/batch", { requests: [validRequest(), far] });
    expect(entry).toMatchObject({ type: "value_error", loc: ["body", "requests", 1] });
  });

  it("an unseen Delhi station inside the area is answered (nearest training station)", async () => {
    const { status, body } = await predict(
      validRequest({ station: "Anand Vihar", latitude: 28.6508, longitude: 77.3152 }),
    );
    expect(status).toBe(200);
    expect(body.resolved_station.matched_by).toBe("nearest");
  });
});

describe("season against month: the month's season is used, and the response says so", () => {
  it("a mismatched season is replaced and noted; the answer equals the consistent request's", async () => {
    const mismatched = await predict(validRequest({ season: "Monsoon", month: 1 }));
    const consistent = await predict(validRequest({ season: "Winter", month: 1 }));
    expect(mismatched.status).toBe(200);
    expect(mismatched.body.inputs_used.season).toBe("Winter");
    expect(mismatched.body.inputs_used.season_derived_from_month).toBe(true);
    expect(mismatched.body.notes).toEqual([
      expect.stringMatching(/season 'Monsoon' does not match month 1; scored as 'Winter'/),
    ]);
    expect(mismatched.body.aqi_predicted).toBe(consistent.body.aqi_predicted);
    expect(consistent.body.notes).toEqual([]);
    expect(consistent.body.inputs_used.season_derived_from_month).toBe(false);
  });
});

describe("both variants through the Worker", () => {
  it("without a reading the weather-only model answers; with one the recent-reading model", async () => {
    const without = await predict(validRequest());
    expect(without.status).toBe(200);
    expect(without.body.model_version).toBe(WEATHER_ONLY);
    expect(without.body.inputs_used).toEqual({
      variant: "weather-only",
      recent_aqi: null,
      recent_aqi_age_hours: null,
      season: "Winter",
      season_derived_from_month: false,
    });
    const withReading = await predict(validRequest({ recent_aqi: 320, recent_aqi_age_hours: 2 }));
    expect(withReading.status).toBe(200);
    expect(withReading.body.model_version).toBe(READING);
    expect(withReading.body.inputs_used).toMatchObject({
      variant: "recent-reading",
      recent_aqi: 320,
      recent_aqi_age_hours: 2,
    });
    const { aqi_predicted, aqi_interval } = withReading.body;
    // Two hours after a reading of 320 the 24-hour-mean AQI has barely moved.
    expect(Math.abs(aqi_predicted - 320)).toBeLessThan(25);
    expect(aqi_interval.low).toBeLessThanOrEqual(aqi_predicted);
    expect(aqi_interval.high).toBeGreaterThanOrEqual(aqi_predicted);
    expect(aqi_interval.low).toBeGreaterThan(250);
    expect(aqi_interval.high).toBeLessThan(400);
  });

  it("the interval widens with the age of the reading, and follows the reading", async () => {
    const widths: number[] = [];
    for (const age of [1, 6, 24, 48]) {
      const { body } = await predict(validRequest({ recent_aqi: 180, recent_aqi_age_hours: age }));
      widths.push(body.aqi_interval.high - body.aqi_interval.low);
    }
    for (let index = 1; index < widths.length; index += 1) {
      expect(widths[index]!).toBeGreaterThan(widths[index - 1]!);
    }
    const low = await predict(validRequest({ recent_aqi: 60, recent_aqi_age_hours: 3 }));
    const high = await predict(validRequest({ recent_aqi: 450, recent_aqi_age_hours: 3 }));
    expect(low.body.aqi_predicted).toBeLessThan(100);
    expect(high.body.aqi_predicted).toBeGreaterThan(380);
  });

  it("a mixed batch keeps input order and names each row's model", async () => {
    const requests = [
      validRequest(),
      validRequest({ recent_aqi: 410, recent_aqi_age_hours: 1 }),
      validRequest({ hour: 20 }),
      validRequest({ recent_aqi: 90, recent_aqi_age_hours: 12 }),
    ];
    const response = await postJson(worker, "/v1/predict/batch", { requests });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { count: number; predictions: Prediction[] };
    expect(body.count).toBe(4);
    expect(body.predictions.map((p) => p.model_version)).toEqual([
      WEATHER_ONLY,
      READING,
      WEATHER_ONLY,
      READING,
    ]);
    expect(Math.abs(body.predictions[1]!.aqi_predicted - 410)).toBeLessThan(20);
    const single = await predict(requests[2]);
    expect(body.predictions[2]!.aqi_predicted).toBe(single.body.aqi_predicted);
  });

  it("model info names both models and the service radius", async () => {
    const response = await worker("http://aqi/v1/model/info");
    expect(await response.json()).toMatchObject({
      model_version: WEATHER_ONLY,
      reading_model_version: READING,
      service_radius_km: 50,
    });
  });
});

describe("old requests get the same answers as before the reading variant", () => {
  const cases = recorded.responses as {
    request: Record<string, unknown>;
    status: number;
    response: Record<string, unknown>;
  }[];

  it(`all ${cases.length} recorded requests answer identically (new fields aside)`, async () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
    for (const { request, status, response } of cases) {
      const answer = await postJson(worker, "/v1/predict", request);
      expect(answer.status).toBe(status);
      const body = (await answer.json()) as Record<string, unknown>;
      const { prediction_timestamp, inputs_used, notes, ...previousFields } = body;
      expect(previousFields).toEqual(response);
      expect(inputs_used).toMatchObject({ variant: "weather-only" });
      expect(notes).toEqual([]);
      expect(typeof prediction_timestamp).toBe("string");
    }
  });
});
