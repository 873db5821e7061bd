/**
 * The shipped ONNX model, run by onnxruntime-web inside workerd exactly as the
 * service runs it, against the trainer's own predictions on the holdout rows
 * stored beside it (max absolute difference under the file's tolerance,
 * 0.01 AQI); and the shared preprocessing re-encoding each holdout request
 * to the trainer's feature row.
 */
import { describe, expect, it } from "vitest";
import holdout from "../../../models/aqi-1.0.0.holdout.json";
import historyHoldout from "../../../models/aqi-history-1.0.0.holdout.json";
import readingHoldout from "../../../models/aqi-reading-1.2.0.holdout.json";
import {
  encodeFeatures,
  encodeReadingFeatures,
  FEATURE_COUNT,
  type FeatureInput,
  type PreprocessingSpec,
} from "../src/domain/features.ts";
import { encodeHistoryFeatures } from "../src/domain/history.ts";
import { interpretModelOutputs } from "../src/domain/prediction.ts";
import type { ModelSource, ModelVariant } from "../src/inference/model-artifact.ts";
import { ModelHost } from "../src/inference/model-host.ts";
import {
  SHIPPED_HISTORY_MODEL_CARD,
  SHIPPED_MODEL_CARD,
  SHIPPED_READING_MODEL_CARD,
  shippedHistoryModel,
  shippedModel,
  shippedReadingModel,
} from "../src/inference/shipped-model.ts";
import { BASE, postJson, worker } from "./helpers.ts";

type Outputs = { aqi: number; aqi_low: number; aqi_high: number };
interface HoldoutRow {
  request: FeatureInput;
  features: (number | null)[];
  expected: Outputs;
}
const missingValueRows =
  (holdout as { missingValueRows?: Omit<HoldoutRow, "request">[] }).missingValueRows ?? [];

function maxDifference(actual: ArrayLike<number>, expected: number[]): number {
  let max = 0;
  for (let index = 0; index < expected.length; index += 1) {
    const difference = Math.abs(actual[index]! - expected[index]!);
    // NaN fails the comparison, so it counts as an infinite difference.
    max =
      difference <= max ? max : Number.isNaN(difference) ? Number.POSITIVE_INFINITY : difference;
  }
  return max;
}

async function loadedModel(source: ModelSource) {
  const state = await new ModelHost(source).state();
  if (state.status !== "ready") throw new Error(`model not loaded: ${JSON.stringify(state)}`);
  return state.model;
}

/** Each shipped model with the holdout rows its trainer scored and the encoder its requests take. */
const SHIPPED_VARIANTS: {
  variant: ModelVariant;
  source: ModelSource;
  card: { modelVersion: string };
  holdout: { modelVersion: string; tolerance: number; rows: unknown[] };
  encode: (input: FeatureInput, spec: PreprocessingSpec) => number[];
}[] = [
  {
    variant: "weather-only",
    source: shippedModel,
    card: SHIPPED_MODEL_CARD,
    holdout,
    encode: encodeFeatures,
  },
  {
    variant: "recent-reading",
    source: shippedReadingModel,
    card: SHIPPED_READING_MODEL_CARD,
    holdout: readingHoldout,
    encode: encodeReadingFeatures,
  },
  {
    // Its features come from recent_hours through the CPCB calculator: the row-for-row check below
    // compares the service's TypeScript with the rows the trainer fitted on.
    variant: "recent-hours",
    source: shippedHistoryModel,
    card: SHIPPED_HISTORY_MODEL_CARD,
    holdout: historyHoldout,
    encode: encodeHistoryFeatures,
  },
];

describe.each(SHIPPED_VARIANTS)("the shipped $variant model inside workerd", (shipped) => {
  const rows = shipped.holdout.rows as HoldoutRow[];
  const tolerance = shipped.holdout.tolerance;

  it("the holdout file belongs to the bundled model", async () => {
    const model = await loadedModel(shipped.source);
    expect(shipped.holdout.modelVersion).toBe(model.artifact.version);
    expect(shipped.card.modelVersion).toBe(model.artifact.version);
    expect(model.artifact.variant).toBe(shipped.variant);
    expect(rows.length).toBeGreaterThanOrEqual(100);
    expect(tolerance).toBeLessThanOrEqual(0.01);
  });

  it("the shared encoder reproduces the trainer's feature row for every holdout request", async () => {
    const { preprocessing } = (await loadedModel(shipped.source)).artifact;
    for (const row of rows) {
      const encoded = shipped.encode(row.request, preprocessing).map(Math.fround);
      const stored = row.features.map((value) =>
        value === null ? Number.NaN : Math.fround(value),
      );
      expect(encoded).toEqual(stored);
    }
  });

  it("matches the trainer's predictions (aqi, aqi_low, aqi_high) within 0.01 AQI", async () => {
    const model = await loadedModel(shipped.source);
    const differences = { aqi: 0, aqi_low: 0, aqi_high: 0 };
    for (let start = 0; start < rows.length; start += 100) {
      const chunk = rows.slice(start, start + 100);
      const scored = await model.score(chunk.map((row) => row.request));
      const columns = {
        aqi: scored.rows.map((row) => row.point),
        aqi_low: scored.rows.map((row) => row.low),
        aqi_high: scored.rows.map((row) => row.high),
      };
      for (const name of ["aqi", "aqi_low", "aqi_high"] as const) {
        differences[name] = Math.max(
          differences[name],
          maxDifference(
            columns[name],
            chunk.map((row) => row.expected[name]),
          ),
        );
      }
    }
    console.log(
      `model-match (${shipped.variant}): ${rows.length} holdout rows, max |ONNX in workerd - trainer| = ${JSON.stringify(differences)}`,
    );
    expect(differences.aqi).toBeLessThan(tolerance);
    expect(differences.aqi_low).toBeLessThan(tolerance);
    expect(differences.aqi_high).toBeLessThan(tolerance);
  });

  it("through the API: a batch of 100 holdout requests answers the trainer's numbers", async () => {
    const chunk = rows.slice(0, 100);
    const response = await postJson(worker, "/v1/predict/batch", {
      requests: chunk.map((row) => row.request),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      count: number;
      predictions: {
        aqi_predicted: number;
        aqi_interval: { low: number; high: number };
        model_version: string;
      }[];
    };
    expect(body.count).toBe(100);
    body.predictions.forEach((prediction, index) => {
      const { aqi, aqi_low, aqi_high } = chunk[index]!.expected;
      const reference = interpretModelOutputs(aqi, aqi_low, aqi_high);
      // 2-decimal rounding of a value within the tolerance: at most tolerance + 0.005 apart.
      expect(Math.abs(prediction.aqi_predicted - reference.aqi_predicted)).toBeLessThanOrEqual(
        tolerance + 0.005,
      );
      expect(
        Math.abs(prediction.aqi_interval.low - reference.aqi_interval.low),
      ).toBeLessThanOrEqual(tolerance + 0.005);
      expect(
        Math.abs(prediction.aqi_interval.high - reference.aqi_interval.high),
      ).toBeLessThanOrEqual(tolerance + 0.005);
      expect(prediction.model_version).toBe(shipped.holdout.modelVersion);
    });
  });
});

describe("the shipped weather-only model on rows with missing readings", () => {
  const tolerance = holdout.tolerance;
  it.runIf(missingValueRows.length > 0)(
    "matches on rows with missing readings (NaN features) too",
    async () => {
      const model = await loadedModel(shippedModel);
      const data = new Float32Array(missingValueRows.length * FEATURE_COUNT);
      missingValueRows.forEach((row, index) => {
        data.set(
          row.features.map((value) => (value === null ? Number.NaN : value)),
          index * FEATURE_COUNT,
        );
      });
      for (let start = 0; start < missingValueRows.length; start += 100) {
        const count = Math.min(100, missingValueRows.length - start);
        const { outputs } = await model.run(
          data.slice(start * FEATURE_COUNT, (start + count) * FEATURE_COUNT),
          count,
        );
        const expected = missingValueRows.slice(start, start + count).map((row) => row.expected);
        for (const [output, name] of [
          [outputs.point, "aqi"],
          [outputs.low, "aqi_low"],
          [outputs.high, "aqi_high"],
        ] as const) {
          expect(
            maxDifference(
              output,
              expected.map((e) => e[name]),
            ),
          ).toBeLessThan(tolerance);
        }
      }
    },
  );
});

describe("the bundled model through the Worker", () => {
  it("health is healthy and model info names the artifact", async () => {
    const health = await (await worker(`${BASE}/v1/health`)).json();
    expect(health).toEqual({
      status: "healthy",
      model_loaded: true,
      timestamp: expect.any(String),
    });
    const info = await worker(`${BASE}/v1/model/info`);
    expect(info.status).toBe(200);
    expect(await info.json()).toMatchObject({
      model_version: holdout.modelVersion,
      model_path: `models/${holdout.onnx}`,
      dataset_config: `models/${holdout.modelVersion}.json`,
      session_create_ms: expect.any(Number),
    });
  });
});
