/**
 * Training rows of the recent-hours model, built the way the service builds
 * them: for a target station-hour (a row of prepare.ts's rows.csv) and a
 * horizon h, the request's `recent_hours` are the station's readings 72..h
 * hours before it (hours without any reading left out), checked by
 * `recentHoursIssues` and encoded by `encodeHistoryFeatures`, the functions the
 * Worker calls.
 *
 * Per target hour: every evaluation horizon (1, 3, 6, 12, 24, 48 h) whose
 * newest hour has a reading, plus RANDOM_HORIZONS_PER_HOUR horizons drawn from
 * 1..48 (so the model sees every horizon the service accepts).
 *
 * Writes to the work directory:
 *   history.f32        float32 [rows, HISTORY_FEATURE_COUNT], row-major (NaN = missing)
 *   history-rows.csv   per row: data_row (0-based line of rows.csv), horizon, evaluation (1 = an
 *                      evaluation horizon), aqi_at_latest_reading, window_arithmetic_computed
 *   history-requests.json  full requests (with recent_hours) of HOLDOUT_CANDIDATES rows, for the
 *                      trainer's holdout file
 *   history-meta.json  feature names, counts
 */

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { HourlyConcentrations } from "../src/domain/aqi-calculator.ts";
import type { FeatureInput, PreprocessingSpec } from "../src/domain/features.ts";
import {
  encodeHistoryFeatures,
  HISTORY_COLUMNS,
  HISTORY_FEATURE_COUNT,
  HISTORY_FEATURE_NAMES,
  MAX_HORIZON_HOURS,
  MAX_RECENT_HOURS,
  POLLUTANT_OF_FIELD,
  recentHoursIssues,
} from "../src/domain/history.ts";
import { READING_FIELDS, type RecentHour } from "../src/domain/recent-hours.ts";
import { parseCsv } from "./csv.ts";
import { loadCpcbSources } from "./prepare.ts";

const HOUR_MS = 3_600_000;
export const EVALUATION_HORIZONS = [1, 3, 6, 12, 24, 48] as const;
const RANDOM_HORIZONS_PER_HOUR = 3;
const HOLDOUT_CANDIDATES = 600;

/** Deterministic uniform numbers in [0, 1) (mulberry32). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function reading(hoursBefore: number, concentrations: HourlyConcentrations): RecentHour | null {
  const entry: Record<string, number> = { hours_before: hoursBefore };
  let any = false;
  for (const field of READING_FIELDS) {
    const value = concentrations[POLLUTANT_OF_FIELD[field]];
    if (typeof value === "number" && Number.isFinite(value)) {
      entry[field] = value;
      any = true;
    }
  }
  return any ? (entry as RecentHour) : null;
}

export interface HistorySummary {
  readonly rows: number;
  readonly evaluationRows: number;
  readonly skippedNoNewestReading: number;
  readonly skippedNoAqiAtNewest: number;
}

export function prepareHistory(dataDir: string, workDir: string, seed: number): HistorySummary {
  const meta = JSON.parse(readFileSync(join(workDir, "meta.json"), "utf8")) as {
    preprocessing: PreprocessingSpec;
  };
  const spec = meta.preprocessing;
  const series = loadCpcbSources(dataDir).sort((a, b) =>
    a.station.name.localeCompare(b.station.name),
  );
  const [header, ...records] = parseCsv(readFileSync(join(workDir, "rows.csv"), "utf8"));
  if (!header) throw new Error("rows.csv is empty");
  const column = (name: string): number => {
    const index = header.indexOf(name);
    if (index < 0) throw new Error(`rows.csv lacks ${name}`);
    return index;
  };
  const at = {
    time: column("time_ms"),
    station: column("station_index"),
    raw: [
      "station",
      "season",
      "latitude",
      "longitude",
      "temperature",
      "humidity",
      "wind_speed",
      "visibility",
      "day",
      "month",
      "hour",
      "day_of_week",
      "is_weekend",
    ].map((name) => [name, column(name)] as const),
  };
  const next = random(seed);
  const chunks: Float32Array[] = [];
  const index: string[] = [
    "data_row,horizon,evaluation,aqi_at_latest_reading,window_arithmetic_computed",
  ];
  const requests: { featureRow: number; dataRow: number; request: FeatureInput }[] = [];
  let rows = 0;
  let evaluationRows = 0;
  let skippedNoNewestReading = 0;
  let skippedNoAqiAtNewest = 0;
  const holdoutEvery = Math.max(1, Math.floor(records.length / HOLDOUT_CANDIDATES));

  records.forEach((record, dataRow) => {
    const timeMs = Number(record[at.time]);
    const observations = series[Number(record[at.station])]?.observations;
    if (!observations) throw new Error(`no station ${record[at.station]}`);
    const raw: Record<string, string> = {};
    for (const [name, position] of at.raw) raw[name] = record[position] ?? "";
    const weather = (text: string | undefined): number | null =>
      text === undefined || text === "" ? null : Number(text);
    const base: FeatureInput = {
      station: raw.station ?? "",
      season: raw.season as FeatureInput["season"],
      latitude: Number(raw.latitude),
      longitude: Number(raw.longitude),
      temperature: weather(raw.temperature),
      humidity: weather(raw.humidity),
      wind_speed: weather(raw.wind_speed),
      visibility: weather(raw.visibility),
      day: Number(raw.day),
      month: Number(raw.month),
      hour: Number(raw.hour),
      day_of_week: raw.day_of_week as FeatureInput["day_of_week"],
      is_weekend: raw.is_weekend === "1" ? 1 : 0,
    };
    // Every reading of the 72 hours before the target hour.
    const history: (RecentHour | null)[] = [null];
    for (let hoursBefore = 1; hoursBefore <= MAX_RECENT_HOURS; hoursBefore += 1) {
      const observation = observations.get(timeMs - hoursBefore * HOUR_MS);
      history.push(observation ? reading(hoursBefore, observation.pollutants) : null);
    }
    const horizons = new Map<number, boolean>();
    for (let draw = 0; draw < RANDOM_HORIZONS_PER_HOUR; draw += 1) {
      horizons.set(1 + Math.floor(next() * MAX_HORIZON_HOURS), false);
    }
    for (const horizon of EVALUATION_HORIZONS) horizons.set(horizon, true);
    const wantHoldout = dataRow % holdoutEvery === 0;
    for (const [horizon, evaluation] of [...horizons.entries()].sort((a, b) => a[0] - b[0])) {
      if (history[horizon] === null) {
        skippedNoNewestReading += 1;
        continue;
      }
      const recentHours = history
        .slice(horizon)
        .filter((entry): entry is RecentHour => entry !== null);
      if (recentHoursIssues(recentHours, ["recent_hours"]).length > 0) {
        skippedNoAqiAtNewest += 1;
        continue;
      }
      const input: FeatureInput = { ...base, recent_hours: recentHours };
      const features = encodeHistoryFeatures(input, spec);
      chunks.push(Float32Array.from(features));
      const latest = features[HISTORY_FEATURE_NAMES.indexOf("aqi_at_latest_reading")];
      const computed = horizon < 24 ? 1 : 0;
      index.push(`${dataRow},${horizon},${evaluation ? 1 : 0},${latest},${computed}`);
      if (wantHoldout && evaluation && requests.length < HOLDOUT_CANDIDATES * 6) {
        requests.push({ featureRow: rows, dataRow, request: input });
      }
      rows += 1;
      if (evaluation) evaluationRows += 1;
    }
  });

  const matrix = new Float32Array(rows * HISTORY_FEATURE_COUNT);
  chunks.forEach((chunk, row) => {
    matrix.set(chunk, row * HISTORY_FEATURE_COUNT);
  });
  writeFileSync(join(workDir, "history.f32"), new Uint8Array(matrix.buffer));
  writeFileSync(join(workDir, "history-rows.csv"), `${index.join("\n")}\n`);
  writeFileSync(join(workDir, "history-requests.json"), JSON.stringify(requests));
  const summary = { rows, evaluationRows, skippedNoNewestReading, skippedNoAqiAtNewest };
  writeFileSync(
    join(workDir, "history-meta.json"),
    `${JSON.stringify(
      {
        featureNames: HISTORY_FEATURE_NAMES,
        historyColumns: HISTORY_COLUMNS,
        evaluationHorizons: EVALUATION_HORIZONS,
        randomHorizonsPerHour: RANDOM_HORIZONS_PER_HOUR,
        ...summary,
      },
      null,
      2,
    )}\n`,
  );
  return summary;
}

if (import.meta.main) {
  const { parseArgs } = await import("node:util");
  const { DEFAULT_DATA_DIR } = await import("./prepare.ts");
  const { values } = parseArgs({
    options: {
      seed: { type: "string", default: "42" },
      "work-dir": { type: "string" },
      "data-dir": { type: "string", default: DEFAULT_DATA_DIR },
    },
  });
  if (!values["work-dir"]) throw new Error("--work-dir (with prepare.ts's rows.csv) is required");
  console.log(prepareHistory(values["data-dir"], values["work-dir"], Number(values.seed)));
}
