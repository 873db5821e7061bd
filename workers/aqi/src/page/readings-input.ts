/**
 * What the forecast page's readings field holds: a CPCB CSV export, or the
 * JSON the API takes (a `recent_hours` array, or a request body carrying
 * one). Pure: it decides which, reads it, and says what is wrong in words a
 * person pasting a file can act on. JSON readings are handed on as they are
 * (only their hours are re-based), so the API's own validation judges them.
 */
import { findJsonSyntaxError } from "@edge-platform/shared/http/json-syntax";
import { type CsvWeather, hourText, parseCpcbCsv, parseHour } from "./cpcb-csv.ts";

export interface Readings {
  readonly format: "csv" | "json";
  /** The readings of the 1-hour-ahead request (newest hours_before 1 when they can be re-based). */
  readonly recentHours: unknown;
  /** How to name reading i in a message: its CSV line, or its place in the JSON array. */
  readonly labels: readonly string[];
  /** Start of the newest reading's hour, "YYYY-MM-DDTHH:00" wall-clock time. */
  readonly newestHourStart: string;
  readonly weather: CsvWeather;
  readonly notes: readonly string[];
}

export interface ReadingsProblem {
  readonly field: "readings" | "newest";
  readonly message: string;
}

export type ReadingsResult =
  | { readonly ok: true; readonly value: Readings }
  | { readonly ok: false; readonly problems: ReadingsProblem[] };

export const NO_READINGS =
  "Paste the station's readings (a CPCB CSV export or the API's recent_hours JSON), upload a file, or load a sample day";

function readCsv(text: string): ReadingsResult {
  const parsed = parseCpcbCsv(text);
  if (!parsed.ok) {
    return {
      ok: false,
      problems: parsed.errors.map((message) => ({ field: "readings", message: `CSV: ${message}` })),
    };
  }
  const { value } = parsed;
  const notes: string[] = [];
  if (value.skipped.empty > 0) {
    notes.push(
      `${value.skipped.empty} ${value.skipped.empty === 1 ? "hour" : "hours"} without any pollutant value left out`,
    );
  }
  if (value.skipped.older > 0) {
    notes.push(
      `${value.skipped.older} ${value.skipped.older === 1 ? "hour" : "hours"} older than 72 hours before the first forecast hour left out (the API takes no older readings)`,
    );
  }
  return {
    ok: true,
    value: {
      format: "csv",
      recentHours: value.recentHours,
      labels: value.lines.map((line) => `line ${line}`),
      newestHourStart: value.newestHourStart,
      weather: value.weather,
      notes,
    },
  };
}

/** Integer hours_before in every reading: the array can be re-based so its newest reading is 1 hour before. */
function rebase(readings: unknown): unknown {
  if (!Array.isArray(readings) || readings.length === 0) return readings;
  const hours = readings.map((reading) => {
    if (reading === null || typeof reading !== "object" || Array.isArray(reading)) return undefined;
    const hour = (reading as Record<string, unknown>).hours_before;
    // The API reads integer strings as integers (pydantic's lax mode), so they are hours too.
    return typeof hour === "string" && /^\s*[+-]?\d+\s*$/.test(hour) ? Number(hour) : hour;
  });
  if (!hours.every((hour) => typeof hour === "number" && Number.isInteger(hour))) return readings;
  const shift = 1 - Math.min(...(hours as number[]));
  return readings.map((reading, index) => ({
    ...(reading as Record<string, unknown>),
    hours_before: (hours[index] as number) + shift,
  }));
}

function readJson(text: string, newest: string): ReadingsResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    const syntax = findJsonSyntaxError(text);
    const where = syntax ? `: ${syntax.reason} (character ${syntax.position})` : "";
    return { ok: false, problems: [{ field: "readings", message: `JSON decode error${where}` }] };
  }
  const notes: string[] = [];
  let readings = value;
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    readings = (value as Record<string, unknown>).recent_hours;
    if (readings === undefined) {
      return {
        ok: false,
        problems: [
          {
            field: "readings",
            message:
              "JSON: the object has no recent_hours: paste the recent_hours array or a request body carrying it",
          },
        ],
      };
    }
    if (Object.keys(value).length > 1) {
      notes.push(
        "Only recent_hours was read from the JSON; the station, weather and times come from this form",
      );
    }
  }
  if (newest.trim() === "") {
    return {
      ok: false,
      problems: [
        {
          field: "newest",
          message: "JSON readings carry no clock time: give the hour the newest reading starts",
        },
      ],
    };
  }
  const hour = parseHour(newest.replace("T", " "));
  if ("error" in hour) return { ok: false, problems: [{ field: "newest", message: hour.error }] };
  const count = Array.isArray(readings) ? readings.length : 0;
  return {
    ok: true,
    value: {
      format: "json",
      recentHours: rebase(readings),
      labels: Array.from({ length: count }, (_, index) => `reading ${index + 1}`),
      newestHourStart: hourText(hour.ms),
      weather: {},
      notes,
    },
  };
}

/** The readings field (CSV or JSON, told apart by the first character) and the newest-hour field. */
export function readReadings(text: string, newest: string): ReadingsResult {
  const trimmed = text.trim();
  if (trimmed === "") return { ok: false, problems: [{ field: "readings", message: NO_READINGS }] };
  return trimmed.startsWith("[") || trimmed.startsWith("{")
    ? readJson(trimmed, newest)
    : readCsv(trimmed);
}
