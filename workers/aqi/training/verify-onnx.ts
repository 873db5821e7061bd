/**
 * Checks the shipped ONNX model in an ONNX runtime against the trainer's own
 * predictions on the stored holdout rows, and checks that the shared
 * preprocessing re-encodes each holdout request to exactly the stored row.
 *
 * Runtime: `onnxruntime-node` by default, or any module with the same API
 * named by AQI_ORT_MODULE (e.g. a path to onnxruntime-web's Node entry, the
 * wasm build the Worker uses). The workerd test of the service does the same
 * check inside workerd.
 *
 *   node workers/aqi/training/verify-onnx.ts [--version 1.0.0] [--models-dir models]
 */

import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  assertSpecMatchesCode,
  encodeFeatures,
  FEATURE_COUNT,
  type FeatureInput,
  type PreprocessingSpec,
} from "../src/domain/features.ts";

import {
  encodeHistoryFeatures,
  HISTORY_FEATURE_COUNT,
  WINDOW_ARITHMETIC_COLUMN,
} from "../src/domain/history.ts";
import { aqiFromWindowArithmeticZ } from "../src/domain/prediction.ts";
import { itemAt } from "./arrays.ts";
export const OUTPUT_NAMES = ["aqi", "aqi_low", "aqi_high"] as const;

interface HoldoutFile {
  readonly modelVersion: string;
  readonly onnx: string;
  readonly tolerance: number;
  readonly rows: readonly {
    readonly request: FeatureInput;
    readonly features: readonly (number | null)[];
    readonly expected: Readonly<Record<(typeof OUTPUT_NAMES)[number], number>>;
  }[];
  readonly missingValueRows: readonly {
    readonly features: readonly (number | null)[];
    readonly expected: Readonly<Record<(typeof OUTPUT_NAMES)[number], number>>;
  }[];
}

interface OrtTensor {
  readonly data: Float32Array;
  readonly dims: readonly number[];
}
interface OrtModule {
  readonly env?: { wasm?: { numThreads?: number } };
  readonly Tensor: new (type: "float32", data: Float32Array, dims: number[]) => OrtTensor;
  readonly InferenceSession: {
    create(
      model: Uint8Array,
    ): Promise<{ run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>> }>;
  };
}

export interface VerificationReport {
  readonly runtime: string;
  readonly rows: number;
  readonly missingValueRows: number;
  readonly featureMismatches: number;
  readonly maxAbsDifference: Readonly<Record<string, number>>;
  readonly tolerance: number;
  readonly passed: boolean;
}

/** The service scores at most 100 rows per session.run; the check uses the same batch size. */
const BATCH_ROWS = 100;

export async function verifyOnnx(
  modelsDir: string,
  version: string,
  runtimeModule = process.env.AQI_ORT_MODULE ?? "onnxruntime-node",
): Promise<VerificationReport> {
  const name = `aqi-${version}`;
  const card = JSON.parse(readFileSync(join(modelsDir, `${name}.json`), "utf8")) as {
    preprocessing: PreprocessingSpec;
  };
  const holdout = JSON.parse(
    readFileSync(join(modelsDir, `${name}.holdout.json`), "utf8"),
  ) as HoldoutFile;
  assertSpecMatchesCode(card.preprocessing);

  let featureMismatches = 0;
  const encoded = new Float32Array(holdout.rows.length * FEATURE_COUNT);
  holdout.rows.forEach((row, rowIndex) => {
    const features = encodeFeatures(row.request, card.preprocessing);
    features.forEach((value, column) => {
      const stored = row.features[column] ?? null;
      const value32 = Math.fround(value);
      const same = stored === null ? Number.isNaN(value32) : value32 === Math.fround(stored);
      if (!same) featureMismatches += 1;
      encoded[rowIndex * FEATURE_COUNT + column] = value32;
    });
  });

  // Rows with missing weather are appended after the request rows; their features are taken as stored.
  const allExpected = [...holdout.rows, ...holdout.missingValueRows].map((row) => row.expected);
  const tensorData = new Float32Array(allExpected.length * FEATURE_COUNT);
  tensorData.set(encoded);
  holdout.missingValueRows.forEach((row, index) => {
    row.features.forEach((value, column) => {
      tensorData[(holdout.rows.length + index) * FEATURE_COUNT + column] =
        value === null ? Number.NaN : value;
    });
  });

  const ort = (await import(runtimeModule)) as OrtModule & { default?: OrtModule };
  const runtime: OrtModule = ort.InferenceSession ? ort : (ort.default as OrtModule);
  if (runtime.env?.wasm) runtime.env.wasm.numThreads = 1;
  const session = await runtime.InferenceSession.create(
    new Uint8Array(readFileSync(join(modelsDir, holdout.onnx))),
  );
  const maxAbsDifference: Record<(typeof OUTPUT_NAMES)[number], number> = {
    aqi: 0,
    aqi_low: 0,
    aqi_high: 0,
  };
  for (let start = 0; start < allExpected.length; start += BATCH_ROWS) {
    const count = Math.min(BATCH_ROWS, allExpected.length - start);
    const input = new runtime.Tensor(
      "float32",
      tensorData.slice(start * FEATURE_COUNT, (start + count) * FEATURE_COUNT),
      [count, FEATURE_COUNT],
    );
    const outputs = await session.run({ input });
    for (const outputName of OUTPUT_NAMES) {
      const tensor = outputs[outputName];
      if (tensor === undefined) throw new Error(`the model has no output ${outputName}`);
      for (let offset = 0; offset < count; offset += 1) {
        const expected = itemAt(allExpected, start + offset)[outputName];
        const difference = Math.abs(itemAt(tensor.data, offset) - expected);
        // "!(<=)" also records NaN as a failure.
        if (!(difference <= maxAbsDifference[outputName]))
          maxAbsDifference[outputName] = difference;
      }
    }
  }
  const passed =
    featureMismatches === 0 &&
    OUTPUT_NAMES.every((outputName) => maxAbsDifference[outputName] < holdout.tolerance);
  return {
    runtime: runtimeModule,
    rows: holdout.rows.length,
    missingValueRows: holdout.missingValueRows.length,
    featureMismatches,
    maxAbsDifference,
    tolerance: holdout.tolerance,
    passed,
  };
}

/**
 * The same check for the recent-hours model: the Worker's TypeScript turns each
 * holdout request's recent_hours into exactly the row the trainer fitted on,
 * and the runtime's z, dz_low, dz_high, turned into AQI as the service does,
 * match the trainer's predictions.
 */
export async function verifyHistoryOnnx(
  modelsDir: string,
  version: string,
  runtimeModule = process.env.AQI_ORT_MODULE ?? "onnxruntime-node",
): Promise<VerificationReport> {
  const name = `aqi-history-${version}`;
  const card = JSON.parse(readFileSync(join(modelsDir, `${name}.json`), "utf8")) as {
    preprocessing: PreprocessingSpec;
  };
  const holdout = JSON.parse(readFileSync(join(modelsDir, `${name}.holdout.json`), "utf8")) as Omit<
    HoldoutFile,
    "missingValueRows"
  >;
  assertSpecMatchesCode(card.preprocessing);
  let featureMismatches = 0;
  const tensorData = new Float32Array(holdout.rows.length * HISTORY_FEATURE_COUNT);
  holdout.rows.forEach((row, rowIndex) => {
    encodeHistoryFeatures(row.request, card.preprocessing).forEach((value, column) => {
      const stored = row.features[column] ?? null;
      const value32 = Math.fround(value);
      if (!(stored === null ? Number.isNaN(value32) : value32 === Math.fround(stored))) {
        featureMismatches += 1;
      }
      tensorData[rowIndex * HISTORY_FEATURE_COUNT + column] = value32;
    });
  });
  const ort = (await import(runtimeModule)) as OrtModule & { default?: OrtModule };
  const runtime: OrtModule = ort.InferenceSession ? ort : (ort.default as OrtModule);
  if (runtime.env?.wasm) runtime.env.wasm.numThreads = 1;
  const session = await runtime.InferenceSession.create(
    new Uint8Array(readFileSync(join(modelsDir, holdout.onnx))),
  );
  const maxAbsDifference: Record<(typeof OUTPUT_NAMES)[number], number> = {
    aqi: 0,
    aqi_low: 0,
    aqi_high: 0,
  };
  const windowArithmeticColumn = FEATURE_COUNT + WINDOW_ARITHMETIC_COLUMN;
  for (let start = 0; start < holdout.rows.length; start += BATCH_ROWS) {
    const count = Math.min(BATCH_ROWS, holdout.rows.length - start);
    const data = tensorData.slice(
      start * HISTORY_FEATURE_COUNT,
      (start + count) * HISTORY_FEATURE_COUNT,
    );
    const outputs = await session.run({
      input: new runtime.Tensor("float32", data, [count, HISTORY_FEATURE_COUNT]),
    });
    const column = (output: string) => {
      const tensor = outputs[output];
      if (tensor === undefined) throw new Error(`the model has no output ${output}`);
      return tensor.data;
    };
    const [z, low, high] = [column("z"), column("dz_low"), column("dz_high")];
    for (let offset = 0; offset < count; offset += 1) {
      const windowArithmetic = itemAt(
        data,
        offset * HISTORY_FEATURE_COUNT + windowArithmeticColumn,
      );
      const actual = {
        aqi: aqiFromWindowArithmeticZ(itemAt(z, offset), 0, windowArithmetic),
        aqi_low: aqiFromWindowArithmeticZ(itemAt(z, offset), itemAt(low, offset), windowArithmetic),
        aqi_high: aqiFromWindowArithmeticZ(
          itemAt(z, offset),
          itemAt(high, offset),
          windowArithmetic,
        ),
      };
      for (const outputName of OUTPUT_NAMES) {
        const difference = Math.abs(
          actual[outputName] - itemAt(holdout.rows, start + offset).expected[outputName],
        );
        if (!(difference <= maxAbsDifference[outputName]))
          maxAbsDifference[outputName] = difference;
      }
    }
  }
  return {
    runtime: runtimeModule,
    rows: holdout.rows.length,
    missingValueRows: 0,
    featureMismatches,
    maxAbsDifference,
    tolerance: holdout.tolerance,
    passed:
      featureMismatches === 0 &&
      OUTPUT_NAMES.every((outputName) => maxAbsDifference[outputName] < holdout.tolerance),
  };
}

// import.meta.main exists from Node 24.2; the argv comparison covers Node 22.
if (import.meta.main ?? process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      version: { type: "string", default: "1.0.0" },
      "models-dir": { type: "string", default: resolve(import.meta.dirname, "../../../models") },
    },
  });
  const report = await verifyOnnx(resolve(values["models-dir"]), values.version);
  console.log(JSON.stringify(report, null, 2));
  if (!report.passed) process.exit(1);
}
