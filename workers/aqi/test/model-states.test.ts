/**
 * The service with other models than the bundled one: none (degraded), bytes
 * onnxruntime cannot load, a graph that fails inside `session.run`, and a
 * small graph that echoes the temperature column, which lets the tests choose
 * the raw prediction exactly and check rounding, categories and ordering
 * through the HTTP API.
 */
import { describe, expect, it } from "vitest";
import { FEATURE_COUNT, FEATURE_NAMES } from "../src/domain/features.ts";
import { artifactFromCard } from "../src/inference/model-artifact.ts";
import { echoColumnModel, wrongInputWidthModel } from "./fixtures/onnx-writer.ts";
import {
  BASE,
  type Fetcher,
  postJson,
  TEST_SPEC,
  testArtifact,
  validRequest,
  workerWithModel,
} from "./helpers.ts";

const NOT_LOADED = { detail: "Model is not loaded. Run 'make train' and restart the API." };
const TEMPERATURE = FEATURE_NAMES.indexOf("temperature_c");
const VISIBILITY = FEATURE_NAMES.indexOf("visibility_km");

async function health(fetcher: Fetcher) {
  const response = await fetcher(`${BASE}/v1/health`);
  expect(response.status).toBe(200);
  return (await response.json()) as { status: string; model_loaded: boolean; timestamp: string };
}

async function expectDegraded(fetcher: Fetcher) {
  const body = await health(fetcher);
  expect(body).toEqual({ status: "degraded", model_loaded: false, timestamp: expect.any(String) });
  const info = await fetcher(`${BASE}/v1/model/info`);
  expect(info.status).toBe(503);
  expect(await info.json()).toEqual(NOT_LOADED);
  const single = await postJson(fetcher, "/v1/predict", validRequest());
  expect(single.status).toBe(503);
  expect(single.headers.get("X-Request-ID")).toMatch(/^[0-9a-f]{8}$/);
  expect(await single.json()).toEqual(NOT_LOADED);
  const batch = await postJson(fetcher, "/v1/predict/batch", { requests: [validRequest()] });
  expect(batch.status).toBe(503);
  expect(await batch.json()).toEqual(NOT_LOADED);
}

describe("degraded mode", () => {
  it("no model: health 200 degraded, model info and predictions 503", async () => {
    await expectDegraded(workerWithModel(() => null));
  });

  it("validation still answers 422 before the missing model is noticed", async () => {
    const response = await postJson(
      workerWithModel(() => null),
      "/v1/predict",
      validRequest({ month: 13 }),
    );
    expect(response.status).toBe(422);
  });

  it("bytes onnxruntime cannot parse: the model is not loaded, not a crash", async () => {
    const garbage = new TextEncoder().encode("this is not an ONNX protobuf at all");
    await expectDegraded(workerWithModel(() => testArtifact(garbage)));
  });

  it("a model card written for another feature layout is refused", async () => {
    const source = () =>
      artifactFromCard(
        {
          modelVersion: "aqi-old",
          preprocessing: { ...TEST_SPEC, featureLayoutVersion: TEST_SPEC.featureLayoutVersion + 1 },
        },
        echoColumnModel(FEATURE_COUNT, TEMPERATURE, 10),
        { modelPath: "models/aqi-old.onnx", cardPath: "models/aqi-old.json" },
      );
    await expectDegraded(workerWithModel(source));
  });
});

describe("inference failure: 500 with the contract's body", () => {
  it("a model whose input width differs fails inside session.run", async () => {
    const fetcher = workerWithModel(() => testArtifact(wrongInputWidthModel(3)));
    expect((await health(fetcher)).model_loaded).toBe(true);
    const single = await postJson(fetcher, "/v1/predict", validRequest());
    expect(single.status).toBe(500);
    expect(await single.json()).toEqual({ detail: "Inference failed." });
    const batch = await postJson(fetcher, "/v1/predict/batch", {
      requests: [validRequest(), validRequest()],
    });
    expect(batch.status).toBe(500);
    expect(await batch.json()).toEqual({ detail: "Batch inference failed." });
  });

  it("a model that outputs NaN is a failure, never a NaN in a response", async () => {
    // Visibility is encoded as missing (NaN), so echoing it yields NaN predictions.
    const fetcher = workerWithModel(() =>
      testArtifact(echoColumnModel(FEATURE_COUNT, VISIBILITY, 10)),
    );
    const single = await postJson(fetcher, "/v1/predict", validRequest());
    expect(single.status).toBe(500);
    expect(await single.json()).toEqual({ detail: "Inference failed." });
  });
});

describe("predictions through the API (temperature-echo model)", () => {
  // Temperature is bounded (-90..60 C): the model echoes it times 32 (exact in float32).
  const SCALE = 32;
  const echo = workerWithModel(() =>
    testArtifact(echoColumnModel(FEATURE_COUNT, TEMPERATURE, 10, SCALE), "aqi-echo"),
  );

  async function predictRaw(raw: number) {
    const response = await postJson(
      echo,
      "/v1/predict",
      validRequest({ temperature: raw / SCALE }),
    );
    expect(response.status).toBe(200);
    return (await response.json()) as Record<string, unknown>;
  }

  it("health is healthy once the session exists; model info describes the artifact", async () => {
    expect(await health(echo)).toEqual({
      status: "healthy",
      model_loaded: true,
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    const info = await echo(`${BASE}/v1/model/info`);
    expect(info.status).toBe(200);
    const body = (await info.json()) as Record<string, unknown>;
    expect(body).toEqual({
      model_version: "aqi-echo",
      model_path: "test/aqi-echo.onnx",
      dataset_config: "test/aqi-echo.json",
      aqi_categories: {
        "0-50": "Good",
        "51-100": "Satisfactory",
        "101-200": "Moderate",
        "201-300": "Poor",
        "301-400": "Very Poor",
        "401-500": "Severe",
      },
      features: [...FEATURE_NAMES],
      training_stations: ["Lodhi Road, Delhi", "Chandni Chowk, Delhi"],
      session_create_ms: expect.any(Number),
      reading_model_version: null,
      history_model_version: null,
      service_radius_km: 50,
    });
    expect(Object.keys(body.aqi_categories as object)).toEqual([
      "0-50",
      "51-100",
      "101-200",
      "201-300",
      "301-400",
      "401-500",
    ]);
  });

  it("the full response of one prediction", async () => {
    const response = await postJson(
      echo,
      "/v1/predict",
      validRequest({ temperature: 212.37 / SCALE }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("Server-Timing")).toMatch(
      /^encode;dur=\d+\.\d{3}, inference;dur=\d+\.\d{3}$/,
    );
    const body = await response.json();
    expect(body).toEqual({
      aqi_predicted: 212.37,
      aqi_rounded: 212,
      category: "Poor",
      aqi_interval: { low: 202.37, high: 222.37 },
      model_version: "aqi-echo",
      inputs_used: {
        variant: "weather-only",
        recent_aqi: null,
        recent_aqi_age_hours: null,
        season: "Winter",
        season_derived_from_month: false,
      },
      notes: [],
      prediction_timestamp: expect.stringMatching(/Z$/),
      resolved_station: { name: "Lodhi Road, Delhi", matched_by: "name", distance_km: 0 },
    });
    const stamp = Date.parse((body as { prediction_timestamp: string }).prediction_timestamp);
    expect(Math.abs(stamp - Date.now())).toBeLessThan(60_000);
  });

  // [raw model output, aqi_predicted, aqi_rounded, category]: the category
  // follows aqi_rounded (not the raw value, unlike the reference service).
  it.each([
    [-0.4, -0.4, 0, "Good"],
    [0, 0, 0, "Good"],
    [50, 50, 50, "Good"],
    [50.5, 50.5, 50, "Good"],
    [51, 51, 51, "Satisfactory"],
    [51.5, 51.5, 52, "Satisfactory"],
    [100, 100, 100, "Satisfactory"],
    [100.5, 100.5, 100, "Satisfactory"],
    [101, 101, 101, "Moderate"],
    [200, 200, 200, "Moderate"],
    [201, 201, 201, "Poor"],
    [300, 300, 300, "Poor"],
    [301, 301, 301, "Very Poor"],
    [400, 400, 400, "Very Poor"],
    [400.5, 400.5, 400, "Very Poor"],
    [401, 401, 401, "Severe"],
    [499.5, 499.5, 500, "Severe"],
    [500, 500, 500, "Severe"],
    [500.5, 500.5, 500, "Severe"],
    [512.8, 512.8, 500, "Severe"],
    [1234.5, 1234.5, 500, "Severe"],
  ])(
    "raw %d -> aqi_predicted %d, aqi_rounded %d, %s",
    async (raw, predicted, rounded, category) => {
      const body = await predictRaw(raw);
      expect(body.aqi_predicted).toBe(predicted);
      expect(body.aqi_rounded).toBe(rounded);
      expect(body.category).toBe(category);
    },
  );

  it("the interval is clipped to the scale", async () => {
    expect((await predictRaw(-0.4)).aqi_interval).toEqual({ low: 0, high: 9.6 });
    expect((await predictRaw(512.8)).aqi_interval).toEqual({ low: 500, high: 500 });
  });

  it("without a recent-reading model, a request with a reading is a 503 that says what to do", async () => {
    const response = await postJson(
      echo,
      "/v1/predict",
      validRequest({ recent_aqi: 200, recent_aqi_age_hours: 2 }),
    );
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({
      detail:
        "The recent-reading model is not loaded: send the request without recent_aqi and recent_aqi_age_hours, or retry later.",
    });
  });

  it("an unknown station is scored as the nearest training station", async () => {
    const response = await postJson(
      echo,
      "/v1/predict",
      validRequest({ station: "Anand Vihar, Delhi", latitude: 28.6469, longitude: 77.3152 }),
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as { resolved_station: Record<string, unknown> };
    expect(body.resolved_station).toEqual({
      name: "Chandni Chowk, Delhi",
      matched_by: "nearest",
      distance_km: expect.any(Number),
    });
    expect(body.resolved_station.distance_km).toBeGreaterThan(5);
    expect(body.resolved_station.distance_km).toBeLessThan(15);
  });

  it("batch: 1 item and 100 items, predictions in input order", async () => {
    const one = await postJson(echo, "/v1/predict/batch", { requests: [validRequest()] });
    expect(one.status).toBe(200);
    const oneBody = (await one.json()) as { predictions: unknown[]; count: number };
    expect(oneBody.count).toBe(1);
    expect(oneBody.predictions).toHaveLength(1);

    const raws = Array.from({ length: 100 }, (_, index) => 400 - index * 4);
    const requests = raws.map((raw) => validRequest({ temperature: raw / SCALE }));
    const hundred = await postJson(echo, "/v1/predict/batch", { requests });
    expect(hundred.status).toBe(200);
    const body = (await hundred.json()) as {
      predictions: { aqi_predicted: number; model_version: string }[];
      count: number;
    };
    expect(body.count).toBe(100);
    expect(body.predictions.map((prediction) => prediction.aqi_predicted)).toEqual(raws);
    expect(new Set(body.predictions.map((prediction) => prediction.model_version))).toEqual(
      new Set(["aqi-echo"]),
    );
  });

  it("lax inputs pydantic accepts are accepted: numeric strings, 15.0, true, extra fields", async () => {
    const response = await postJson(
      echo,
      "/v1/predict",
      validRequest({
        temperature: "3.8515625", // 123.25 / 32
        humidity: " 40 ",
        day: "15",
        month: 2.0,
        hour: "7.0",
        is_weekend: true,
        extra_field: "ignored",
      }),
    );
    expect(response.status).toBe(200);
    expect(((await response.json()) as { aqi_predicted: number }).aqi_predicted).toBe(123.25);
  });
});
