/**
 * Turning the model's three outputs (point, 10% and 90% quantiles, on the AQI
 * scale) into the response fields, with the reference service's rounding.
 */

import {
  AQI_SCALE_MAX,
  AQI_SCALE_MIN,
  type AqiCategoryLabel,
  categoryForAqi,
} from "./categories.ts";

/** Python's round(x): nearest integer, ties to the even one (50.5 -> 50, 51.5 -> 52). */
export function roundHalfToEven(value: number): number {
  if (!Number.isFinite(value)) {
    throw new RangeError(`cannot round ${value}`);
  }
  const floor = Math.floor(value);
  const fraction = value - floor;
  if (fraction < 0.5) return floor + 0; // "+ 0" turns -0 into 0
  if (fraction > 0.5) return floor + 1;
  return floor % 2 === 0 ? floor + 0 : floor + 1;
}

/**
 * Python's round(x, 2): the exact binary value rounded to 2 decimals, exact
 * ties to even. `toFixed` also rounds the exact binary value but sends ties
 * up; an exact tie at the third decimal needs x * 8 to be an integer (the
 * tie x = k/100 + 1/200 must have a power-of-two denominator), and then x * 100
 * is computed exactly, so ties are detected and rounded to even there.
 */
export function roundTo2Decimals(value: number): number {
  if (!Number.isFinite(value)) {
    throw new RangeError(`cannot round ${value}`);
  }
  if (Number.isInteger(value * 8) && Math.abs(value) < 2 ** 40) {
    return roundHalfToEven(value * 100) / 100;
  }
  return Number(value.toFixed(2));
}

export function clipToScale(value: number): number {
  return Math.min(AQI_SCALE_MAX, Math.max(AQI_SCALE_MIN, value));
}

export interface AqiPrediction {
  /** Model output rounded to 2 decimals, not clipped (as the reference service). */
  readonly aqi_predicted: number;
  /** Half-to-even integer, clipped to 0..500. */
  readonly aqi_rounded: number;
  /** Band of `aqi_rounded` on the national scale. */
  readonly category: AqiCategoryLabel;
  /** 80% interval from the 0.1 and 0.9 quantile models, clipped to 0..500 and widened to contain the point. */
  readonly aqi_interval: { readonly low: number; readonly high: number };
}

/**
 * The quantile models are fitted separately, so on rare rows the 0.1 quantile
 * can come out above the point or the 0.9 below it; the interval is widened to
 * contain the point rather than reported inverted.
 */
export function interpretModelOutputs(
  point: number,
  quantileLow: number,
  quantileHigh: number,
): AqiPrediction {
  const aqiRounded = clipToScale(roundHalfToEven(point));
  const low = clipToScale(Math.min(quantileLow, quantileHigh, point));
  const high = clipToScale(Math.max(quantileLow, quantileHigh, point));
  return {
    aqi_predicted: roundTo2Decimals(point),
    aqi_rounded: aqiRounded,
    category: categoryForAqi(aqiRounded),
    aqi_interval: { low: roundTo2Decimals(low), high: roundTo2Decimals(high) },
  };
}

/**
 * The recent-reading model predicts how far the AQI moves from the reading,
 * in log space per square root of the reading's age:
 * z = (log1p(aqi) - log1p(recent_aqi)) / sqrt(age hours). This turns a z
 * (point or quantile) back into AQI; it is monotone in z, so quantiles stay
 * quantiles. Kept out of the ONNX graph: eight elementwise operators there
 * cost more per run than this loop does in JavaScript.
 */
export function aqiFromReadingZ(z: number, recentAqi: number, ageHours: number): number {
  return Math.expm1(Math.log1p(recentAqi) + Math.sqrt(ageHours) * z);
}

/**
 * The recent-hours model predicts the AQI relative to the window arithmetic
 * (the forecast that keeps the measured hours of the predicted hour's windows
 * and fills the rest), in log space: z = log1p(aqi) - log1p(window arithmetic).
 * The interval ends are z plus the horizon band's residual quantiles (`dz`).
 * Monotone in z + dz, so the ends stay ordered around the point.
 */
export function aqiFromWindowArithmeticZ(
  z: number,
  dz: number,
  windowArithmeticAqi: number,
): number {
  return Math.expm1(Math.log1p(windowArithmeticAqi) + (z + dz));
}
