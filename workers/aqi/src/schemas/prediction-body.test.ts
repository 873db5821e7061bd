/**
 * The hand check of request bodies against the schemas it stands in for: on
 * any body (JSON, as a client sends it) it either yields exactly what the
 * schema yields, fields in the same order, or steps aside; it never accepts
 * what the schema refuses.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import historyHoldout from "../../../../models/aqi-history-1.0.0.holdout.json";
import readingHoldout from "../../../../models/aqi-reading-1.2.0.holdout.json";
import { CONCENTRATION_BOUNDS } from "../domain/history.ts";
import { READING_FIELDS } from "../domain/recent-hours.ts";
import { BatchPredictionRequest, PredictionRequest } from "./prediction.ts";
import {
  quickBatchPredictionRequest,
  quickPredictionRequest,
  quickRecentHours,
} from "./prediction-body.ts";

/** The request's recent_hours field on its own (an optional, nullable list of RecentHour). */
const RecentHoursField = PredictionRequest.shape.recent_hours;

/** As the route receives it: parsed JSON. */
const asJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

/** `quick` yields what `schema` yields (the same values, key order included) or steps aside. */
function expectSameAsSchema(
  quick: (body: unknown) => unknown,
  schema: { safeParse(body: unknown): { success: boolean; data?: unknown } },
  body: unknown,
): "quick" | "schema" {
  const expected = schema.safeParse(body);
  const recognised = quick(body);
  if (recognised === undefined) return "schema";
  expect(expected.success).toBe(true);
  expect(recognised).toStrictEqual(expected.data);
  expect(JSON.stringify(recognised)).toBe(JSON.stringify(expected.data));
  return "quick";
}

const concentration = (field: (typeof READING_FIELDS)[number]) =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.double({ min: 0, max: CONCENTRATION_BOUNDS[field].le, noNaN: true }),
    },
    { weight: 2, arbitrary: fc.integer({ min: 0, max: 400 }) },
    { weight: 1, arbitrary: fc.constant(null) },
    // What the schema takes or refuses but the hand check leaves to it.
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        -0.5,
        CONCENTRATION_BOUNDS[field].le + 0.01,
        "12.5",
        " 7 ",
        "much",
        true,
        false,
        [],
        {},
      ),
    },
  );

const hoursBefore = fc.oneof(
  { weight: 12, arbitrary: fc.integer({ min: 1, max: 72 }) },
  { weight: 1, arbitrary: fc.constantFrom(0, 73, -1, 2.5, 3.0, "4", "4.0", null, true) },
);

/** A reading as a client might send it: fields absent or present, in any order, sometimes with more. */
const reading = fc
  .tuple(
    fc.option(hoursBefore, { nil: undefined, freq: 12 }),
    fc.tuple(...READING_FIELDS.map((field) => fc.option(concentration(field), { nil: undefined }))),
    fc.boolean(),
    fc.option(fc.constantFrom("station", "unit", "pm2_5"), { nil: undefined, freq: 8 }),
  )
  .map(([hours, values, shuffled, extra]) => {
    const entries: [string, unknown][] = [];
    if (hours !== undefined) entries.push(["hours_before", hours]);
    READING_FIELDS.forEach((field, index) => {
      if (values[index] !== undefined) entries.push([field, values[index]]);
    });
    if (extra) entries.push([extra, 1]);
    if (shuffled) entries.reverse();
    return Object.fromEntries(entries);
  });

const recentHours = fc.oneof(
  { weight: 12, arbitrary: fc.array(reading, { minLength: 1, maxLength: 72 }) },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.constant([]),
      fc.array(reading, { minLength: 73, maxLength: 75 }),
      fc.constantFrom(null, 42, "hours", { hours_before: 1 }),
      fc.array(fc.constantFrom(42, null, [], "x"), { minLength: 1, maxLength: 3 }),
    ),
  },
);

const baseRequest = historyHoldout.rows[0]!.request;

/** A request: the holdout's weather and calendar, recent_hours random, now and then a field off. */
const request = fc
  .tuple(
    fc.option(recentHours, { nil: undefined, freq: 10 }),
    fc.option(
      fc.constantFrom(
        ["humidity", 150],
        ["latitude", "28.6"],
        ["station", 3],
        ["recent_aqi", 250],
        ["unknown_field", "kept out"],
        ["day", 15.0],
      ),
      { nil: undefined, freq: 5 },
    ),
  )
  .map(([hours, change]) => {
    const { recent_hours: _, ...rest } = baseRequest;
    const out: Record<string, unknown> = { ...rest };
    if (hours !== undefined) out.recent_hours = hours;
    if (change) out[change[0] as string] = change[1];
    return asJson(out);
  });

describe("quickRecentHours", () => {
  it("yields what the recent_hours field yields, or steps aside, on any list of readings", () => {
    const seen = { quick: 0, schema: 0 };
    fc.assert(
      fc.property(fc.array(reading, { minLength: 1, maxLength: 4 }).map(asJson), (body) => {
        seen[expectSameAsSchema(quickRecentHours, RecentHoursField, body)] += 1;
      }),
      { numRuns: 2000 },
    );
    // Both paths must be exercised, or the comparison says little.
    expect(seen.quick).toBeGreaterThan(200);
    expect(seen.schema).toBeGreaterThan(200);
  });

  it("keeps a plain reading as sent, and copies one with its fields out of order or unknown ones", () => {
    const plain = asJson({ hours_before: 3, pm25: 80.5, co: null, o3: 12 });
    expect(quickRecentHours([plain])?.[0]).toBe(plain);
    expect(
      quickRecentHours(asJson([{ pm25: 80.5, hours_before: 3, unit: "ug/m3" }])),
    ).toStrictEqual([{ hours_before: 3, pm25: 80.5 }]);
  });

  it("steps aside for anything that is not a list of 1 to 72 plain readings", () => {
    expect(quickRecentHours([])).toBeUndefined();
    expect(quickRecentHours({ hours_before: 1, pm25: 5 })).toBeUndefined();
    expect(
      quickRecentHours(
        Array.from({ length: 73 }, (_, i) => ({ hours_before: (i % 72) + 1, pm25: 5 })),
      ),
    ).toBeUndefined();
    expect(quickRecentHours([{ hours_before: 1, pm25: "5" }])).toBeUndefined();
    expect(quickRecentHours([{ hours_before: 1, co: 100.5 }])).toBeUndefined();
    expect(quickRecentHours([{ hours_before: 1, pm25: 5 }])).toStrictEqual([
      { hours_before: 1, pm25: 5 },
    ]);
  });
});

describe("quickPredictionRequest and quickBatchPredictionRequest", () => {
  it("yield what PredictionRequest yields, or step aside, on any request", () => {
    const seen = { quick: 0, schema: 0 };
    fc.assert(
      fc.property(request, (body) => {
        seen[expectSameAsSchema(quickPredictionRequest, PredictionRequest, body)] += 1;
      }),
      { numRuns: 500 },
    );
    // About 60 of the 500 random requests are plainly valid (sd about 7): a bound far below that
    // checks both paths ran without failing on an unlucky draw.
    expect(seen.quick).toBeGreaterThan(25);
    expect(seen.schema).toBeGreaterThan(50);
  });

  it("yield what BatchPredictionRequest yields, or step aside, on any batch", () => {
    const batch = fc.oneof(
      { weight: 8, arbitrary: fc.array(request, { minLength: 1, maxLength: 6 }) },
      { weight: 1, arbitrary: fc.constantFrom([], "requests", null) },
    );
    fc.assert(
      fc.property(batch, fc.boolean(), (requests, wrapped) => {
        const body = wrapped ? asJson({ requests }) : asJson({ requests, note: "extra" });
        expectSameAsSchema(quickBatchPredictionRequest, BatchPredictionRequest, body);
      }),
      { numRuns: 300 },
    );
    expect(
      quickBatchPredictionRequest(asJson({ requests: Array(101).fill(baseRequest) })),
    ).toBeUndefined();
    expect(quickBatchPredictionRequest(asJson({ requests: [] }))).toBeUndefined();
  });

  it("take every holdout request, with readings or recent_hours, and batches of 100 of them", () => {
    for (const holdout of [historyHoldout, readingHoldout]) {
      const requests = holdout.rows.map((row) => asJson(row.request));
      for (const body of requests) {
        expect(expectSameAsSchema(quickPredictionRequest, PredictionRequest, body)).toBe("quick");
      }
      const batch = asJson({ requests: requests.slice(0, 100) });
      expect(expectSameAsSchema(quickBatchPredictionRequest, BatchPredictionRequest, batch)).toBe(
        "quick",
      );
    }
  });
});
