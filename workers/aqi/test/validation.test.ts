import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, freshIp, postJson, validRequest, worker } from "./helpers.ts";

async function detailOf(response: Response): Promise<unknown[]> {
  expect(response.status).toBe(422);
  expect(response.headers.get("X-Request-ID")).toMatch(/^[0-9a-f]{8}$/);
  const body = (await response.json()) as { detail: unknown[] };
  return body.detail;
}

async function predictErrors(body: unknown): Promise<unknown[]> {
  return detailOf(await postJson(worker, "/v1/predict", body));
}

describe("POST /v1/predict: 422 bodies for each constraint of the contract", () => {
  it("field absent: missing, input is the whole body, in declaration order", async () => {
    // The reference repo's test payload: no latitude, longitude, day, is_weekend.
    const body = validRequest();
    delete body.latitude;
    delete body.longitude;
    delete body.day;
    delete body.is_weekend;
    expect(await predictErrors(body)).toEqual(
      ["latitude", "longitude", "day", "is_weekend"].map((field) => ({
        type: "missing",
        loc: ["body", field],
        msg: "Field required",
        input: body,
      })),
    );
  });

  it.each([
    ["humidity", 150, "less_than_equal", "Input should be less than or equal to 100", { le: 100 }],
    ["humidity", -1, "greater_than_equal", "Input should be greater than or equal to 0", { ge: 0 }],
    [
      "wind_speed",
      -0.1,
      "greater_than_equal",
      "Input should be greater than or equal to 0",
      { ge: 0 },
    ],
    [
      "visibility",
      -3,
      "greater_than_equal",
      "Input should be greater than or equal to 0",
      { ge: 0 },
    ],
    ["day", 0, "greater_than_equal", "Input should be greater than or equal to 1", { ge: 1 }],
    ["day", 32, "less_than_equal", "Input should be less than or equal to 31", { le: 31 }],
    ["month", 0, "greater_than_equal", "Input should be greater than or equal to 1", { ge: 1 }],
    ["month", 13, "less_than_equal", "Input should be less than or equal to 12", { le: 12 }],
    ["hour", -1, "greater_than_equal", "Input should be greater than or equal to 0", { ge: 0 }],
    ["hour", 24, "less_than_equal", "Input should be less than or equal to 23", { le: 23 }],
    ["day", "40", "less_than_equal", "Input should be less than or equal to 31", { le: 31 }],
  ])("%s = %j: %s", async (field, value, type, msg, ctx) => {
    expect(await predictErrors(validRequest({ [field]: value }))).toEqual([
      { type, loc: ["body", field], msg, input: value, ctx },
    ]);
  });

  it.each([
    ["day", 15.5],
    ["month", 1.25],
    ["hour", "x"],
  ])("integer field %s = %j", async (field, value) => {
    const [entry] = await predictErrors(validRequest({ [field]: value }));
    expect(entry).toEqual(
      typeof value === "string"
        ? {
            type: "int_parsing",
            loc: ["body", field],
            msg: "Input should be a valid integer, unable to parse string as an integer",
            input: value,
          }
        : {
            type: "int_from_float",
            loc: ["body", field],
            msg: "Input should be a valid integer, got a number with a fractional part",
            input: value,
          },
    );
  });

  it("season must be one of the four exact names", async () => {
    for (const season of ["winter", "WINTER", " Winter", "Autumn", 3, null]) {
      expect(await predictErrors(validRequest({ season }))).toEqual([
        {
          type: "literal_error",
          loc: ["body", "season"],
          msg: "Input should be 'Winter', 'Summer', 'Monsoon' or 'Post-Monsoon'",
          input: season,
          ctx: { expected: "'Winter', 'Summer', 'Monsoon' or 'Post-Monsoon'" },
        },
      ]);
    }
  });

  it("day_of_week must be an exact full English day name", async () => {
    const expected =
      "'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday' or 'Sunday'";
    for (const day_of_week of ["monday", "Mon", " Monday", "Funday"]) {
      expect(await predictErrors(validRequest({ day_of_week }))).toEqual([
        {
          type: "literal_error",
          loc: ["body", "day_of_week"],
          msg: `Input should be ${expected}`,
          input: day_of_week,
          ctx: { expected },
        },
      ]);
    }
  });

  it("is_weekend 2 or '1' is a literal_error", async () => {
    for (const is_weekend of [2, "1", -1, 0.5, null]) {
      expect(await predictErrors(validRequest({ is_weekend }))).toEqual([
        {
          type: "literal_error",
          loc: ["body", "is_weekend"],
          msg: "Input should be 0 or 1",
          input: is_weekend,
          ctx: { expected: "0 or 1" },
        },
      ]);
    }
  });

  it("latitude 'abc' is float_parsing; null or an object is float_type", async () => {
    expect(await predictErrors(validRequest({ latitude: "abc" }))).toEqual([
      {
        type: "float_parsing",
        loc: ["body", "latitude"],
        msg: "Input should be a valid number, unable to parse string as a number",
        input: "abc",
      },
    ]);
    for (const temperature of [null, { c: 3 }, [1]]) {
      expect(await predictErrors(validRequest({ temperature }))).toEqual([
        {
          type: "float_type",
          loc: ["body", "temperature"],
          msg: "Input should be a valid number",
          input: temperature,
        },
      ]);
    }
  });

  it("non-finite numbers are refused (the model would get garbage)", async () => {
    expect(await predictErrors(validRequest({ temperature: "inf", humidity: "NaN" }))).toEqual([
      {
        type: "finite_number",
        loc: ["body", "temperature"],
        msg: "Input should be a finite number",
        input: "inf",
      },
      {
        type: "finite_number",
        loc: ["body", "humidity"],
        msg: "Input should be a finite number",
        input: "NaN",
      },
    ]);
  });

  it("station 123 or null is string_type", async () => {
    for (const station of [123, null, true]) {
      expect(await predictErrors(validRequest({ station }))).toEqual([
        {
          type: "string_type",
          loc: ["body", "station"],
          msg: "Input should be a valid string",
          input: station,
        },
      ]);
    }
  });

  it("several failing fields: one entry each, in declaration order", async () => {
    const body = validRequest({ hour: 30, station: 5, humidity: "wet", season: "spring" });
    delete body.month;
    const detail = (await predictErrors(body)) as { loc: unknown[]; type: string }[];
    expect(detail.map((entry) => [entry.loc[1], entry.type])).toEqual([
      ["station", "string_type"],
      ["season", "literal_error"],
      ["humidity", "float_parsing"],
      ["month", "missing"],
      ["hour", "less_than_equal"],
    ]);
  });

  it("malformed JSON: json_invalid at the character offset", async () => {
    const text = '{"station": "Lodhi Road", "season": }';
    expect(await predictErrors(text)).toEqual([
      {
        type: "json_invalid",
        loc: ["body", 36],
        msg: "JSON decode error",
        input: {},
        ctx: { error: "Expecting value" },
      },
    ]);
  });

  it("no body: missing at ['body'] with input null (JSON or no content type)", async () => {
    const missing = [{ type: "missing", loc: ["body"], msg: "Field required", input: null }];
    expect(await predictErrors("")).toEqual(missing);
    expect(await detailOf(await worker(`${BASE}/v1/predict`, { method: "POST" }))).toEqual(missing);
    expect(await predictErrors("null")).toEqual(missing);
  });

  it("a JSON array, a JSON string or a non-JSON content type is model_attributes_type", async () => {
    const entry = (input: unknown) => [
      {
        type: "model_attributes_type",
        loc: ["body"],
        msg: "Input should be a valid dictionary or object to extract fields from",
        input,
      },
    ];
    expect(await predictErrors([validRequest()])).toEqual(entry([validRequest()]));
    expect(await predictErrors('"hello"')).toEqual(entry("hello"));
    const form = await worker(`${BASE}/v1/predict`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "station=Lodhi",
    });
    expect(await detailOf(form)).toEqual(entry("station=Lodhi"));
    const text = await worker(`${BASE}/v1/predict`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: JSON.stringify(validRequest()),
    });
    expect(await detailOf(text)).toEqual(entry(JSON.stringify(validRequest())));
  });

  it("a JSON body without a content type is read as JSON, as FastAPI does", async () => {
    // Bytes, not a string: fetch labels a string body text/plain.
    const request = new Request(`${BASE}/v1/predict`, {
      method: "POST",
      headers: { "cf-connecting-ip": freshIp() },
      body: new TextEncoder().encode(JSON.stringify(validRequest({ humidity: 101 }))),
    });
    expect(request.headers.get("content-type")).toBeNull();
    const response = await exports.default.fetch(request);
    expect(await detailOf(response)).toEqual([
      {
        type: "less_than_equal",
        loc: ["body", "humidity"],
        msg: "Input should be less than or equal to 100",
        input: 101,
        ctx: { le: 100 },
      },
    ]);
  });
});

describe("POST /v1/predict/batch: 422 bodies", () => {
  async function batchErrors(body: unknown): Promise<unknown[]> {
    return detailOf(await postJson(worker, "/v1/predict/batch", body));
  }

  it("0 items: too_short", async () => {
    expect(await batchErrors({ requests: [] })).toEqual([
      {
        type: "too_short",
        loc: ["body", "requests"],
        msg: "List should have at least 1 item after validation, not 0",
        input: [],
        ctx: { field_type: "List", min_length: 1, actual_length: 0 },
      },
    ]);
  });

  it("101 items: too_long, echoing the list (its items are not also reported)", async () => {
    const requests = Array.from({ length: 101 }, (_, index) =>
      validRequest({ hour: index % 2 === 0 ? 99 : 5 }),
    );
    expect(await batchErrors({ requests })).toEqual([
      {
        type: "too_long",
        loc: ["body", "requests"],
        msg: "List should have at most 100 items after validation, not 101",
        input: requests,
        ctx: { field_type: "List", max_length: 100, actual_length: 101 },
      },
    ]);
  });

  it("missing requests, requests not a list", async () => {
    expect(await batchErrors({ items: [] })).toEqual([
      { type: "missing", loc: ["body", "requests"], msg: "Field required", input: { items: [] } },
    ]);
    expect(await batchErrors({ requests: { a: 1 } })).toEqual([
      {
        type: "list_type",
        loc: ["body", "requests"],
        msg: "Input should be a valid list",
        input: { a: 1 },
      },
    ]);
  });

  it("one bad item fails the batch, with the item index in loc", async () => {
    const item = validRequest({ day: 0 });
    delete item.hour;
    const requests = [validRequest(), validRequest(), validRequest(), item, "not an object"];
    expect(await batchErrors({ requests })).toEqual([
      {
        type: "greater_than_equal",
        loc: ["body", "requests", 3, "day"],
        msg: "Input should be greater than or equal to 1",
        input: 0,
        ctx: { ge: 1 },
      },
      { type: "missing", loc: ["body", "requests", 3, "hour"], msg: "Field required", input: item },
      {
        type: "model_attributes_type",
        loc: ["body", "requests", 4],
        msg: "Input should be a valid dictionary or object to extract fields from",
        input: "not an object",
      },
    ]);
  });
});
