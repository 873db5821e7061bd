/**
 * National Air Quality Index (CPCB, India) calculator.
 *
 * Method (CPCB "National Air Quality Index", 2014):
 * - sub-index of each pollutant by linear interpolation inside the band of the
 *   national breakpoint table that holds its concentration;
 * - concentrations are 24-hour averages for PM2.5, PM10, NO2, SO2 and NH3, and
 *   8-hour maxima for CO and O3;
 * - the AQI is the largest sub-index, and it exists only when at least three
 *   pollutants have data and one of them is PM2.5 or PM10.
 *
 * Units: micrograms per cubic metre for every pollutant except CO, which is in
 * milligrams per cubic metre (as CPCB reports it).
 *
 * The published table writes bands with integer gaps (PM2.5 "0-30", "31-60", ...)
 * because concentrations are reported as integers; for real-valued
 * concentrations the bands are contiguous: (30, 60] maps to (50, 100], etc.
 */

export const POLLUTANTS = ["PM2.5", "PM10", "NO2", "SO2", "NH3", "CO", "O3"] as const;
export type Pollutant = (typeof POLLUTANTS)[number];

export type AveragingRule = "24h-mean" | "8h-max";

export const AVERAGING_RULE: Readonly<Record<Pollutant, AveragingRule>> = {
  "PM2.5": "24h-mean",
  PM10: "24h-mean",
  NO2: "24h-mean",
  SO2: "24h-mean",
  NH3: "24h-mean",
  CO: "8h-max",
  O3: "8h-max",
};

/** Upper AQI of the six bands (Good ... Severe). */
export const BAND_UPPER_INDEX: readonly number[] = [50, 100, 200, 300, 400, 500];

/**
 * Upper concentration of each of the six bands. The last band of the national
 * table is open ("250+"); its upper end here is the one CPCB's calculator uses
 * so that the band spans the same width as the one below it (PM2.5 250-380,
 * PM10 430-510, ...), which keeps the slope continuous up to AQI 500.
 */
export const BAND_UPPER_CONCENTRATION: Readonly<Record<Pollutant, readonly number[]>> = {
  "PM2.5": [30, 60, 90, 120, 250, 380],
  PM10: [50, 100, 250, 350, 430, 510],
  NO2: [40, 80, 180, 280, 400, 520],
  SO2: [40, 80, 380, 800, 1600, 2400],
  NH3: [200, 400, 800, 1200, 1800, 2400],
  CO: [1, 2, 10, 17, 34, 51],
  O3: [50, 100, 168, 208, 748, 1288],
};

/** The national scale ends at 500; the computed AQI is capped there. */
export const AQI_CAP = 500;

/** Minimum number of pollutants with data for an AQI to exist. */
export const MIN_POLLUTANTS_FOR_AQI = 3;

/** CPCB's data-completeness rule: a 24-hour average needs at least 16 hourly values. */
export const MIN_HOURS_FOR_24H_MEAN = 16;
/** The same two-thirds completeness applied to the 8-hour window: at least 6 hourly values. */
export const MIN_HOURS_FOR_8H_MAX = 6;

/**
 * Sub-index of one pollutant. Beyond the last band the line is extended with
 * the last band's slope, so the caller can see how far past 500 a value is;
 * `computeAqi` caps the AQI at 500.
 */
export function subIndex(pollutant: Pollutant, concentration: number): number {
  if (!Number.isFinite(concentration) || concentration < 0) {
    throw new RangeError(
      `${pollutant} concentration must be a finite number >= 0, got ${concentration}`,
    );
  }
  const upperConcentrations = BAND_UPPER_CONCENTRATION[pollutant];
  let lowerConcentration = 0;
  let lowerIndex = 0;
  for (const [band, upperConcentration] of upperConcentrations.entries()) {
    const upperIndex = BAND_UPPER_INDEX[band] ?? AQI_CAP;
    if (concentration <= upperConcentration || band === upperConcentrations.length - 1) {
      const slope = (upperIndex - lowerIndex) / (upperConcentration - lowerConcentration);
      return lowerIndex + (concentration - lowerConcentration) * slope;
    }
    lowerConcentration = upperConcentration;
    lowerIndex = upperIndex;
  }
  // Unreachable: the loop returns on the last band.
  throw new Error("breakpoint table is empty");
}

/** Averaged concentrations (24-hour means, 8-hour maxima); absent or null means "no data". */
export type AveragedConcentrations = Partial<Record<Pollutant, number | null>>;

export interface AqiResult {
  /** The AQI, capped at 500; null when the data rule is not met. */
  readonly aqi: number | null;
  /** The largest sub-index before the 500 cap (null when invalid). */
  readonly uncappedAqi: number | null;
  /** The pollutant with the largest sub-index (null when invalid). */
  readonly dominantPollutant: Pollutant | null;
  readonly subIndices: Readonly<Partial<Record<Pollutant, number>>>;
  /** Why the AQI is null, if it is. */
  readonly invalidReason: "fewer-than-3-pollutants" | "no-particulate-matter" | null;
}

export function computeAqi(concentrations: AveragedConcentrations): AqiResult {
  const subIndices: Partial<Record<Pollutant, number>> = {};
  let dominantPollutant: Pollutant | null = null;
  let largest = -1;
  let pollutantsWithData = 0;
  for (const pollutant of POLLUTANTS) {
    const concentration = concentrations[pollutant];
    if (concentration === undefined || concentration === null || Number.isNaN(concentration)) {
      continue;
    }
    const value = subIndex(pollutant, concentration);
    subIndices[pollutant] = value;
    pollutantsWithData += 1;
    if (value > largest) {
      largest = value;
      dominantPollutant = pollutant;
    }
  }
  if (pollutantsWithData < MIN_POLLUTANTS_FOR_AQI) {
    return {
      aqi: null,
      uncappedAqi: null,
      dominantPollutant: null,
      subIndices,
      invalidReason: "fewer-than-3-pollutants",
    };
  }
  if (subIndices["PM2.5"] === undefined && subIndices.PM10 === undefined) {
    return {
      aqi: null,
      uncappedAqi: null,
      dominantPollutant: null,
      subIndices,
      invalidReason: "no-particulate-matter",
    };
  }
  return {
    aqi: Math.min(largest, AQI_CAP),
    uncappedAqi: largest,
    dominantPollutant,
    subIndices,
    invalidReason: null,
  };
}

/** Hourly concentrations of one station for one hour; null or absent means no reading. */
export type HourlyConcentrations = Partial<Record<Pollutant, number | null>>;

function isReading(value: number | null | undefined): value is number {
  return value !== null && value !== undefined && Number.isFinite(value) && value >= 0;
}

/**
 * Averaged concentrations for the hour at `hourIndex` of a gap-free hourly
 * series (one element per consecutive hour; missing hours are elements with no
 * readings). The windows end at and include that hour: the 24-hour mean covers
 * hours hourIndex-23..hourIndex, the 8-hour maximum hours hourIndex-7..hourIndex.
 * A pollutant without enough readings in its window is reported as null.
 */
export function averagedConcentrationsAt(
  hourly: readonly HourlyConcentrations[],
  hourIndex: number,
): AveragedConcentrations {
  const averaged: AveragedConcentrations = {};
  for (const pollutant of POLLUTANTS) {
    const rule = AVERAGING_RULE[pollutant];
    const windowLength = rule === "24h-mean" ? 24 : 8;
    const minimumReadings = rule === "24h-mean" ? MIN_HOURS_FOR_24H_MEAN : MIN_HOURS_FOR_8H_MAX;
    let count = 0;
    let sum = 0;
    let maximum = Number.NEGATIVE_INFINITY;
    for (let index = Math.max(0, hourIndex - windowLength + 1); index <= hourIndex; index += 1) {
      const value = hourly[index]?.[pollutant];
      if (isReading(value)) {
        count += 1;
        sum += value;
        if (value > maximum) {
          maximum = value;
        }
      }
    }
    if (count >= minimumReadings) {
      averaged[pollutant] = rule === "24h-mean" ? sum / count : maximum;
    } else {
      averaged[pollutant] = null;
    }
  }
  return averaged;
}

/**
 * The hourly AQI series of one station: element i is the AQI at hour i
 * computed from the windows ending at hour i (null when the data rule fails).
 * Runs in O(hours x 24 x pollutants), which is a few million steps for years of data.
 */
export function computeHourlyAqiSeries(hourly: readonly HourlyConcentrations[]): AqiResult[] {
  const results: AqiResult[] = [];
  for (let hourIndex = 0; hourIndex < hourly.length; hourIndex += 1) {
    results.push(computeAqi(averagedConcentrationsAt(hourly, hourIndex)));
  }
  return results;
}
