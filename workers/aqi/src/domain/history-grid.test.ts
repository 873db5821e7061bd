/**
 * The history figures computed from the hour-by-pollutant grid against the
 * same figures computed reading object by reading object, the plain way
 * (below: the calculator's averagedConcentrationsAt over a series of hour
 * objects). Every column, the AQI at the newest reading, the window
 * arithmetic and every refusal must be identical, bit for bit, on random
 * readings, and the float32 batch must be the float64 rows cast.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type AqiResult,
  averagedConcentrationsAt,
  computeAqi,
  type HourlyConcentrations,
  MIN_HOURS_FOR_8H_MAX,
  MIN_HOURS_FOR_24H_MEAN,
  POLLUTANTS,
  type Pollutant,
  subIndex,
} from "./aqi-calculator.ts";
import {
  FEATURE_LAYOUT_VERSION,
  FEATURE_NAMES,
  type FeatureInput,
  type PreprocessingSpec,
} from "./features.ts";
import {
  aqiAtLatestReading,
  CONCENTRATION_BOUNDS,
  checkRecentHours,
  encodeHistoryBatch,
  encodeHistoryColumns,
  encodeHistoryFeatures,
  HISTORY_FEATURE_COUNT,
  MAX_HORIZON_HOURS,
  MAX_RECENT_HOURS,
  POLLUTANT_OF_FIELD,
  prepareSentReadings,
  recentHoursIssues,
  type SentReading,
  windowArithmetic,
} from "./history.ts";
import { READING_FIELDS, type RecentHour } from "./recent-hours.ts";

// The plain computation, reading object by reading object.

const present = (value: number | null | undefined): value is number =>
  typeof value === "number" && Number.isFinite(value);
const indexOf = (hoursBefore: number): number => MAX_RECENT_HOURS - hoursBefore;
const horizonOf = (readings: readonly RecentHour[]): number =>
  Math.min(...readings.map((reading) => reading.hours_before));

function seriesOf(readings: readonly RecentHour[]): HourlyConcentrations[] {
  const series: HourlyConcentrations[] = Array.from({ length: MAX_RECENT_HOURS + 1 }, () => ({}));
  for (const reading of readings) {
    const hour: HourlyConcentrations = {};
    for (const field of READING_FIELDS) {
      const value = reading[field];
      if (present(value)) hour[POLLUTANT_OF_FIELD[field]] = value;
    }
    series[indexOf(reading.hours_before)] = hour;
  }
  return series;
}

function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (const value of values) sum += value;
  return sum / values.length;
}

function valuesBetween(
  series: readonly HourlyConcentrations[],
  pollutant: Pollutant,
  from: number,
  to: number,
): number[] {
  const values: number[] = [];
  for (let hoursBefore = from; hoursBefore <= Math.min(to, MAX_RECENT_HOURS); hoursBefore += 1) {
    const value = series[indexOf(hoursBefore)]?.[pollutant];
    if (present(value)) values.push(value);
  }
  return values;
}

function meanOfNewestThree(series: readonly HourlyConcentrations[], pollutant: Pollutant): number {
  const newest: number[] = [];
  for (let index = MAX_RECENT_HOURS; index >= 0 && newest.length < 3; index -= 1) {
    const value = series[index]?.[pollutant];
    if (present(value)) newest.push(value);
  }
  return mean(newest);
}

const plainLatest = (readings: readonly RecentHour[]): AqiResult =>
  computeAqi(averagedConcentrationsAt(seriesOf(readings), indexOf(horizonOf(readings))));

function plainArithmetic(readings: readonly RecentHour[], latest: AqiResult) {
  const horizon = horizonOf(readings);
  const series = seriesOf(readings);
  const persistence = { aqi: latest.aqi ?? Number.NaN, averaged: {}, computed: false };
  if (horizon >= 24) return persistence;
  const filled = series.map((hour) => ({ ...hour }));
  for (const pollutant of POLLUTANTS) {
    const fill = meanOfNewestThree(series, pollutant);
    if (Number.isNaN(fill)) continue;
    for (let hoursBefore = 0; hoursBefore < horizon; hoursBefore += 1) {
      filled[indexOf(hoursBefore)]![pollutant] = fill;
    }
  }
  const averaged = averagedConcentrationsAt(filled, indexOf(0));
  const result = computeAqi(averaged);
  return result.aqi === null ? persistence : { aqi: result.aqi, averaged, computed: true };
}

const orNaN = (value: number | null | undefined): number => (present(value) ? value : Number.NaN);

function plainColumns(readings: readonly RecentHour[], hour: number): number[] {
  const horizon = horizonOf(readings);
  const series = seriesOf(readings);
  const latestAveraged = averagedConcentrationsAt(series, indexOf(horizon));
  const latest = computeAqi(latestAveraged);
  const arithmetic = plainArithmetic(readings, latest);
  const columns = [horizon, (((hour - horizon) % 24) + 24) % 24, latest.aqi!, arithmetic.aqi];
  for (const field of READING_FIELDS) {
    const pollutant = POLLUTANT_OF_FIELD[field];
    const averaged = latestAveraged[pollutant];
    const windowLength = pollutant === "CO" || pollutant === "O3" ? 8 : 24;
    const sameHour = horizon <= 24 ? series[indexOf(24)]?.[pollutant] : null;
    columns.push(
      orNaN(averaged),
      present(averaged) ? subIndex(pollutant, averaged) : Number.NaN,
      orNaN((arithmetic.averaged as Partial<Record<Pollutant, number | null>>)[pollutant]),
      orNaN(series[indexOf(horizon)]?.[pollutant]),
      meanOfNewestThree(series, pollutant),
      mean(valuesBetween(series, pollutant, horizon + 3, horizon + 5)),
      orNaN(sameHour),
      mean(
        valuesBetween(
          series,
          pollutant,
          Math.max(windowLength, horizon),
          horizon + windowLength - 1,
        ),
      ),
    );
  }
  return columns;
}

function plainIssues(readings: readonly RecentHour[], loc: (string | number)[]) {
  const issues: Record<string, unknown>[] = [];
  readings.forEach((reading, index) => {
    if (!READING_FIELDS.some((field) => present(reading[field]))) {
      issues.push({
        type: "value_error",
        loc: [...loc, index],
        msg: `Value error, the reading ${reading.hours_before} hours before has no concentration: send at least one of ${READING_FIELDS.join(", ")}`,
        input: reading,
        ctx: { error: "a reading needs at least one concentration" },
      });
    }
  });
  const seen = new Set<number>();
  const repeated = new Set<number>();
  for (const reading of readings) {
    if (seen.has(reading.hours_before)) repeated.add(reading.hours_before);
    seen.add(reading.hours_before);
  }
  if (repeated.size > 0) {
    const hours = [...repeated].sort((a, b) => a - b);
    issues.push({
      type: "value_error",
      loc,
      msg: `Value error, hours_before must be unique within recent_hours: ${hours.join(", ")} ${hours.length === 1 ? "appears" : "appear"} more than once`,
      input: hours,
      ctx: { error: "repeated hours_before" },
    });
  }
  if (issues.length > 0) return issues;
  const horizon = horizonOf(readings);
  if (horizon > MAX_HORIZON_HOURS) {
    return [
      {
        type: "value_error",
        loc,
        msg: `Value error, the newest reading is ${horizon} hours before the predicted hour; it must be 1 to ${MAX_HORIZON_HOURS} hours before (forecasts reach at most ${MAX_HORIZON_HOURS} hours ahead)`,
        input: horizon,
        ctx: { error: "newest reading too old", max_hours_before: MAX_HORIZON_HOURS },
      },
    ];
  }
  const latest = plainLatest(readings);
  if (latest.aqi !== null) return [];
  const windowEnd = horizon + 23;
  const count = (field: "pm25" | "pm10") =>
    readings.filter(
      (reading) =>
        reading.hours_before >= horizon &&
        reading.hours_before <= windowEnd &&
        present(reading[field]),
    ).length;
  const [pm25, pm10] = [count("pm25"), count("pm10")];
  const counts = `hours ${horizon}-${windowEnd} before the predicted hour hold ${pm25} of PM2.5 and ${pm10} of PM10`;
  const withData = Object.keys(latest.subIndices);
  const msg =
    latest.subIndices["PM2.5"] === undefined && latest.subIndices.PM10 === undefined
      ? `Value error, too few readings to compute the CPCB AQI at the newest reading (${horizon} hours before the predicted hour): its 24-hour averages need at least ${MIN_HOURS_FOR_24H_MEAN} of the 24 hours of PM2.5 or PM10; ${counts}`
      : `Value error, too few readings to compute the CPCB AQI at the newest reading (${horizon} hours before the predicted hour): it needs at least 3 pollutants with enough hours (24-hour averages ${MIN_HOURS_FOR_24H_MEAN} of 24 hours, CO and O3 ${MIN_HOURS_FOR_8H_MAX} of 8), one of them PM2.5 or PM10; ${withData.length === 0 ? "none has" : `only ${withData.join(", ")} ${withData.length === 1 ? "has" : "have"}`} enough`;
  return [
    {
      type: "value_error",
      loc,
      msg,
      input: { newest_hours_before: horizon, pm25_hours: pm25, pm10_hours: pm10 },
      ctx: { error: "too few readings for a CPCB AQI at the newest reading" },
    },
  ];
}

// Random readings: dense runs of hours (most have an AQI) and sparse ones (most do not),
// concentrations absent, null, whole or fractional, now and then a reading with none
// or an hour sent twice.

const concentration = (field: (typeof READING_FIELDS)[number], presence: number) =>
  fc.oneof(
    {
      weight: presence,
      arbitrary: fc.double({ min: 0, max: CONCENTRATION_BOUNDS[field].le, noNaN: true }),
    },
    {
      weight: presence,
      arbitrary: fc.integer({ min: 0, max: Math.min(600, CONCENTRATION_BOUNDS[field].le) }),
    },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );

const reading = (hoursBefore: number, presence: number) =>
  fc
    .tuple(...READING_FIELDS.map((field) => concentration(field, presence)))
    .map((values): RecentHour => {
      const out: Record<string, number | null> = { hours_before: hoursBefore };
      READING_FIELDS.forEach((field, index) => {
        if (values[index] !== undefined) out[field] = values[index]!;
      });
      return out as RecentHour;
    });

const dense = fc
  .record({ horizon: fc.integer({ min: 1, max: 60 }), length: fc.integer({ min: 1, max: 72 }) })
  .chain(({ horizon, length }) => {
    const hours = [];
    for (
      let hoursBefore = horizon;
      hoursBefore <= Math.min(72, horizon + length);
      hoursBefore += 1
    ) {
      hours.push(hoursBefore);
    }
    return fc.tuple(...hours.map((hoursBefore) => reading(hoursBefore, 12)));
  });

const sparse = fc
  .uniqueArray(fc.integer({ min: 1, max: MAX_RECENT_HOURS }), { minLength: 1, maxLength: 40 })
  .chain((hours) => fc.tuple(...hours.map((hoursBefore) => reading(hoursBefore, 3))));

const readings = fc
  .tuple(
    fc.oneof({ weight: 4, arbitrary: dense }, { weight: 1, arbitrary: sparse }),
    fc.nat({ max: 9 }),
    fc.nat(),
    fc.shuffledSubarray([...READING_FIELDS]),
  )
  .map(([list, twist, at, fields]): RecentHour[] => {
    const out = [...list] as RecentHour[];
    const index = at % out.length;
    // Now and then an hour sent twice, or a reading without a concentration.
    if (twist === 0) out.push({ ...out[index]! });
    if (twist === 1) {
      const emptied: Record<string, unknown> = { hours_before: out[index]!.hours_before };
      for (const field of fields) emptied[field] = null;
      out[index] = emptied as RecentHour;
    }
    return out;
  });

describe("the history figures from the reading grid", () => {
  it("refuse exactly the readings the plain computation refuses, with the same issues", () => {
    fc.assert(
      fc.property(readings, (list) => {
        const loc = ["body", "recent_hours"];
        expect(recentHoursIssues(list, loc)).toStrictEqual(plainIssues(list, loc));
        expect(checkRecentHours(list, loc).issues).toStrictEqual(plainIssues(list, loc));
      }),
      { numRuns: 400 },
    );
  });

  it("give the plain AQI at the newest reading and window arithmetic, refused readings included", () => {
    fc.assert(
      fc.property(readings, (list) => {
        const latest = plainLatest(list);
        expect(aqiAtLatestReading(list)).toStrictEqual(latest);
        expect(windowArithmetic(list)).toStrictEqual(plainArithmetic(list, latest));
      }),
      { numRuns: 400 },
    );
  });

  it("give every history column bit for bit", () => {
    const reached = { scored: 0, computed: 0, persistence: 0 };
    fc.assert(
      fc.property(readings, fc.integer({ min: 0, max: 23 }), (list, hour) => {
        if (plainIssues(list, []).length > 0) return;
        const encoded = encodeHistoryColumns(list, hour);
        reached.scored += 1;
        reached[encoded.windowArithmetic.computed ? "computed" : "persistence"] += 1;
        // toStrictEqual tells NaN from a number and 0 from -0.
        expect(encoded.columns).toStrictEqual(plainColumns(list, hour));
        expect(encoded.horizon).toBe(horizonOf(list));
        expect(encoded.latest).toStrictEqual(plainLatest(list));
        expect(encoded.windowArithmetic).toStrictEqual(plainArithmetic(list, plainLatest(list)));
        const checked = checkRecentHours(list, []);
        expect(checked.prepared?.columns.filter((_, index) => index !== 1)).toStrictEqual(
          encoded.columns.filter((_, index) => index !== 1),
        );
      }),
      { numRuns: 600 },
    );
    // The generator must reach scoreable readings often, and both kinds of window
    // arithmetic, or the comparison says little.
    expect(reached.scored).toBeGreaterThan(100);
    expect(reached.computed).toBeGreaterThan(30);
    expect(reached.persistence).toBeGreaterThan(30);
  });
});

describe("readings prepared while the body is checked", () => {
  const plainValue = (field: (typeof READING_FIELDS)[number], value: unknown) =>
    value === undefined ||
    value === null ||
    (typeof value === "number" &&
      value >= CONCENTRATION_BOUNDS[field].ge &&
      value <= CONCENTRATION_BOUNDS[field].le);
  const odd = fc.constantFrom(-1, 2000.5, 3001, "12", true, Number.NaN, Number.POSITIVE_INFINITY);

  it("are plain exactly when every concentration is a number within its bounds, null or absent", () => {
    fc.assert(
      fc.property(
        readings,
        fc.nat(),
        fc.constantFrom(...READING_FIELDS),
        odd,
        fc.boolean(),
        (list, at, field, value, spoil) => {
          const sent: SentReading[] = list.map((reading) => ({ ...reading }));
          if (spoil) sent[at % sent.length] = { ...sent[at % sent.length]!, [field]: value };
          const plain = sent.every((reading) =>
            READING_FIELDS.every((name) => plainValue(name, reading[name])),
          );
          expect(prepareSentReadings(sent)).toBe(plain);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("are checked later as if laid out afresh", () => {
    fc.assert(
      fc.property(readings, (list) => {
        expect(prepareSentReadings(list)).toBe(true);
        const afresh = checkRecentHours([...list], ["body"]);
        expect(checkRecentHours(list, ["body"])).toStrictEqual(afresh);
      }),
      { numRuns: 300 },
    );
  });
});

const SPEC: PreprocessingSpec = {
  featureLayoutVersion: FEATURE_LAYOUT_VERSION,
  featureNames: [...FEATURE_NAMES],
  stations: [
    { name: "Lodhi Road, Delhi", latitude: 28.5918, longitude: 77.2273, aliases: ["DL039"] },
    { name: "Chandni Chowk, Delhi", latitude: 28.6562, longitude: 77.2273, aliases: ["DL040"] },
  ],
  featuresMissingInTraining: ["visibility_km"],
};

function request(recentHours: RecentHour[], hour: number, station: string): FeatureInput {
  return {
    station,
    season: "Winter",
    latitude: 28.6,
    longitude: 77.22,
    temperature: 12.5,
    humidity: null,
    wind_speed: 3.1,
    visibility: 2,
    day: 14,
    month: 1,
    hour,
    day_of_week: "Tuesday",
    is_weekend: 0,
    recent_hours: recentHours,
  };
}

describe("the recent-hours batch", () => {
  it("is each request's float64 feature row cast to float32, with or without readings prepared by the checks", () => {
    const scoreable = readings.filter((list) => plainIssues(list, []).length === 0);
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            scoreable,
            fc.integer({ min: 0, max: 23 }),
            fc.constantFrom("Lodhi Road, Delhi", "dl040", "Somewhere else"),
          ),
          { minLength: 1, maxLength: 8 },
        ),
        (rows) => {
          const inputs = rows.map(([list, hour, station]) => request(list, hour, station));
          const expected = new Float32Array(inputs.length * HISTORY_FEATURE_COUNT);
          inputs.forEach((input, index) => {
            expected.set(encodeHistoryFeatures(input, SPEC), index * HISTORY_FEATURE_COUNT);
          });
          const prepared = inputs.map(
            (input) => checkRecentHours(input.recent_hours!, []).prepared,
          );
          expect(encodeHistoryBatch(inputs, SPEC, prepared)).toStrictEqual(expected);
          expect(encodeHistoryBatch(inputs, SPEC)).toStrictEqual(expected);
        },
      ),
      { numRuns: 100 },
    );
  });
});
