import { describe, expect, it } from "vitest";
import {
  decideSeason,
  distanceToNearestStationKm,
  hasReading,
  readingPairIssue,
  SERVICE_RADIUS_KM,
  serviceAreaIssue,
} from "./request-checks.ts";

const STATIONS = [
  { name: "Lodhi Road, Delhi", latitude: 28.5918, longitude: 77.2273, aliases: [] },
  { name: "Chandni Chowk, Delhi", latitude: 28.6567, longitude: 77.2273, aliases: [] },
];

describe("readingPairIssue: recent_aqi and its age come together", () => {
  it("accepts both and neither", () => {
    expect(readingPairIssue({ recent_aqi: 200, recent_aqi_age_hours: 3 }, ["body"])).toBeNull();
    expect(readingPairIssue({}, ["body"])).toBeNull();
    expect(readingPairIssue({ recent_aqi: null, recent_aqi_age_hours: null }, ["body"])).toBeNull();
  });

  it("refuses one without the other, naming the absent field", () => {
    const issue = readingPairIssue({ recent_aqi: 200 }, ["body", "requests", 2]);
    expect(issue).toMatchObject({
      type: "value_error",
      loc: ["body", "requests", 2],
      input: { recent_aqi: 200 },
      ctx: { error: "recent_aqi_age_hours is required when recent_aqi is given" },
    });
    expect(issue?.msg).toMatch(/^Value error, recent_aqi was sent without recent_aqi_age_hours/);
    expect(readingPairIssue({ recent_aqi_age_hours: 2 }, ["body"])?.msg).toMatch(
      /recent_aqi_age_hours was sent without recent_aqi/,
    );
  });

  it("hasReading needs both numbers", () => {
    expect(hasReading({ recent_aqi: 0, recent_aqi_age_hours: 0.5 })).toBe(true);
    expect(hasReading({ recent_aqi: 10 })).toBe(false);
    expect(hasReading({})).toBe(false);
  });
});

describe("serviceAreaIssue: within 50 km of a training station", () => {
  it("accepts Delhi stations the model never saw (Anand Vihar, Gurugram Sector-51)", () => {
    expect(
      serviceAreaIssue({ latitude: 28.6508, longitude: 77.3152 }, STATIONS, ["body"]),
    ).toBeNull();
    expect(
      serviceAreaIssue({ latitude: 28.43518, longitude: 77.072 }, STATIONS, ["body"]),
    ).toBeNull();
  });

  it("refuses Mumbai with a message that the service covers Delhi", () => {
    const issue = serviceAreaIssue({ latitude: 19.076, longitude: 72.8777 }, STATIONS, ["body"]);
    expect(issue?.type).toBe("value_error");
    expect(issue?.msg).toMatch(/the service covers Delhi/);
    expect(issue?.msg).toMatch(/limit is 50 km/);
    expect(issue?.ctx).toEqual({ error: "outside the service area", max_distance_km: 50 });
  });

  it("the limit is inclusive and measured great-circle", () => {
    // 50 km due south of Lodhi Road is about 0.4497 degrees of latitude.
    const inside = { latitude: 28.5918 - 0.449, longitude: 77.2273 };
    const outside = { latitude: 28.5918 - 0.451, longitude: 77.2273 };
    expect(distanceToNearestStationKm(inside.latitude, inside.longitude, STATIONS)).toBeLessThan(
      SERVICE_RADIUS_KM,
    );
    expect(serviceAreaIssue(inside, STATIONS, ["body"])).toBeNull();
    expect(serviceAreaIssue(outside, STATIONS, ["body"])).not.toBeNull();
  });
});

describe("decideSeason: the month's season wins", () => {
  it("keeps a season that matches its month", () => {
    expect(decideSeason("Winter", 1)).toEqual({
      season: "Winter",
      derivedFromMonth: false,
      note: null,
    });
    expect(decideSeason("Post-Monsoon", 11).derivedFromMonth).toBe(false);
  });

  it("replaces one that does not, and says why", () => {
    const decision = decideSeason("Winter", 7);
    expect(decision.season).toBe("Monsoon");
    expect(decision.derivedFromMonth).toBe(true);
    expect(decision.note).toMatch(/season 'Winter' does not match month 7; scored as 'Monsoon'/);
  });
});
