/**
 * The models bundled with the Worker: models/aqi-<version>.onnx as Data
 * modules (ArrayBuffers; wrangler.toml's rule) and their model cards (JSON,
 * bundled by esbuild), which carry the preprocessing spec. Retraining under a
 * new version means changing these imports and the file names.
 *
 * - weather-only (aqi-1.0.0): weather, calendar and station;
 * - recent-reading (aqi-reading-1.2.0): the same columns plus the station's
 *   latest AQI and its age, for requests that send them;
 * - recent-hours (aqi-history-1.0.0): the same columns plus the features of the
 *   station's last hourly readings, for requests that send recent_hours.
 */

import modelCard from "../../../../models/aqi-1.0.0.json";
import modelBytes from "../../../../models/aqi-1.0.0.onnx";
import historyCard from "../../../../models/aqi-history-1.0.0.json";
import historyBytes from "../../../../models/aqi-history-1.0.0.onnx";
import readingCard from "../../../../models/aqi-reading-1.2.0.json";
import readingBytes from "../../../../models/aqi-reading-1.2.0.onnx";
import { artifactFromCard, type ModelSource } from "./model-artifact.ts";

const MODEL_FILE = "models/aqi-1.0.0.onnx";
const CARD_FILE = "models/aqi-1.0.0.json";
const READING_MODEL_FILE = "models/aqi-reading-1.2.0.onnx";
const READING_CARD_FILE = "models/aqi-reading-1.2.0.json";
const HISTORY_MODEL_FILE = "models/aqi-history-1.0.0.onnx";
const HISTORY_CARD_FILE = "models/aqi-history-1.0.0.json";

export const SHIPPED_MODEL_CARD: { modelVersion: string } = modelCard;
export const SHIPPED_READING_MODEL_CARD: { modelVersion: string } = readingCard;
export const SHIPPED_HISTORY_MODEL_CARD: { modelVersion: string } = historyCard;

export const shippedModel: ModelSource = () =>
  artifactFromCard(modelCard, modelBytes, { modelPath: MODEL_FILE, cardPath: CARD_FILE });

export const shippedReadingModel: ModelSource = () =>
  artifactFromCard(readingCard, readingBytes, {
    modelPath: READING_MODEL_FILE,
    cardPath: READING_CARD_FILE,
  });

export const shippedHistoryModel: ModelSource = () =>
  artifactFromCard(historyCard, historyBytes, {
    modelPath: HISTORY_MODEL_FILE,
    cardPath: HISTORY_CARD_FILE,
  });
