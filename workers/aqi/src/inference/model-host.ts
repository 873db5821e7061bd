/**
 * One model per isolate: the onnxruntime-web session is created lazily on
 * first use and kept for the isolate's life. A batch is scored with a single
 * `session.run` over an [N, features] tensor.
 */
import {
  encodeBatch,
  encodeReadingBatch,
  FEATURE_COUNT,
  type FeatureInput,
  READING_FEATURE_COUNT,
  resolveStation,
  type StationResolution,
} from "../domain/features.ts";
import {
  encodeHistoryBatch,
  HISTORY_FEATURE_COUNT,
  type PreparedReadings,
  WINDOW_ARITHMETIC_COLUMN,
} from "../domain/history.ts";
import { aqiFromReadingZ, aqiFromWindowArithmeticZ } from "../domain/prediction.ts";
import type { ModelArtifact, ModelSource } from "./model-artifact.ts";
import { createOrtSession, type InferenceSession, ort } from "./onnx-runtime.ts";

export const MODEL_INPUT = "input";
export const MODEL_OUTPUTS = { point: "aqi", low: "aqi_low", high: "aqi_high" } as const;
/** The recent-reading model's outputs: z of the point and the interval ends (see aqiFromReadingZ). */
export const READING_MODEL_OUTPUTS = { point: "z", low: "z_low", high: "z_high" } as const;
/** The recent-hours model's outputs: z of the point, and the interval ends' offsets from it (see aqiFromWindowArithmeticZ). */
export const HISTORY_MODEL_OUTPUTS = { point: "z", low: "dz_low", high: "dz_high" } as const;

export function outputNames(
  variant: ModelArtifact["variant"],
): typeof MODEL_OUTPUTS | typeof READING_MODEL_OUTPUTS | typeof HISTORY_MODEL_OUTPUTS {
  if (variant === "recent-hours") return HISTORY_MODEL_OUTPUTS;
  return variant === "recent-reading" ? READING_MODEL_OUTPUTS : MODEL_OUTPUTS;
}

const FEATURE_COUNT_OF: Record<ModelArtifact["variant"], number> = {
  "weather-only": FEATURE_COUNT,
  "recent-reading": READING_FEATURE_COUNT,
  "recent-hours": HISTORY_FEATURE_COUNT,
};

type OutputColumns = Record<keyof typeof MODEL_OUTPUTS, Float32Array | Float64Array>;

export interface ScoredRow {
  /** The three model outputs on the AQI scale. */
  readonly point: number;
  readonly low: number;
  readonly high: number;
  readonly station: StationResolution;
}

export interface ScoredBatch {
  readonly rows: ScoredRow[];
  /** Wall time of the `session.run` call inside this isolate. */
  readonly inferenceMs: number;
  /** Wall time of feature encoding (the shared preprocessing). */
  readonly encodeMs: number;
}

export class LoadedAqiModel {
  // Runs are serialised: one wasm instance, and ort's run is not re-entrant by contract.
  #queue: Promise<unknown> = Promise.resolve();

  /** Columns of the model's input: the weather-only layout, or that plus the reading and its age. */
  readonly featureCount: number;

  constructor(
    readonly artifact: ModelArtifact,
    private readonly session: InferenceSession,
    /** How long creating the session took (the cold-start cost, paid once per isolate). */
    readonly sessionCreateMs: number,
  ) {
    this.featureCount = FEATURE_COUNT_OF[artifact.variant];
  }

  /**
   * The model's input rows for validated requests (row-major float32).
   * `prepared[i]`: request i's readings as the recent-hours checks prepared them.
   */
  encode(
    inputs: readonly FeatureInput[],
    prepared?: readonly (PreparedReadings | null | undefined)[],
  ): Float32Array {
    const spec = this.artifact.preprocessing;
    switch (this.artifact.variant) {
      case "recent-hours":
        return encodeHistoryBatch(inputs, spec, prepared);
      case "recent-reading":
        return encodeReadingBatch(inputs, spec);
      default:
        return encodeBatch(inputs, spec);
    }
  }

  /** Scores validated requests: the shared preprocessing, then one `session.run`. */
  async score(
    inputs: readonly FeatureInput[],
    prepared?: readonly (PreparedReadings | null | undefined)[],
  ): Promise<ScoredBatch> {
    const spec = this.artifact.preprocessing;
    const encodeStarted = performance.now();
    const data = this.encode(inputs, prepared);
    const stations = inputs.map((input) =>
      resolveStation(input.station, input.latitude, input.longitude, spec.stations),
    );
    const encodeMs = performance.now() - encodeStarted;
    const { outputs, inferenceMs } = await this.run(data, inputs.length);
    const rows = stations.map((station, index) => ({
      point: outputs.point[index]!,
      low: outputs.low[index]!,
      high: outputs.high[index]!,
      station,
    }));
    return { rows, inferenceMs, encodeMs };
  }

  /** One `session.run` over encoded rows (row-major float32 [rows, featureCount]). */
  async run(
    data: Float32Array,
    rows: number,
  ): Promise<{ outputs: OutputColumns; inferenceMs: number }> {
    const tensor = new ort.Tensor("float32", data, [rows, this.featureCount]);
    let started = 0;
    const run = this.#queue.then(async () => {
      started = performance.now();
      return this.session.run({ [MODEL_INPUT]: tensor });
    });
    this.#queue = run.catch(() => undefined);
    const outputs = await run;
    const column = (name: string): Float32Array => {
      const output = outputs[name];
      if (!output || !(output.data instanceof Float32Array) || output.data.length !== rows) {
        throw new Error(
          `model output ${name} is not float32[${rows}, 1] (dims ${output?.dims.join("x")}, type ${output?.type})`,
        );
      }
      return output.data;
    };
    const names = outputNames(this.artifact.variant);
    const columns: OutputColumns = {
      point: column(names.point),
      low: column(names.low),
      high: column(names.high),
    };
    if (this.artifact.variant === "recent-reading") {
      // z back to AQI, from each row's reading and age as the model saw them (float32).
      const width = this.featureCount;
      for (const key of ["point", "low", "high"] as const) {
        const z = columns[key];
        const aqi = new Float64Array(rows);
        for (let row = 0; row < rows; row += 1) {
          aqi[row] = aqiFromReadingZ(
            z[row]!,
            data[row * width + width - 2]!,
            data[row * width + width - 1]!,
          );
        }
        columns[key] = aqi;
      }
    }
    if (this.artifact.variant === "recent-hours") {
      // z (and its interval offsets) back to AQI, from each row's window arithmetic AQI as the model saw it.
      const width = this.featureCount;
      const offset = FEATURE_COUNT + WINDOW_ARITHMETIC_COLUMN;
      const z = columns.point;
      const aqi = {
        point: new Float64Array(rows),
        low: new Float64Array(rows),
        high: new Float64Array(rows),
      };
      for (let row = 0; row < rows; row += 1) {
        const windowArithmetic = data[row * width + offset]!;
        aqi.point[row] = aqiFromWindowArithmeticZ(z[row]!, 0, windowArithmetic);
        aqi.low[row] = aqiFromWindowArithmeticZ(z[row]!, columns.low[row]!, windowArithmetic);
        aqi.high[row] = aqiFromWindowArithmeticZ(z[row]!, columns.high[row]!, windowArithmetic);
      }
      columns.point = aqi.point;
      columns.low = aqi.low;
      columns.high = aqi.high;
    }
    // The inference time includes that transform: it is part of running this model.
    return { outputs: columns, inferenceMs: performance.now() - started };
  }
}

export type ModelState =
  | { readonly status: "missing" }
  | { readonly status: "failed"; readonly reason: string }
  | { readonly status: "ready"; readonly model: LoadedAqiModel };

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

export class ModelHost {
  #state: Promise<ModelState> | undefined;

  constructor(private readonly source: ModelSource) {}

  /**
   * The model, loading it on first call. The outcome is kept for the
   * isolate's life: the bytes are bundled with the code, so a model that is
   * absent or fails to load will not load on a retry either.
   */
  state(): Promise<ModelState> {
    this.#state ??= this.#load();
    return this.#state;
  }

  async #load(): Promise<ModelState> {
    let artifact: ModelArtifact | null;
    try {
      artifact = await this.source();
    } catch (error) {
      return this.#failed("model artifact rejected", error);
    }
    if (!artifact) {
      console.warn(JSON.stringify({ level: "warn", msg: "no AQI model bundled: degraded" }));
      return { status: "missing" };
    }
    const started = performance.now();
    let session: InferenceSession;
    try {
      session = await createOrtSession(artifact.onnx);
    } catch (error) {
      return this.#failed(`onnxruntime could not load ${artifact.modelPath}`, error);
    }
    const sessionCreateMs = performance.now() - started;
    const missing = [
      ...[MODEL_INPUT].filter((name) => !session.inputNames.includes(name)),
      ...Object.values(outputNames(artifact.variant)).filter(
        (name) => !session.outputNames.includes(name),
      ),
    ];
    if (missing.length > 0) {
      return this.#failed(
        `${artifact.modelPath} lacks ${missing.join(", ")}`,
        new Error(`inputs ${session.inputNames}, outputs ${session.outputNames}`),
      );
    }
    console.log(
      JSON.stringify({
        level: "info",
        msg: "AQI model loaded",
        model_version: artifact.version,
        session_create_ms: Math.round(sessionCreateMs * 10) / 10,
      }),
    );
    return { status: "ready", model: new LoadedAqiModel(artifact, session, sessionCreateMs) };
  }

  #failed(reason: string, error: unknown): ModelState {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "AQI model not loaded",
        reason,
        error: describe(error),
      }),
    );
    return { status: "failed", reason };
  }
}
