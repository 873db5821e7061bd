/**
 * The API's 422 entries for a forecast batch, placed beside the form field
 * they are about, with the API's own message. One batch holds a request per
 * hour ahead, so the same mistake comes back once per hour: each is shown
 * once, as the first hour's request reported it.
 */
import type { FastApiValidationIssue } from "@edge-platform/shared/http/error-shapes/fastapi";
import { WEATHER_FIELDS } from "./forecast-requests.ts";

export const FORM_FIELDS = [
  "sample",
  "station",
  "readings",
  "newest",
  ...WEATHER_FIELDS,
  "hours",
] as const;
export type FormField = (typeof FORM_FIELDS)[number];

export type FieldErrors = Partial<Record<FormField | "form", string[]>>;

/** Request fields the page derives from the station or the newest hour rather than asking for. */
const FIELD_OF: Record<string, FormField> = {
  station: "station",
  latitude: "station",
  longitude: "station",
  season: "newest",
  day: "newest",
  month: "newest",
  hour: "newest",
  day_of_week: "newest",
  is_weekend: "newest",
  recent_hours: "readings",
  ...Object.fromEntries(WEATHER_FIELDS.map((field) => [field, field])),
};

export function addError(errors: FieldErrors, field: FormField | "form", message: string): void {
  const list = errors[field] ?? [];
  if (!list.includes(message)) list.push(message);
  errors[field] = list;
}

/**
 * `issues` from the batch (loc ["body", "requests", i, ...]); `readingIndex[i][k]`
 * is which given reading the request's k-th reading is, `labels` how to name it.
 */
export function fieldErrorsOf(
  issues: readonly FastApiValidationIssue[],
  readingIndex: readonly (readonly number[])[],
  labels: readonly string[],
): FieldErrors {
  const errors: FieldErrors = {};
  const seen = new Set<string>();
  for (const issue of issues) {
    const [, list, item, ...rest] = issue.loc;
    if (list !== "requests" || typeof item !== "number") {
      addError(errors, "form", issue.msg);
      continue;
    }
    const [name, reading, key] = rest;
    const field = rest.length === 0 ? "station" : FIELD_OF[String(name)];
    let where = "";
    let seenKey = JSON.stringify(rest);
    if (name === "recent_hours" && typeof reading === "number") {
      const given = readingIndex[item]?.[reading] ?? reading;
      where = `${labels[given] ?? `reading ${given + 1}`}${key === undefined ? "" : `, ${key}`}: `;
      seenKey = JSON.stringify(["recent_hours", given, ...rest.slice(2)]);
    }
    if (seen.has(seenKey)) continue;
    seen.add(seenKey);
    addError(errors, field ?? "form", `${where}${issue.msg}`);
  }
  return errors;
}
