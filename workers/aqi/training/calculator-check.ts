/**
 * Checks the AQI calculator against a published AQI: the daily station file
 * of the Kaggle "Air Quality Data in India 2015-2020" dataset
 * (rohanrao_station_day_subset.csv), whose AQI column was computed by CPCB's
 * method from hourly data.
 *
 * The file only carries daily means, so this check feeds the calculator daily
 * means where the published index used rolling windows of hourly values
 * (8-hour maxima of CO and O3 in particular, which a daily mean understates).
 * Exact agreement is therefore not expected; the report breaks the agreement
 * down by dominant pollutant so the PM-driven days (where the daily mean is the
 * right input) can be read separately.
 */

import { readFileSync } from "node:fs";
import {
  type AveragedConcentrations,
  computeAqi,
  type Pollutant,
} from "../src/domain/aqi-calculator.ts";
import { categoryIndexForAqi } from "../src/domain/categories.ts";
import { roundHalfToEven } from "../src/domain/prediction.ts";
import { itemAt } from "./arrays.ts";
import { cell, parseCsvRecords, parseOptionalNumber } from "./csv.ts";
import { round2 } from "./data-quality.ts";

const COLUMN_FOR_POLLUTANT: Readonly<Record<Pollutant, string>> = {
  "PM2.5": "PM2.5",
  PM10: "PM10",
  NO2: "NO2",
  SO2: "SO2",
  NH3: "NH3",
  CO: "CO",
  O3: "O3",
};

export interface AgreementStats {
  readonly days: number;
  readonly exactPercent: number;
  readonly within5Percent: number;
  readonly within10Percent: number;
  readonly within25Percent: number;
  readonly meanAbsoluteDifference: number;
  readonly medianDifference: number;
  readonly categoryExactPercent: number;
  readonly categoryWithinOnePercent: number;
}

export interface CalculatorCheckReport {
  readonly source: string;
  readonly method: string;
  readonly daysWithPublishedAqi: number;
  readonly daysInvalidByDataRule: number;
  readonly overall: AgreementStats;
  readonly delhiStations: AgreementStats;
  readonly byDominantPollutant: Readonly<Record<string, AgreementStats>>;
}

function agreement(pairs: readonly { computed: number; published: number }[]): AgreementStats {
  const differences = pairs
    .map(({ computed, published }) => computed - published)
    .sort((a, b) => a - b);
  const count = pairs.length;
  const percent = (predicate: (pair: { computed: number; published: number }) => boolean): number =>
    round2((100 * pairs.filter(predicate).length) / count);
  return {
    days: count,
    exactPercent: percent(({ computed, published }) => computed === published),
    within5Percent: percent(({ computed, published }) => Math.abs(computed - published) <= 5),
    within10Percent: percent(({ computed, published }) => Math.abs(computed - published) <= 10),
    within25Percent: percent(({ computed, published }) => Math.abs(computed - published) <= 25),
    meanAbsoluteDifference: round2(differences.reduce((sum, d) => sum + Math.abs(d), 0) / count),
    medianDifference: itemAt(differences, Math.floor(count / 2)),
    categoryExactPercent: percent(
      ({ computed, published }) => categoryIndexForAqi(computed) === categoryIndexForAqi(published),
    ),
    categoryWithinOnePercent: percent(
      ({ computed, published }) =>
        Math.abs(categoryIndexForAqi(computed) - categoryIndexForAqi(published)) <= 1,
    ),
  };
}

export function checkCalculatorAgainstPublished(path: string): CalculatorCheckReport {
  const records = parseCsvRecords(readFileSync(path, "utf8"));
  const pairs: { computed: number; published: number; station: string; dominant: string }[] = [];
  let withPublished = 0;
  let invalid = 0;
  for (const record of records) {
    const published = parseOptionalNumber(cell(record, "AQI"));
    if (published === null) continue;
    withPublished += 1;
    const concentrations: AveragedConcentrations = {};
    for (const [pollutant, column] of Object.entries(COLUMN_FOR_POLLUTANT) as [
      Pollutant,
      string,
    ][]) {
      const value = parseOptionalNumber(cell(record, column));
      concentrations[pollutant] = value !== null && value >= 0 ? value : null;
    }
    const result = computeAqi(concentrations);
    if (result.aqi === null || result.uncappedAqi === null) {
      invalid += 1;
      continue;
    }
    // The published column is not capped at 500 (its maximum is 956), so compare the uncapped index.
    pairs.push({
      computed: roundHalfToEven(result.uncappedAqi),
      published,
      station: cell(record, "StationId"),
      dominant: result.dominantPollutant ?? "none",
    });
  }
  const byDominantPollutant: Record<string, AgreementStats> = {};
  for (const dominant of [...new Set(pairs.map((pair) => pair.dominant))].sort()) {
    byDominantPollutant[dominant] = agreement(pairs.filter((pair) => pair.dominant === dominant));
  }
  return {
    source: "rohanrao_station_day_subset.csv (Kaggle 'Air Quality Data in India 2015-2020', CPCB)",
    method:
      "daily means of the file fed to computeAqi (all 7 pollutants, NO2 not NOx), rounded half to even, compared with the published AQI " +
      "without the 500 cap; days where the data rule (>= 3 pollutants incl. PM2.5 or PM10) fails are counted separately",
    daysWithPublishedAqi: withPublished,
    daysInvalidByDataRule: invalid,
    overall: agreement(pairs),
    delhiStations: agreement(pairs.filter((pair) => pair.station.startsWith("DL"))),
    byDominantPollutant,
  };
}
