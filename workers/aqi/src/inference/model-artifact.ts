/**
 * What the service needs of a trained model: the ONNX bytes and, from the
 * model card the trainer writes beside them, its version and the
 * preprocessing spec `encodeFeatures` needs. The card is checked against the
 * feature layout compiled into this code before a model is accepted.
 */
import { z } from "@hono/zod-openapi";
import {
  assertSpecMatchesCode,
  type PreprocessingSpec,
  READING_COLUMNS,
} from "../domain/features.ts";
import { HISTORY_COLUMNS } from "../domain/history.ts";

/** Which inputs a model reads: weather and calendar only, or those plus a recent AQI reading, or plus the last hours' readings. */
export type ModelVariant = "weather-only" | "recent-reading" | "recent-hours";

export interface ModelArtifact {
  /** The artifact's version, e.g. "aqi-1.0.0" (file stem), returned as `model_version`. */
  readonly version: string;
  /** Where the ONNX file lives in the repository (returned as `model_path`). */
  readonly modelPath: string;
  /** Where the model card lives in the repository (returned as `dataset_config`). */
  readonly cardPath: string;
  readonly onnx: Uint8Array;
  readonly preprocessing: PreprocessingSpec;
  readonly variant: ModelVariant;
}

/**
 * Supplies this isolate's model, or null when there is none (the service then
 * runs degraded). Injectable, so tests can run the real Worker code with no
 * model, a corrupt one or a small one of their own.
 */
export type ModelSource = () => ModelArtifact | null | Promise<ModelArtifact | null>;

/** The model card fields the service reads (the card has many more). */
const ModelCardSubset = z.object({
  modelVersion: z.string().min(1),
  preprocessing: z.object({
    featureLayoutVersion: z.number().int(),
    featureNames: z.array(z.string()),
    stations: z
      .array(
        z.object({
          name: z.string(),
          latitude: z.number(),
          longitude: z.number(),
          aliases: z.array(z.string()),
        }),
      )
      .min(1),
    featuresMissingInTraining: z.array(z.string()),
    readingColumns: z.array(z.string()).optional(),
    historyColumns: z.array(z.string()).optional(),
  }),
});

/** Reads a model card (parsed JSON) into an artifact; throws if the card does not fit this code. */
export function artifactFromCard(
  card: unknown,
  onnx: ArrayBuffer | Uint8Array,
  paths: { modelPath: string; cardPath: string },
): ModelArtifact {
  const parsed = ModelCardSubset.parse(card);
  const preprocessing = parsed.preprocessing as PreprocessingSpec;
  assertSpecMatchesCode(preprocessing);
  const readingColumns = parsed.preprocessing.readingColumns;
  if (
    readingColumns !== undefined &&
    (readingColumns.length !== READING_COLUMNS.length ||
      readingColumns.some((name, index) => name !== READING_COLUMNS[index]))
  ) {
    throw new Error(
      `model card reading columns [${readingColumns.join(", ")}] differ from code [${READING_COLUMNS.join(", ")}]`,
    );
  }
  const historyColumns = parsed.preprocessing.historyColumns;
  if (
    historyColumns !== undefined &&
    (historyColumns.length !== HISTORY_COLUMNS.length ||
      historyColumns.some((name, index) => name !== HISTORY_COLUMNS[index]))
  ) {
    throw new Error(
      `model card history columns [${historyColumns.join(", ")}] differ from code [${HISTORY_COLUMNS.join(", ")}]`,
    );
  }
  return {
    variant:
      historyColumns !== undefined
        ? "recent-hours"
        : readingColumns === undefined
          ? "weather-only"
          : "recent-reading",
    version: parsed.modelVersion,
    modelPath: paths.modelPath,
    cardPath: paths.cardPath,
    onnx: onnx instanceof Uint8Array ? onnx : new Uint8Array(onnx),
    preprocessing,
  };
}
