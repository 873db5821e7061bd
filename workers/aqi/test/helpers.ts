import { env, exports } from "cloudflare:workers";
import { createApp } from "../src/app.ts";
import {
  FEATURE_LAYOUT_VERSION,
  FEATURE_NAMES,
  type PreprocessingSpec,
} from "../src/domain/features.ts";
import type { ModelArtifact, ModelSource } from "../src/inference/model-artifact.ts";
import { ModelHost } from "../src/inference/model-host.ts";

export const BASE = "http://aqi";

/** A request every model accepts; tests override single fields. */
export function validRequest(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    station: "Lodhi Road, Delhi",
    season: "Winter",
    latitude: 28.5918,
    longitude: 77.2273,
    temperature: 14.5,
    humidity: 78,
    wind_speed: 4.2,
    visibility: 2.5,
    day: 15,
    month: 1,
    hour: 8,
    day_of_week: "Monday",
    is_weekend: 0,
    ...overrides,
  };
}

let ipCounter = 0;
/** A fresh client IP, so each test has its own rate-limit quota. */
export function freshIp(): string {
  ipCounter += 1;
  return `198.51.${Math.floor(ipCounter / 250)}.${ipCounter % 250}`;
}

export type Fetcher = (url: string, init?: RequestInit) => Promise<Response>;

/** The deployed Worker (its bundled model), through its own fetch handler. */
export const worker: Fetcher = (url, init) => exports.default.fetch(new Request(url, init));

export function postJson(
  fetcher: Fetcher,
  path: string,
  body: unknown,
  ip: string = freshIp(),
): Promise<Response> {
  return fetcher(`${BASE}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "cf-connecting-ip": ip },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** The same app with another model source (none, corrupt, a small test graph). */
export function workerWithModel(source: ModelSource): Fetcher {
  const app = createApp({ model: new ModelHost(source) });
  return async (url, init) => app.fetch(new Request(url, init), env);
}

/** Two stations 7.5 km apart, like the training data; visibility masked as in training. */
export const TEST_SPEC: PreprocessingSpec = {
  featureLayoutVersion: FEATURE_LAYOUT_VERSION,
  featureNames: [...FEATURE_NAMES],
  stations: [
    { name: "Lodhi Road, Delhi", latitude: 28.5918, longitude: 77.2273, aliases: ["DL039"] },
    { name: "Chandni Chowk, Delhi", latitude: 28.6562, longitude: 77.2273, aliases: ["DL040"] },
  ],
  featuresMissingInTraining: ["visibility_km"],
};

export function testArtifact(onnx: Uint8Array, version = "aqi-test"): ModelArtifact {
  return {
    version,
    modelPath: `test/${version}.onnx`,
    cardPath: `test/${version}.json`,
    onnx,
    preprocessing: TEST_SPEC,
    variant: "weather-only",
  };
}
