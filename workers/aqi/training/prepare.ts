/**
 * Data preparation for the AQI model (run with Node 24, which strips types).
 *
 * Reads the sources, computes the hourly national AQI target with the domain
 * calculator, handles drift and missing data, encodes the features with the
 * domain preprocessing (the same code the Worker runs) and writes:
 *   <work-dir>/rows.csv   one line per station-hour with a valid AQI
 *   <work-dir>/meta.json  preprocessing spec, data-quality findings, calculator check
 *
 * Sources: by default the two CPCB hourly files (Chandni Chowk DL040, Lodhi
 * Road DL039) from ../shared/data/aqi/; with --kaggle-csv <path>, a CSV in the
 * original project's Kaggle schema instead.
 */

import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  AVERAGING_RULE,
  BAND_UPPER_CONCENTRATION,
  BAND_UPPER_INDEX,
  computeHourlyAqiSeries,
  type HourlyConcentrations,
  MIN_HOURS_FOR_8H_MAX,
  MIN_HOURS_FOR_24H_MEAN,
  type Pollutant,
} from "../src/domain/aqi-calculator.ts";
import { AQI_CATEGORIES } from "../src/domain/categories.ts";
import {
  DAYS_OF_WEEK,
  encodeFeatures,
  FEATURE_LAYOUT_VERSION,
  FEATURE_NAMES,
  type FeatureInput,
  type FeatureName,
  haversineKm,
  type PreprocessingSpec,
  SEASONS,
  type Season,
  seasonForMonth,
  type TrainingStation,
} from "../src/domain/features.ts";
import { itemAt } from "./arrays.ts";
import { checkCalculatorAgainstPublished } from "./calculator-check.ts";
import { cell, csvField, parseCsvRecords, parseOptionalNumber } from "./csv.ts";
import {
  type DriftFinding,
  detectTemperatureDrift,
  findCoverageGaps,
  PLAUSIBLE_RANGES,
  round2,
} from "./data-quality.ts";

const HOUR_MS = 3_600_000;
const M_PER_S_TO_KM_PER_H = 3.6;

export const REPO_ROOT = resolve(import.meta.dirname, "../../..");
export const DEFAULT_DATA_DIR = resolve(REPO_ROOT, "../shared/data/aqi");

export interface HourObservation {
  pollutants: HourlyConcentrations;
  temperature: number | null;
  humidity: number | null;
  windSpeedKmh: number | null;
  visibilityKm: number | null;
  /** Season given by the source (Kaggle schema), if any. */
  season: Season | null;
}

export interface StationSeries {
  station: TrainingStation;
  sourceFile: string;
  observations: Map<number, HourObservation>;
  temperatureSource: string;
}

export interface PrepareOptions {
  readonly seed: number;
  readonly workDir: string;
  readonly dataDir: string;
  readonly kaggleCsv: string | null;
  readonly onProgress?: (message: string) => void;
}

export interface PrepareSummary {
  readonly rows: number;
  readonly rowsPath: string;
  readonly metaPath: string;
}

/** "2020-11-13 14:00:00", "2020-11-13T14:00:00", "13-11-2020 14:00" -> hour start in ms, local time read as UTC. */
export function parseLocalHour(text: string): number | null {
  let match = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2})/.exec(text.trim());
  if (match)
    return Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]), Number(match[4]));
  match = /^(\d{2})-(\d{2})-(\d{4})[ T](\d{2})/.exec(text.trim());
  if (match)
    return Date.UTC(Number(match[3]), Number(match[2]) - 1, Number(match[1]), Number(match[4]));
  return null;
}

function inRange(value: number | null, range: { low: number; high: number }): number | null {
  return value !== null && value >= range.low && value <= range.high ? value : null;
}

function sha256(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

// ---------------------------------------------------------------- CPCB source

const CPCB_POLLUTANT_COLUMNS: Readonly<Record<Pollutant, string>> = {
  "PM2.5": "PM2.5 (ug/m3)",
  PM10: "PM10 (ug/m3)",
  NO2: "NO2 (ug/m3)",
  SO2: "SO2 (ug/m3)",
  NH3: "NH3 (ug/m3)",
  CO: "CO (mg/m3)",
  O3: "Ozone (ug/m3)",
};

function readWaqiCoordinates(
  dataDir: string,
  namePrefix: string,
): { latitude: number; longitude: number } {
  const records = parseCsvRecords(
    readFileSync(join(dataDir, "waqi_delhi_station_coordinates.csv"), "utf8"),
  );
  const record = records.find((row) => cell(row, "station").startsWith(namePrefix));
  if (!record)
    throw new Error(`no coordinates for ${namePrefix} in waqi_delhi_station_coordinates.csv`);
  return {
    latitude: Number(cell(record, "latitude")),
    longitude: Number(cell(record, "longitude")),
  };
}

function loadCpcbStation(path: string, station: TrainingStation): StationSeries {
  const observations = new Map<number, HourObservation>();
  for (const record of parseCsvRecords(readFileSync(path, "utf8"))) {
    const timeMs = parseLocalHour(cell(record, "From Date"));
    if (timeMs === null) continue;
    const pollutants: HourlyConcentrations = {};
    for (const [pollutant, column] of Object.entries(CPCB_POLLUTANT_COLUMNS) as [
      Pollutant,
      string,
    ][]) {
      const value = parseOptionalNumber(cell(record, column));
      pollutants[pollutant] = value !== null && value >= 0 ? value : null;
    }
    const windMs = parseOptionalNumber(cell(record, "WS (m/s)"));
    observations.set(timeMs, {
      pollutants,
      temperature: inRange(
        parseOptionalNumber(cell(record, "AT (degree C)")),
        PLAUSIBLE_RANGES.temperature,
      ),
      humidity: inRange(parseOptionalNumber(cell(record, "RH (%)")), PLAUSIBLE_RANGES.humidity),
      windSpeedKmh: inRange(
        windMs === null ? null : windMs * M_PER_S_TO_KM_PER_H,
        PLAUSIBLE_RANGES.windSpeedKmh,
      ),
      visibilityKm: null, // CPCB exports have no visibility
      season: null,
    });
  }
  return {
    station,
    sourceFile: basename(path),
    observations,
    temperatureSource: "station thermometer (AT)",
  };
}

export function loadCpcbSources(dataDir: string): StationSeries[] {
  const lodhiRoad = readWaqiCoordinates(dataDir, "Lodhi Road");
  return [
    loadCpcbStation(join(dataDir, "cpcb_hourly_DL040_ChandniChowk_IITM.csv"), {
      name: "Chandni Chowk, Delhi",
      // Not in the coordinate files; the data README gives "about 28.6567, 77.2273".
      latitude: 28.6567,
      longitude: 77.2273,
      aliases: [
        "Chandni Chowk",
        "Chandni Chowk, Delhi - IITM",
        "Chandni Chowk, Delhi, Delhi, India",
        "DL040",
      ],
    }),
    loadCpcbStation(join(dataDir, "cpcb_hourly_DL039_LodhiRoad_IITM.csv"), {
      name: "Lodhi Road, Delhi",
      latitude: lodhiRoad.latitude,
      longitude: lodhiRoad.longitude,
      aliases: [
        "Lodhi Road",
        "Lodhi Road, Delhi - IITM",
        "Lodhi Road, Delhi, Delhi, India",
        "DL039",
      ],
    }),
  ];
}

// ---------------------------------------------------------------- Kaggle-schema source

const KAGGLE_POLLUTANT_COLUMNS: Readonly<Record<Pollutant, string | null>> = {
  "PM2.5": "pm25",
  PM10: "pm10",
  NO2: "no2",
  SO2: "so2",
  NH3: null, // not in the schema
  CO: "co",
  O3: "o3",
};

const KAGGLE_REQUIRED_COLUMNS = [
  "datetime",
  "station",
  "latitude",
  "longitude",
  "pm25",
  "pm10",
  "no2",
  "so2",
  "co",
  "o3",
  "temperature",
  "humidity",
  "wind_speed",
  "visibility",
];

function parseSeasonLabel(text: string | undefined): Season | null {
  if (!text) return null;
  const key = text
    .trim()
    .toLowerCase()
    .replace(/[\s_]+/g, "-");
  return SEASONS.find((season) => season.toLowerCase() === key) ?? null;
}

/**
 * The original project's Kaggle schema (contract section 7.1). Units as that
 * dataset documents them and the service expects: pollutants in ug/m3 except
 * CO in mg/m3, temperature C, humidity %, wind speed km/h, visibility km.
 * Its `aqi` column is not used as the target: the target is recomputed with
 * the national method from the pollutant columns, like for the CPCB files.
 */
function loadKaggleSource(path: string): StationSeries[] {
  const records = parseCsvRecords(readFileSync(path, "utf8"));
  if (records.length === 0) throw new Error(`${path} has no rows`);
  const missing = KAGGLE_REQUIRED_COLUMNS.filter((column) => !(column in itemAt(records, 0)));
  if (missing.length > 0)
    throw new Error(`${path} lacks Kaggle-schema columns: ${missing.join(", ")}`);
  interface StationAccumulator {
    observations: Map<number, HourObservation>;
    latitudes: number[];
    longitudes: number[];
  }
  const byStation = new Map<string, StationAccumulator>();
  for (const record of records) {
    const timeMs = parseLocalHour(cell(record, "datetime"));
    if (timeMs === null || cell(record, "station") === "") continue;
    const entry: StationAccumulator = byStation.get(cell(record, "station")) ?? {
      observations: new Map(),
      latitudes: [],
      longitudes: [],
    };
    byStation.set(cell(record, "station"), entry);
    const latitude = parseOptionalNumber(cell(record, "latitude"));
    const longitude = parseOptionalNumber(cell(record, "longitude"));
    if (latitude !== null && longitude !== null) {
      entry.latitudes.push(latitude);
      entry.longitudes.push(longitude);
    }
    const pollutants: HourlyConcentrations = {};
    for (const [pollutant, column] of Object.entries(KAGGLE_POLLUTANT_COLUMNS) as [
      Pollutant,
      string | null,
    ][]) {
      const value = column === null ? null : parseOptionalNumber(cell(record, column));
      pollutants[pollutant] = value !== null && value >= 0 ? value : null;
    }
    const visibility = parseOptionalNumber(cell(record, "visibility"));
    entry.observations.set(timeMs, {
      pollutants,
      temperature: inRange(
        parseOptionalNumber(cell(record, "temperature")),
        PLAUSIBLE_RANGES.temperature,
      ),
      humidity: inRange(parseOptionalNumber(cell(record, "humidity")), PLAUSIBLE_RANGES.humidity),
      windSpeedKmh: inRange(
        parseOptionalNumber(cell(record, "wind_speed")),
        PLAUSIBLE_RANGES.windSpeedKmh,
      ),
      visibilityKm: visibility !== null && visibility >= 0 ? visibility : null,
      season: parseSeasonLabel(cell(record, "season")),
    });
  }
  const median = (values: number[]): number => {
    const sorted = [...values].sort((a, b) => a - b);
    return itemAt(sorted, Math.floor(sorted.length / 2));
  };
  return [...byStation.entries()]
    .filter(([, entry]) => entry.latitudes.length > 0)
    .map(([name, entry]) => ({
      station: {
        name,
        latitude: median(entry.latitudes),
        longitude: median(entry.longitudes),
        aliases: [],
      },
      sourceFile: basename(path),
      observations: entry.observations,
      temperatureSource: "temperature column",
    }));
}

// ---------------------------------------------------------------- missing temperature

/**
 * A station without any usable temperature (Lodhi Road: its AT column is
 * empty) borrows, hour by hour, the trusted reading of the nearest station
 * that has one. Chandni Chowk is 7.4 km away in the same city; hourly air
 * temperature varies little over that distance compared with its daily and
 * seasonal swings, and the service will receive a real local temperature.
 */
function borrowMissingTemperature(
  series: StationSeries[],
): { station: string; from: string; distanceKm: number; hoursFilled: number }[] {
  const withTemperature = series.filter((entry) =>
    [...entry.observations.values()].some((observation) => observation.temperature !== null),
  );
  const findings: { station: string; from: string; distanceKm: number; hoursFilled: number }[] = [];
  for (const entry of series) {
    if (withTemperature.includes(entry) || withTemperature.length === 0) continue;
    let donor = itemAt(withTemperature, 0);
    let donorDistance = Number.POSITIVE_INFINITY;
    for (const candidate of withTemperature) {
      const distance = haversineKm(
        entry.station.latitude,
        entry.station.longitude,
        candidate.station.latitude,
        candidate.station.longitude,
      );
      if (distance < donorDistance) {
        donor = candidate;
        donorDistance = distance;
      }
    }
    let hoursFilled = 0;
    for (const [timeMs, observation] of entry.observations) {
      const donorTemperature = donor.observations.get(timeMs)?.temperature ?? null;
      if (donorTemperature !== null) {
        observation.temperature = donorTemperature;
        hoursFilled += 1;
      }
    }
    entry.temperatureSource = `borrowed hour by hour from ${donor.station.name} (${round2(donorDistance)} km), after its drift exclusion`;
    findings.push({
      station: entry.station.name,
      from: donor.station.name,
      distanceKm: round2(donorDistance),
      hoursFilled,
    });
  }
  return findings;
}

// ---------------------------------------------------------------- main

export function prepare(options: PrepareOptions): PrepareSummary {
  const progress = options.onProgress ?? (() => {});
  mkdirSync(options.workDir, { recursive: true });

  progress("checking the AQI calculator against published daily AQI");
  // The check needs the shared data's published-AQI file; a Kaggle-schema retrain elsewhere may not have it.
  const publishedAqiPath = join(options.dataDir, "rohanrao_station_day_subset.csv");
  const calculatorCheck = existsSync(publishedAqiPath)
    ? checkCalculatorAgainstPublished(publishedAqiPath)
    : null;

  progress(
    options.kaggleCsv
      ? `reading Kaggle-schema CSV ${options.kaggleCsv}`
      : "reading CPCB hourly files",
  );
  const sourceFiles = options.kaggleCsv
    ? [resolve(options.kaggleCsv)]
    : [
        join(options.dataDir, "cpcb_hourly_DL040_ChandniChowk_IITM.csv"),
        join(options.dataDir, "cpcb_hourly_DL039_LodhiRoad_IITM.csv"),
        join(options.dataDir, "waqi_delhi_station_coordinates.csv"),
      ];
  const series = (
    options.kaggleCsv ? loadKaggleSource(options.kaggleCsv) : loadCpcbSources(options.dataDir)
  ).sort((a, b) => a.station.name.localeCompare(b.station.name));

  progress("detecting thermometer drift");
  const driftFindings: DriftFinding[] = [];
  for (const entry of series) {
    const readings = [...entry.observations.entries()].map(([timeMs, observation]) => ({
      timeMs,
      value: observation.temperature,
    }));
    const finding = detectTemperatureDrift(entry.station.name, readings);
    driftFindings.push(finding);
    if (finding.detected && finding.driftStartDate !== null) {
      const driftStartMs = Date.parse(`${finding.driftStartDate}T00:00:00Z`);
      for (const [timeMs, observation] of entry.observations) {
        if (timeMs >= driftStartMs) observation.temperature = null;
      }
      entry.temperatureSource += `, readings from ${finding.driftStartDate} excluded (drift)`;
    }
  }
  const temperatureBorrowing = borrowMissingTemperature(series);

  progress("computing the hourly national AQI");
  const stations = series.map((entry) => entry.station);
  interface PreparedRow {
    timeMs: number;
    stationIndex: number;
    aqi: number;
    dominant: string;
    input: FeatureInput;
  }
  const rows: PreparedRow[] = [];
  const perStation: Record<string, unknown>[] = [];
  series.forEach((entry, stationIndex) => {
    const times = [...entry.observations.keys()].sort((a, b) => a - b);
    const firstHour = itemAt(times, 0);
    const lastHour = itemAt(times, times.length - 1);
    const hourCount = Math.round((lastHour - firstHour) / HOUR_MS) + 1;
    const hourly: HourlyConcentrations[] = [];
    for (let hour = 0; hour < hourCount; hour += 1) {
      hourly.push(entry.observations.get(firstHour + hour * HOUR_MS)?.pollutants ?? {});
    }
    const results = computeHourlyAqiSeries(hourly);
    const validTimes: number[] = [];
    const invalidReasons: Record<string, number> = {};
    results.forEach((result, hour) => {
      const timeMs = firstHour + hour * HOUR_MS;
      const observation = entry.observations.get(timeMs);
      if (result.aqi === null || observation === undefined) {
        const reason = result.invalidReason ?? "hour absent from the file";
        invalidReasons[reason] = (invalidReasons[reason] ?? 0) + 1;
        return;
      }
      validTimes.push(timeMs);
      const date = new Date(timeMs);
      const month = date.getUTCMonth() + 1;
      const dayOfWeekIndex = (date.getUTCDay() + 6) % 7;
      rows.push({
        timeMs,
        stationIndex,
        aqi: result.aqi,
        dominant: result.dominantPollutant ?? "",
        input: {
          station: entry.station.name,
          season: observation.season ?? seasonForMonth(month),
          latitude: entry.station.latitude,
          longitude: entry.station.longitude,
          temperature: observation.temperature,
          humidity: observation.humidity,
          wind_speed: observation.windSpeedKmh,
          visibility: observation.visibilityKm,
          day: date.getUTCDate(),
          month,
          hour: date.getUTCHours(),
          day_of_week: itemAt(DAYS_OF_WEEK, dayOfWeekIndex),
          is_weekend: dayOfWeekIndex >= 5 ? 1 : 0,
        },
      });
    });
    const stationRows = rows.filter((row) => row.stationIndex === stationIndex);
    const countPresent = (pick: (input: FeatureInput) => number | null): number =>
      stationRows.filter((row) => pick(row.input) !== null).length;
    perStation.push({
      station: entry.station.name,
      sourceFile: entry.sourceFile,
      latitude: entry.station.latitude,
      longitude: entry.station.longitude,
      hoursInFile: entry.observations.size,
      hoursWithValidAqi: validTimes.length,
      hoursWithoutAqi: invalidReasons,
      firstHour: new Date(firstHour).toISOString().slice(0, 13).replace("T", " "),
      lastHour: new Date(lastHour).toISOString().slice(0, 13).replace("T", " "),
      gapsOfAtLeast14Days: findCoverageGaps(validTimes, 14),
      temperatureSource: entry.temperatureSource,
      targetRowsWith: {
        temperature: countPresent((input) => input.temperature),
        humidity: countPresent((input) => input.humidity),
        wind_speed: countPresent((input) => input.wind_speed),
        visibility: countPresent((input) => input.visibility),
      },
    });
  });
  rows.sort((a, b) => a.timeMs - b.timeMs || a.stationIndex - b.stationIndex);
  if (rows.length === 0) throw new Error("no station-hour has a valid AQI");

  // A feature with no value in any training row gets no split; mark it so serving encodes it the same way.
  const weatherFeatures: [FeatureName, (input: FeatureInput) => number | null][] = [
    ["temperature_c", (input) => input.temperature],
    ["humidity_pct", (input) => input.humidity],
    ["wind_speed_kmh", (input) => input.wind_speed],
    ["visibility_km", (input) => input.visibility],
  ];
  const featuresMissingInTraining = weatherFeatures
    .filter(([, pick]) => rows.every((row) => pick(row.input) === null))
    .map(([name]) => name);
  const spec: PreprocessingSpec = {
    featureLayoutVersion: FEATURE_LAYOUT_VERSION,
    featureNames: [...FEATURE_NAMES],
    stations,
    featuresMissingInTraining,
  };

  progress(`encoding ${rows.length} rows with the shared preprocessing`);
  const rawColumns = [
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
  ] as const;
  const header = [
    "time_ms",
    "station_index",
    "aqi",
    "dominant_pollutant",
    ...rawColumns,
    ...FEATURE_NAMES.map((name) => `f:${name}`),
  ];
  const lines = [header.join(",")];
  for (const row of rows) {
    const features = encodeFeatures(row.input, spec);
    lines.push(
      [
        row.timeMs,
        row.stationIndex,
        row.aqi,
        row.dominant,
        ...rawColumns.map((column) => row.input[column]),
        ...features,
      ]
        .map((value) => csvField(value as string | number | null))
        .join(","),
    );
  }
  const rowsPath = join(options.workDir, "rows.csv");
  writeFileSync(rowsPath, `${lines.join("\n")}\n`);

  const meta = {
    seed: options.seed,
    preparedAt: new Date().toISOString(),
    source: options.kaggleCsv ? "kaggle-schema-csv" : "cpcb-hourly",
    sourceFiles: sourceFiles.map((path) => ({ file: basename(path), sha256: sha256(path) })),
    rows: rows.length,
    firstHour: new Date(itemAt(rows, 0).timeMs).toISOString().slice(0, 13).replace("T", " "),
    lastHour: new Date(itemAt(rows, rows.length - 1).timeMs)
      .toISOString()
      .slice(0, 13)
      .replace("T", " "),
    preprocessing: spec,
    categories: AQI_CATEGORIES,
    target: {
      definition:
        "national (CPCB) AQI per station-hour: sub-indices of 24-hour means of PM2.5, PM10, NO2, SO2, NH3 and 8-hour maxima of CO and O3 " +
        "(windows ending at the hour), AQI = largest sub-index capped at 500, only when >= 3 pollutants incl. PM2.5 or PM10 have data",
      averaging: AVERAGING_RULE,
      minimumHours: { "24h-mean": MIN_HOURS_FOR_24H_MEAN, "8h-max": MIN_HOURS_FOR_8H_MAX },
      bandUpperIndex: BAND_UPPER_INDEX,
      bandUpperConcentration: BAND_UPPER_CONCENTRATION,
      units: "ug/m3, CO mg/m3",
    },
    dataQuality: {
      stations: perStation,
      temperatureDrift: driftFindings,
      temperatureBorrowing,
      featuresMissingInTraining,
      plausibleRanges: PLAUSIBLE_RANGES,
      windSpeedConversion: options.kaggleCsv
        ? "none (Kaggle schema is km/h)"
        : "CPCB WS m/s x 3.6 -> km/h",
      visibility: options.kaggleCsv
        ? "from the CSV"
        : "no source has visibility; the column is all-missing in training, so the spec encodes it as missing at serving time too and the model ignores it",
    },
    calculatorCheck,
  };
  const metaPath = join(options.workDir, "meta.json");
  writeFileSync(metaPath, `${JSON.stringify(meta, null, 2)}\n`);
  return { rows: rows.length, rowsPath, metaPath };
}

// import.meta.main exists from Node 24.2; the argv comparison covers Node 22.
if (import.meta.main ?? process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      seed: { type: "string", default: "42" },
      "work-dir": { type: "string", default: join(tmpdir(), "aqi-training") },
      "data-dir": { type: "string", default: DEFAULT_DATA_DIR },
      "kaggle-csv": { type: "string" },
    },
  });
  const summary = prepare({
    seed: Number(values.seed),
    workDir: resolve(values["work-dir"]),
    dataDir: resolve(values["data-dir"]),
    kaggleCsv: values["kaggle-csv"] ?? null,
    onProgress: (message) => console.log(`prepare: ${message}`),
  });
  console.log(`prepare: wrote ${summary.rows} rows to ${summary.rowsPath}`);
}
