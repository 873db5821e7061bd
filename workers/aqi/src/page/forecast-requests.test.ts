import { describe, expect, it } from "vitest";
import type { TrainingStation } from "../domain/features.ts";
import { fieldErrorsOf } from "./field-errors.ts";
import { calendarOf, forecastBatch } from "./forecast-requests.ts";

const STATION: TrainingStation = {
  name: "Lodhi Road, Delhi",
  latitude: 28.5897,
  longitude: 77.2219,
  aliases: [],
};
const WEATHER = { temperature: " 14.5 ", humidity: "80", wind_speed: "", visibility: "4" };

describe("forecast batch", () => {
  it("one request per hour ahead, each with its own calendar and the readings moved back", () => {
    const batch = forecastBatch({
      station: STATION,
      newestHourStart: "2022-12-31T22:00",
      hours: 3,
      weather: WEATHER,
      recentHours: [
        { hours_before: 1, pm25: 100 },
        { hours_before: 2, pm25: 90 },
      ],
    });
    expect(batch.hourStarts).toEqual(["2022-12-31T23:00", "2023-01-01T00:00", "2023-01-01T01:00"]);
    const [first, second] = batch.body.requests;
    // Typed values go as typed (trimmed); a blank one is left out for the API to call missing.
    expect(first).toEqual({
      station: "Lodhi Road, Delhi",
      season: "Winter",
      latitude: 28.5897,
      longitude: 77.2219,
      temperature: "14.5",
      humidity: "80",
      visibility: "4",
      day: 31,
      month: 12,
      hour: 23,
      day_of_week: "Saturday",
      is_weekend: 1,
      recent_hours: [
        { hours_before: 1, pm25: 100 },
        { hours_before: 2, pm25: 90 },
      ],
    });
    expect(second).toMatchObject({ day: 1, month: 1, hour: 0, day_of_week: "Sunday" });
    expect(second!.recent_hours).toEqual([
      { hours_before: 2, pm25: 100 },
      { hours_before: 3, pm25: 90 },
    ]);
  });

  it("leaves out readings the API would find more than 72 hours back, and remembers which are which", () => {
    const batch = forecastBatch({
      station: STATION,
      newestHourStart: "2022-06-01T10:00",
      hours: 2,
      weather: WEATHER,
      recentHours: [
        { hours_before: 72, pm10: 1 },
        { hours_before: 1, pm10: 2 },
      ],
    });
    expect(batch.body.requests[1]!.recent_hours).toEqual([{ hours_before: 2, pm10: 2 }]);
    expect(batch.readingIndex).toEqual([[0, 1], [1]]);
  });

  it("hands readings it cannot move to every hour unchanged, for the API to judge", () => {
    const batch = forecastBatch({
      station: STATION,
      newestHourStart: "2022-06-01T10:00",
      hours: 2,
      weather: WEATHER,
      recentHours: "not a list",
    });
    expect(batch.body.requests.map((request) => request.recent_hours)).toEqual([
      "not a list",
      "not a list",
    ]);
  });

  it("calendar fields as the training rows have them (Monday first, weekends 1)", () => {
    expect(calendarOf(Date.UTC(2022, 6, 18, 9))).toEqual({
      season: "Monsoon",
      day: 18,
      month: 7,
      hour: 9,
      day_of_week: "Monday",
      is_weekend: 0,
    });
  });
});

describe("the API's 422 entries beside the form's fields", () => {
  it("each mistake once, as the first hour reported it, readings named by their CSV line", () => {
    const errors = fieldErrorsOf(
      [
        {
          type: "less_than_equal",
          loc: ["body", "requests", 0, "humidity"],
          msg: "Input should be less than or equal to 100",
          input: 150,
        },
        {
          type: "greater_than_equal",
          loc: ["body", "requests", 0, "recent_hours", 1, "pm25"],
          msg: "Input should be greater than or equal to 0",
          input: -5,
        },
        {
          type: "less_than_equal",
          loc: ["body", "requests", 1, "humidity"],
          msg: "Input should be less than or equal to 100",
          input: 150,
        },
        // The second hour has dropped the first reading: its reading 0 is the given reading 1.
        {
          type: "greater_than_equal",
          loc: ["body", "requests", 1, "recent_hours", 0, "pm25"],
          msg: "Input should be greater than or equal to 0",
          input: -5,
        },
        {
          type: "value_error",
          loc: ["body", "requests", 0, "recent_hours"],
          msg: "Value error, too few readings (1 hours before)",
          input: {},
        },
        {
          type: "value_error",
          loc: ["body", "requests", 1, "recent_hours"],
          msg: "Value error, too few readings (2 hours before)",
          input: {},
        },
        {
          type: "value_error",
          loc: ["body", "requests", 0],
          msg: "Value error, the service covers Delhi",
          input: {},
        },
        {
          type: "missing",
          loc: ["body", "requests", 0, "visibility"],
          msg: "Field required",
          input: {},
        },
      ],
      [[0, 1], [1]],
      ["line 2", "line 3"],
    );
    expect(errors).toEqual({
      humidity: ["Input should be less than or equal to 100"],
      readings: [
        "line 3, pm25: Input should be greater than or equal to 0",
        "Value error, too few readings (1 hours before)",
      ],
      station: ["Value error, the service covers Delhi"],
      visibility: ["Field required"],
    });
  });
});
