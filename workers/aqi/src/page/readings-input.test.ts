import { describe, expect, it } from "vitest";
import { NO_READINGS, readReadings } from "./readings-input.ts";

describe("the readings field", () => {
  it("JSON readings keep their spacing, newest 1 hour before the first forecast hour", () => {
    const result = readReadings(
      '[{"hours_before": 3, "pm25": 80}, {"hours_before": "5", "pm10": 90}]',
      "2022-01-19T07:00",
    );
    expect(result).toEqual({
      ok: true,
      value: {
        format: "json",
        recentHours: [
          { hours_before: 1, pm25: 80 },
          { hours_before: 3, pm10: 90 },
        ],
        labels: ["reading 1", "reading 2"],
        newestHourStart: "2022-01-19T07:00",
        weather: {},
        notes: [],
      },
    });
  });

  it("takes recent_hours out of a request body, and hands on JSON it cannot place unchanged", () => {
    const body = readReadings(
      '{"station": "x", "recent_hours": [{"hours_before": 2.5}]}',
      "2022-01-19T07:00",
    );
    expect(body.ok && body.value.recentHours).toEqual([{ hours_before: 2.5 }]);
    expect(body.ok && body.value.notes).toEqual([
      "Only recent_hours was read from the JSON; the station, weather and times come from this form",
    ]);
    const scalar = readReadings("[1, 2]", "2022-01-19T07:00");
    expect(scalar.ok && scalar.value.recentHours).toEqual([1, 2]);
  });

  it("says what is missing or malformed, on the field it belongs to", () => {
    expect(readReadings("  ", "")).toEqual({
      ok: false,
      problems: [{ field: "readings", message: NO_READINGS }],
    });
    expect(readReadings('[{"hours_before": 1,}]', "2022-01-19T07:00")).toEqual({
      ok: false,
      problems: [
        {
          field: "readings",
          message:
            "JSON decode error: Expecting property name enclosed in double quotes (character 20)",
        },
      ],
    });
    expect(readReadings('[{"hours_before": 1, "pm25": 5}]', "")).toEqual({
      ok: false,
      problems: [
        {
          field: "newest",
          message: "JSON readings carry no clock time: give the hour the newest reading starts",
        },
      ],
    });
    expect(readReadings("From Date,PM2.5\n2022-01-19 07:00,abc", "")).toEqual({
      ok: false,
      problems: [{ field: "readings", message: 'CSV: line 2, PM2.5: "abc" is not a number' }],
    });
  });
});
