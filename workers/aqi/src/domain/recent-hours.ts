// The request's recent hourly readings: their shape, shared by the features
// and the history rules.

/** Request field name of each pollutant, in the calculator's order. */
export const READING_FIELDS = ["pm25", "pm10", "no2", "so2", "nh3", "co", "o3"] as const;

export type ReadingField = (typeof READING_FIELDS)[number];

export type RecentHour = { readonly hours_before: number } & {
  readonly [field in ReadingField]?: number | null | undefined;
};
