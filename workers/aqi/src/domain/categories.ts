/**
 * The national (CPCB, India) AQI category table, the single definition used by
 * the trainer (category accuracy metrics), the model card and the service
 * (`category` of a prediction, `aqi_categories` of /model/info).
 */

export const AQI_SCALE_MIN = 0;
export const AQI_SCALE_MAX = 500;

export type AqiCategoryLabel =
  | "Good"
  | "Satisfactory"
  | "Moderate"
  | "Poor"
  | "Very Poor"
  | "Severe";

export interface AqiCategory {
  readonly label: AqiCategoryLabel;
  /** Lowest integer AQI of the band, as printed on the national scale. */
  readonly low: number;
  /** Highest AQI of the band; a value belongs to the first band whose `high` is >= it. */
  readonly high: number;
}

export const AQI_CATEGORIES: readonly AqiCategory[] = [
  { label: "Good", low: 0, high: 50 },
  { label: "Satisfactory", low: 51, high: 100 },
  { label: "Moderate", low: 101, high: 200 },
  { label: "Poor", low: 201, high: 300 },
  { label: "Very Poor", low: 301, high: 400 },
  { label: "Severe", low: 401, high: 500 },
];

/**
 * Index (0 = Good ... 5 = Severe) of the band an AQI value falls in.
 * The band is the first whose upper bound is >= the value, so a non-integer
 * such as 50.5 lands in Satisfactory (the reference service's rule); values
 * below 0 count as Good and values above 500 as Severe.
 */
export function categoryIndexForAqi(aqi: number): number {
  if (Number.isNaN(aqi)) {
    throw new RangeError("AQI is NaN");
  }
  const index = AQI_CATEGORIES.findIndex((category) => aqi <= category.high);
  return index === -1 ? AQI_CATEGORIES.length - 1 : index;
}

export function categoryForAqi(aqi: number): AqiCategoryLabel {
  return AQI_CATEGORIES[categoryIndexForAqi(aqi)]?.label ?? "Severe";
}

/** `{"0-50": "Good", "51-100": "Satisfactory", ...}` in scale order, as /model/info returns it. */
export function aqiCategoryRanges(): Record<string, AqiCategoryLabel> {
  const ranges: Record<string, AqiCategoryLabel> = {};
  for (const category of AQI_CATEGORIES) {
    ranges[`${category.low}-${category.high}`] = category.label;
  }
  return ranges;
}
