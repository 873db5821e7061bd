import { divideRoundHalfUp, toSafeInteger } from "../../platform/index.ts";

// Tax rates are exclusive (added on top of the discounted amount) and kept
// as whole millionths: a percentage with up to 4 decimals x 10,000, so
// 10% = 100,000 and 8.875% = 88,750. Tax is that fraction of the taxable
// cents, rounded half up once per invoice.

export const PPM = 1_000_000;
export const MAX_TAX_RATE_PPM = PPM;

/** A percentage (0-100, at most 4 decimals) as millionths, or null when it is not one. */
export function percentToPpm(percent: number): number | null {
  if (!Number.isFinite(percent) || percent < 0 || percent > 100) return null;
  const ppm = Math.round(percent * 10_000);
  // Up to 4 decimals: anything finer does not survive the round trip.
  if (Math.abs(ppm - percent * 10_000) > 1e-6) return null;
  return ppm;
}

/** Millionths back as the percentage number the API shows (100,000 -> 10). */
export function ppmToPercent(ppm: number): number {
  return ppm / 10_000;
}

/** "10", "8.875": the rate as it appears in a TAX line's description. */
export function formatPercent(ppm: number): string {
  const whole = Math.floor(ppm / 10_000);
  const fraction = String(ppm % 10_000)
    .padStart(4, "0")
    .replace(/0+$/, "");
  return fraction ? `${whole}.${fraction}` : String(whole);
}

/** Tax on `taxableCents` at `ratePpm`, rounded half up. */
export function taxCents(taxableCents: number, ratePpm: number): number {
  if (!Number.isSafeInteger(taxableCents) || !Number.isSafeInteger(ratePpm)) {
    throw new RangeError("taxable amount and rate must be integers");
  }
  if (taxableCents <= 0 || ratePpm <= 0) return 0;
  return toSafeInteger(divideRoundHalfUp(BigInt(taxableCents) * BigInt(ratePpm), BigInt(PPM)));
}

/** The description of a TAX line (the SQL in invoicing/storage.ts writes the same text). */
export const taxLineDescription = (ratePpm: number) => `Tax (${formatPercent(ratePpm)}%)`;
