import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  assertSpecMatchesCode,
  encodeBatch,
  encodeFeatures,
  FEATURE_COUNT,
  FEATURE_LAYOUT_VERSION,
  FEATURE_NAMES,
  type FeatureInput,
  haversineKm,
  normaliseStationName,
  type PreprocessingSpec,
  resolveStation,
  seasonForMonth,
} from "./features.ts";

const CHANDNI_CHOWK = {
  name: "Chandni Chowk, Delhi",
  latitude: 28.6567,
  longitude: 77.2273,
  aliases: ["DL040"],
};
const LODHI_ROAD = {
  name: "Lodhi Road, Delhi",
  latitude: 28.589701,
  longitude: 77.221917,
  aliases: ["Lodhi Road, Delhi - IITM", "DL039"],
};

const spec: PreprocessingSpec = {
  featureLayoutVersion: FEATURE_LAYOUT_VERSION,
  featureNames: [...FEATURE_NAMES],
  stations: [CHANDNI_CHOWK, LODHI_ROAD],
  featuresMissingInTraining: ["visibility_km"],
};

const request: FeatureInput = {
  station: "Lodhi Road, Delhi",
  season: "Winter",
  latitude: 28.589701,
  longitude: 77.221917,
  temperature: 14.5,
  humidity: 82,
  wind_speed: 3.6,
  visibility: 1.5,
  day: 9,
  month: 1,
  hour: 7,
  day_of_week: "Saturday",
  is_weekend: 1,
};

describe("seasonForMonth (IMD seasons)", () => {
  it("labels every month", () => {
    const labels = Array.from({ length: 12 }, (_, i) => seasonForMonth(i + 1));
    expect(labels).toEqual([
      "Winter",
      "Winter",
      "Summer",
      "Summer",
      "Summer",
      "Monsoon",
      "Monsoon",
      "Monsoon",
      "Monsoon",
      "Post-Monsoon",
      "Post-Monsoon",
      "Winter",
    ]);
    expect(() => seasonForMonth(13)).toThrow(RangeError);
  });
});

describe("encodeFeatures", () => {
  it("writes the documented layout", () => {
    expect(FEATURE_COUNT).toBe(14);
    const row = encodeFeatures(request, spec);
    expect(row).toHaveLength(FEATURE_COUNT);
    expect(row.slice(0, 9)).toEqual([28.589701, 77.221917, 1, 0, 0, 0, 14.5, 82, 3.6]);
    expect(Number.isNaN(row[FEATURE_NAMES.indexOf("visibility_km")])).toBe(true);
    expect(row.slice(10)).toEqual([1, 7, 5, 1]); // month, hour, day_of_week (Saturday = 5), is_weekend
  });

  it("one-hot encodes the season in SEASONS order", () => {
    const seasonColumns = (season: FeatureInput["season"]) =>
      encodeFeatures({ ...request, season }, spec).slice(2, 6);
    expect(seasonColumns("Summer")).toEqual([0, 1, 0, 0]);
    expect(seasonColumns("Monsoon")).toEqual([0, 0, 1, 0]);
    expect(seasonColumns("Post-Monsoon")).toEqual([0, 0, 0, 1]);
  });

  it("encodes a feature that had no training data as missing whatever the request says", () => {
    const a = encodeFeatures({ ...request, visibility: 0.2 }, spec);
    const b = encodeFeatures({ ...request, visibility: 20 }, spec);
    expect(Number.isNaN(a[9]) && Number.isNaN(b[9])).toBe(true);
    const withVisibility = encodeFeatures(request, { ...spec, featuresMissingInTraining: [] });
    expect(withVisibility[9]).toBe(1.5);
  });

  it("encodes missing weather (training data) as NaN", () => {
    const row = encodeFeatures({ ...request, temperature: null, humidity: null }, spec);
    expect(Number.isNaN(row[6]) && Number.isNaN(row[7])).toBe(true);
  });

  it("does not use day of month but still validates it", () => {
    expect(encodeFeatures({ ...request, day: 28 }, spec)).toEqual(encodeFeatures(request, spec));
    expect(() => encodeFeatures({ ...request, day: 32 }, spec)).toThrow(RangeError);
    expect(() => encodeFeatures({ ...request, month: 0 }, spec)).toThrow(RangeError);
    expect(() => encodeFeatures({ ...request, hour: 24 }, spec)).toThrow(RangeError);
  });

  it("builds a row-major float32 batch", () => {
    const batch = encodeBatch(
      [request, { ...request, station: "Chandni Chowk, Delhi", hour: 18 }],
      spec,
    );
    expect(batch).toBeInstanceOf(Float32Array);
    expect(batch).toHaveLength(2 * FEATURE_COUNT);
    expect(batch[0]).toBe(Math.fround(28.589701));
    expect(batch[FEATURE_COUNT]).toBe(Math.fround(28.6567));
    expect(batch[FEATURE_COUNT + 11]).toBe(18);
  });

  it("writes each batch row as the float64 row cast to float32", () => {
    const inputs: FeatureInput[] = [
      request,
      { ...request, station: "Chandni Chowk, Delhi", season: "Monsoon", hour: 18 },
      { ...request, station: "Anand Vihar, Delhi", latitude: 28.6508, longitude: 77.3152 },
      { ...request, temperature: null, humidity: 12.345678, wind_speed: null, is_weekend: 1 },
    ];
    const expected = new Float32Array(inputs.length * FEATURE_COUNT);
    inputs.forEach((input, index) => {
      expected.set(encodeFeatures(input, spec), index * FEATURE_COUNT);
    });
    expect(encodeBatch(inputs, spec)).toStrictEqual(expected);
  });
});

describe("resolveStation", () => {
  it("matches training names and aliases regardless of case and punctuation", () => {
    expect(normaliseStationName("Lodhi Road, Delhi - IITM")).toBe("lodhi road delhi iitm");
    const byAlias = resolveStation("lodhi road delhi – iitm", 0, 0, spec.stations);
    expect(byAlias.station.name).toBe("Lodhi Road, Delhi");
    expect(byAlias.matchedBy).toBe("name");
    expect(resolveStation("DL040", 28.6567, 77.2273, spec.stations).stationIndex).toBe(0);
  });

  it("scores an unseen station as the nearest training station", () => {
    // Anand Vihar: about 8.6 km from Chandni Chowk, 11 km from Lodhi Road.
    const anandVihar = resolveStation("Anand Vihar, Delhi", 28.6508, 77.3152, spec.stations);
    expect(anandVihar.matchedBy).toBe("nearest");
    expect(anandVihar.station.name).toBe("Chandni Chowk, Delhi");
    expect(anandVihar.distanceKm).toBeGreaterThan(8);
    expect(anandVihar.distanceKm).toBeLessThan(9.5);
    // R. K. Puram is nearer Lodhi Road.
    expect(resolveStation("R.K. Puram, Delhi", 28.5648, 77.1744, spec.stations).station.name).toBe(
      "Lodhi Road, Delhi",
    );
  });

  it("gives an unseen station the resolved station's location columns", () => {
    const row = encodeFeatures(
      { ...request, station: "Anand Vihar, Delhi", latitude: 28.6508, longitude: 77.3152 },
      spec,
    );
    expect(row.slice(0, 2)).toEqual([28.6567, 77.2273]);
  });

  it("answers as matching every name afresh would, each time a station table is used", () => {
    // Each call normalising every training name and alias again, the plain way.
    const afresh = (name: string) => {
      const key = normaliseStationName(name);
      return spec.stations.findIndex(
        (station) =>
          key.length > 0 &&
          [station.name, ...station.aliases].some((known) => normaliseStationName(known) === key),
      );
    };
    const names = fc.oneof(
      fc.constantFrom(
        ...spec.stations.flatMap((station) => [station.name, ...station.aliases]),
        "LODHI ROAD delhi",
        "dl-039",
        "Chandni  Chowk",
        "",
        " , ",
      ),
      fc.string(),
    );
    fc.assert(
      fc.property(names, (name) => {
        const resolved = resolveStation(name, 28.62, 77.2, spec.stations);
        const index = afresh(name);
        expect(resolved.matchedBy).toBe(index >= 0 ? "name" : "nearest");
        if (index >= 0) expect(resolved.stationIndex).toBe(index);
      }),
      { numRuns: 300 },
    );
  });

  it("measures great-circle distance", () => {
    expect(haversineKm(28.6567, 77.2273, 28.589701, 77.221917)).toBeCloseTo(7.47, 1);
  });
});

describe("assertSpecMatchesCode", () => {
  it("accepts the current layout and rejects others", () => {
    expect(() => assertSpecMatchesCode(spec)).not.toThrow();
    expect(() =>
      assertSpecMatchesCode({ ...spec, featureLayoutVersion: FEATURE_LAYOUT_VERSION + 1 }),
    ).toThrow();
    expect(() =>
      assertSpecMatchesCode({ ...spec, featureNames: [...FEATURE_NAMES].reverse() }),
    ).toThrow();
    expect(() => assertSpecMatchesCode({ ...spec, stations: [] })).toThrow();
  });
});
