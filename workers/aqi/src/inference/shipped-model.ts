/**
 * The model bundled with the Worker: models/aqi-<version>.onnx as a Data
 * module (an ArrayBuffer; wrangler.toml's rule) and its model card (JSON,
 * bundled by esbuild), which carries the preprocessing spec. Retraining under
 * a new version means changing these two imports and MODEL_FILE.
 */
import modelCard from "../../../../models/aqi-1.0.0.json";
import modelBytes from "../../../../models/aqi-1.0.0.onnx";
import { artifactFromCard, type ModelSource } from "./model-artifact.ts";

const MODEL_FILE = "models/aqi-1.0.0.onnx";
const CARD_FILE = "models/aqi-1.0.0.json";

export const SHIPPED_MODEL_CARD: { modelVersion: string } = modelCard;

export const shippedModel: ModelSource = () =>
  artifactFromCard(modelCard, modelBytes, { modelPath: MODEL_FILE, cardPath: CARD_FILE });
