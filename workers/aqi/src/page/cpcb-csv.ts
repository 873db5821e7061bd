/**
 * A station's hourly readings as CPCB exports them (the CAAQMS "From Date",
 * "To Date", "PM2.5 (ug/m3)", ... CSV), turned into the `recent_hours` the
 * prediction API takes. Pure: text in, readings or messages out.
 *
 * The readings come out relative to the hour right after the newest one (its
 * `hours_before` is 1), which is the 1-hour-ahead request; a forecast further
 * ahead adds to every `hours_before`. CPCB's timestamps are Indian local time
 * without a zone; they are kept as wall-clock times (read as UTC), the way the
 * training data was built, so no zone arithmetic can shift an hour.
 */
import type { ReadingField, RecentHour } from "../domain/recent-hours.ts";

const HOUR_MS = 3_600_000;
/** The API takes readings at most this many hours before the predicted hour. */
const MAX_HOURS_BEFORE = 72;
/** Parse problems listed before the rest are only counted. */
const MAX_LISTED_PROBLEMS = 5;

/** The weather of the newest hour that reported it, in the API's units. */
export interface CsvWeather {
  temperature?: number;
  humidity?: number;
  /** km/h (CPCB reports m/s). */
  wind_speed?: number;
}

export interface CpcbReadings {
  /** Newest first; the newest has hours_before 1. */
  readonly recentHours: RecentHour[];
  /** The CSV line (1-based, the header is line 1) of each reading, in the same order. */
  readonly lines: number[];
  /** Start of the newest reading's hour, "YYYY-MM-DDTHH:00" local time. */
  readonly newestHourStart: string;
  readonly weather: CsvWeather;
  /** Rows left out: hours without any pollutant, and hours older than the API takes. */
  readonly skipped: { readonly empty: number; readonly older: number };
}

export type CsvResult =
  | { readonly ok: true; readonly value: CpcbReadings }
  | { readonly ok: false; readonly errors: string[] };

type WeatherField = keyof CsvWeather;

interface Column {
  readonly index: number;
  readonly header: string;
}

interface Layout {
  readonly from: Column;
  readonly pollutants: Partial<Record<ReadingField, Column>>;
  readonly weather: Partial<Record<WeatherField, Column & { readonly factor: number }>>;
}

/** Header names (unit removed, lower case, no spaces) of each pollutant, and the unit the API takes. */
const POLLUTANT_HEADERS: Record<ReadingField, { names: string[]; unit: string }> = {
  pm25: { names: ["pm2.5", "pm25"], unit: "ug/m3" },
  pm10: { names: ["pm10"], unit: "ug/m3" },
  no2: { names: ["no2"], unit: "ug/m3" },
  so2: { names: ["so2"], unit: "ug/m3" },
  nh3: { names: ["nh3"], unit: "ug/m3" },
  co: { names: ["co"], unit: "mg/m3" },
  o3: { names: ["ozone", "o3"], unit: "ug/m3" },
};

const WEATHER_HEADERS: Record<WeatherField, string[]> = {
  temperature: ["at", "temp", "temperature"],
  humidity: ["rh"],
  wind_speed: ["ws"],
};

/** How CPCB files write an hour without a value. */
const MISSING = new Set(["", "none", "na", "n/a", "nan", "null", "-"]);
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Splits CSV text into records (RFC 4180 quoting, CRLF or LF, a leading BOM ignored). */
export function csvRecords(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = "";
  let quoted = false;
  const source = text.replace(/^\uFEFF/, "");
  for (let i = 0; i < source.length; i += 1) {
    const char = source[i]!;
    if (quoted) {
      if (char === '"' && source[i + 1] === '"') {
        field += '"';
        i += 1;
      } else if (char === '"') quoted = false;
      else field += char;
    } else if (char === '"') quoted = true;
    else if (char === ",") {
      record.push(field);
      field = "";
    } else if (char === "\n" || char === "\r") {
      if (char === "\r" && source[i + 1] === "\n") i += 1;
      record.push(field);
      records.push(record);
      record = [];
      field = "";
    } else field += char;
  }
  if (field !== "" || record.length > 0) {
    record.push(field);
    records.push(record);
  }
  return records;
}

/** "PM2.5 (ug/m3)" -> name "pm2.5", unit "ug/m3". */
function headerParts(header: string): { name: string; unit: string | null } {
  const match = /^(.*?)\s*\(([^)]*)\)\s*$/.exec(header.trim());
  const name = (match ? match[1]! : header).trim().toLowerCase().replace(/\s+/g, "");
  const unit = match ? match[2]!.trim().toLowerCase().replace("µ", "u").replace("³", "3") : null;
  return { name, unit };
}

/** Where each column is, or why the header cannot be read. */
function readLayout(header: readonly string[]): { layout: Layout } | { errors: string[] } {
  const errors: string[] = [];
  let from: Column | undefined;
  const pollutants: Layout["pollutants"] = {};
  const weather: Layout["weather"] = {};
  header.forEach((text, index) => {
    const { name, unit } = headerParts(text);
    const column = { index, header: text.trim() };
    if (name === "fromdate") from ??= column;
    for (const [field, spec] of Object.entries(POLLUTANT_HEADERS) as [
      ReadingField,
      (typeof POLLUTANT_HEADERS)[ReadingField],
    ][]) {
      if (!spec.names.includes(name) || pollutants[field]) continue;
      if (unit !== null && unit !== spec.unit && unit !== spec.unit.replace("3", "^3")) {
        errors.push(
          `the column "${column.header}" is in ${unit}; the forecast takes ${text.trim().split(/\s*\(/)[0]} in ${spec.unit}, as CPCB exports it`,
        );
      }
      pollutants[field] = column;
    }
    for (const [field, names] of Object.entries(WEATHER_HEADERS) as [WeatherField, string[]][]) {
      if (!names.includes(name) || weather[field]) continue;
      const factor = field === "wind_speed" && unit !== "km/h" ? 3.6 : 1;
      weather[field] = { ...column, factor };
    }
  });
  if (!from) {
    errors.unshift(
      `the first line has no "From Date" column: it should be the header of a CPCB export, such as From Date,To Date,PM2.5 (ug/m3),PM10 (ug/m3),NO2 (ug/m3),...`,
    );
  }
  if (Object.keys(pollutants).length === 0) {
    errors.push(
      "the first line names no pollutant column: expected some of PM2.5, PM10, NO2, SO2, NH3, CO, Ozone (with or without their units)",
    );
  }
  return errors.length > 0 || !from ? { errors } : { layout: { from, pollutants, weather } };
}

const DATE_TIME =
  /^(?:(\d{4})-(\d{1,2})-(\d{1,2})|(\d{1,2})[-/](\d{1,2})[-/](\d{4}))[ T](\d{1,2}):(\d{2})(?::(\d{2}))?$/;

/** A CPCB time ("2022-01-19 07:00:00", "19-01-2022 07:00", "2022-01-19T07:00") as wall-clock ms, or why not. */
export function parseHour(text: string): { ms: number } | { error: string } {
  const match = DATE_TIME.exec(text.trim());
  if (!match) return { error: `"${text}" is not a date and time such as 2022-01-19 07:00:00` };
  const [year, month, day] = match[1]
    ? [Number(match[1]), Number(match[2]), Number(match[3])]
    : [Number(match[6]), Number(match[5]), Number(match[4])];
  const [hour, minute, second] = [Number(match[7]), Number(match[8]), Number(match[9] ?? 0)];
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  const date = new Date(ms);
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day || hour > 23) {
    return { error: `"${text}" is not a valid date and time` };
  }
  if (minute !== 0 || second !== 0) {
    return { error: `"${text}" does not start on a whole hour; hourly readings start at :00` };
  }
  return { ms };
}

/** "YYYY-MM-DDTHH:00" of wall-clock ms. */
export function hourText(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16);
}

interface Row {
  readonly line: number;
  readonly ms: number;
  readonly values: Partial<Record<ReadingField, number>>;
  readonly weather: CsvWeather;
}

/** One data line: its hour and numbers, or what is wrong with it. */
function readRow(record: readonly string[], line: number, layout: Layout): Row | string[] {
  const problems: string[] = [];
  const cell = (index: number) => (record[index] ?? "").trim();
  const number = (column: Column): number | undefined => {
    const text = cell(column.index);
    if (MISSING.has(text.toLowerCase())) return undefined;
    if (!NUMBER.test(text)) {
      problems.push(`line ${line}, ${column.header}: "${text}" is not a number`);
      return undefined;
    }
    return Number(text);
  };
  const time = parseHour(cell(layout.from.index));
  if ("error" in time) problems.push(`line ${line}, From Date: ${time.error}`);
  const values: Row["values"] = {};
  for (const [field, column] of Object.entries(layout.pollutants) as [ReadingField, Column][]) {
    const value = number(column);
    if (value !== undefined) values[field] = value;
  }
  const weather: CsvWeather = {};
  for (const [field, column] of Object.entries(layout.weather) as [
    WeatherField,
    Column & { factor: number },
  ][]) {
    const value = number(column);
    if (value !== undefined) weather[field] = Math.round(value * column.factor * 100) / 100;
  }
  if (problems.length > 0 || "error" in time) return problems;
  return { line, ms: time.ms, values, weather };
}

function listed(problems: readonly string[]): string[] {
  if (problems.length <= MAX_LISTED_PROBLEMS) return [...problems];
  const more = problems.length - MAX_LISTED_PROBLEMS;
  return [
    ...problems.slice(0, MAX_LISTED_PROBLEMS),
    `and ${more} more ${more === 1 ? "problem" : "problems"}`,
  ];
}

/** The rows with a pollutant, each hour once, newest first; or the repeated hours. */
function orderRows(rows: readonly Row[]): { rows: Row[] } | { errors: string[] } {
  const byHour = new Map<number, Row>();
  const errors: string[] = [];
  for (const row of rows) {
    const earlier = byHour.get(row.ms);
    if (earlier) {
      errors.push(
        `line ${row.line} repeats the hour ${hourText(row.ms).replace("T", " ")} of line ${earlier.line}`,
      );
    } else byHour.set(row.ms, row);
  }
  if (errors.length > 0) return { errors };
  return { rows: [...byHour.values()].sort((a, b) => b.ms - a.ms) };
}

/** The newest value of each weather column among the kept rows. */
function newestWeather(rows: readonly Row[]): CsvWeather {
  const weather: CsvWeather = {};
  for (const row of rows) {
    for (const field of Object.keys(row.weather) as WeatherField[]) {
      weather[field] ??= row.weather[field];
    }
  }
  return weather;
}

/** CPCB CSV -> `recent_hours` of the hour after the newest reading, or messages saying what to fix. */
export function parseCpcbCsv(text: string): CsvResult {
  const records = csvRecords(text).filter((record) => record.some((cell) => cell.trim() !== ""));
  const [header, ...data] = records;
  if (!header) return { ok: false, errors: ["the CSV is empty"] };
  const read = readLayout(header);
  if ("errors" in read) return { ok: false, errors: read.errors };
  const problems: string[] = [];
  const rows: Row[] = [];
  // Line numbers count blank lines too, so they match what an editor shows.
  const lineOf = lineNumbers(text, records.length);
  data.forEach((record, index) => {
    const row = readRow(record, lineOf[index + 1]!, read.layout);
    if (Array.isArray(row)) problems.push(...row);
    else rows.push(row);
  });
  if (problems.length > 0) return { ok: false, errors: listed(problems) };
  const withPollutant = rows.filter((row) => Object.keys(row.values).length > 0);
  if (withPollutant.length === 0) {
    return {
      ok: false,
      errors: [
        data.length === 0
          ? "the CSV has a header but no readings"
          : "no line has a pollutant value: every pollutant cell is empty",
      ],
    };
  }
  const ordered = orderRows(withPollutant);
  if ("errors" in ordered) return { ok: false, errors: listed(ordered.errors) };
  const newest = ordered.rows[0]!.ms;
  const kept = ordered.rows.filter((row) => (newest - row.ms) / HOUR_MS + 1 <= MAX_HOURS_BEFORE);
  return {
    ok: true,
    value: {
      recentHours: kept.map((row) => ({
        hours_before: (newest - row.ms) / HOUR_MS + 1,
        ...row.values,
      })),
      lines: kept.map((row) => row.line),
      newestHourStart: hourText(newest),
      weather: newestWeather(kept),
      skipped: {
        empty: rows.length - withPollutant.length,
        older: ordered.rows.length - kept.length,
      },
    },
  };
}

/** The 1-based text line of each non-blank record (records do not span lines in CPCB files). */
function lineNumbers(text: string, count: number): number[] {
  const lines = text.replace(/^\uFEFF/, "").split(/\r\n|\n|\r/);
  const numbers: number[] = [];
  lines.forEach((line, index) => {
    if (numbers.length < count && line.replace(/[",\s]/g, "") !== "") numbers.push(index + 1);
  });
  return numbers;
}
