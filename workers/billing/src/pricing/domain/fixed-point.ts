import {
  DECIMAL_PRICE_PATTERN,
  DECIMAL_PRICE_RULE,
} from "@edge-platform/shared/billing/entitlement-rules";
import { divideRoundHalfUp, MICRO_CENTS_PER_CENT, toSafeInteger } from "../../platform/index.ts";

// Exact arithmetic for usage charges whose quantity is a fraction (AVG and
// WEIGHTED_SUM meters) or whose unit price is a decimal string of
// micro-cents ("0.15"). Quantities are kept as integers of 1e-9 unit
// (rounded half away from zero to 9 decimals, the one rounding of a
// quantity), prices as integers of 1e-10 micro-cent (exact: a decimal
// price has at most 10 decimals), so a product is an exact integer of
// 1e-19 micro-cent, summed over a whole charge and rounded half up to
// cents once (money.ts's rule). Whole quantities at whole prices give the
// same cents as before, since nothing is rounded until that last step.

export const QUANTITY_SCALE = 1_000_000_000n;
export const PRICE_SCALE = 10_000_000_000n;
/** One micro-cent in the unit of an exact product (quantity x price). */
export const EXACT_PER_MICRO_CENT = QUANTITY_SCALE * PRICE_SCALE;

/** Digits of a plain decimal ("-12.5", "3") as an integer scaled by 10^decimals, exactly. */
function scaleDecimalText(text: string, decimals: number): bigint {
  const negative = text.startsWith("-");
  const [whole = "0", fraction = ""] = (negative ? text.slice(1) : text).split(".");
  if (fraction.length > decimals) throw new RangeError(`more than ${decimals} decimals`);
  const scaled = BigInt(whole + fraction.padEnd(decimals, "0"));
  return negative ? -scaled : scaled;
}

/** A quantity in units of 1e-9, rounded to 9 decimals. */
export function scaleQuantity(quantity: number): bigint {
  if (!Number.isFinite(quantity) || Math.abs(quantity) > Number.MAX_SAFE_INTEGER) {
    throw new RangeError("quantity must be a finite number within the safe integer range");
  }
  if (Number.isInteger(quantity)) return BigInt(quantity) * QUANTITY_SCALE;
  // toFixed gives the decimal nearest the double: 0.1 + 0.2 bills as 0.3.
  return scaleDecimalText(quantity.toFixed(9), 9);
}

/** A scaled quantity back as a number (whole quantities exactly). */
export function unscaleQuantity(scaled: bigint): number {
  const whole = scaled / QUANTITY_SCALE;
  const rest = scaled % QUANTITY_SCALE;
  return Number(whole) + Number(rest) / Number(QUANTITY_SCALE);
}

/** Whether `text` is a decimal price of micro-cents the API accepts. */
export function isDecimalPrice(text: unknown): text is string {
  return typeof text === "string" && DECIMAL_PRICE_PATTERN.test(text);
}

/** Why a decimal price is refused (naming `field`), or undefined. */
export function decimalPriceProblem(field: string, text: unknown): string | undefined {
  return isDecimalPrice(text) ? undefined : `${field} must be ${DECIMAL_PRICE_RULE}`;
}

/** A unit price (whole micro-cents, or a decimal string of them) in units of 1e-10 micro-cent. */
export function scalePrice(price: number | string): bigint {
  if (typeof price === "number") {
    if (!Number.isSafeInteger(price)) throw new RangeError("unit price must be a safe integer");
    return BigInt(price) * PRICE_SCALE;
  }
  if (!isDecimalPrice(price)) throw new RangeError(`unit price "${price}" is not a decimal price`);
  return scaleDecimalText(price, 10);
}

/** A decimal price rounded half up to whole micro-cents (what a whole-number field can show). */
export function roundedMicroCents(price: string): number {
  return toSafeInteger(divideRoundHalfUp(scalePrice(price), PRICE_SCALE), "unit price");
}

/** A decimal price rounded up to whole micro-cents: positive whenever the price is. */
export function ceilMicroCents(price: string): number {
  const scaled = scalePrice(price);
  const whole = scaled / PRICE_SCALE;
  return toSafeInteger(scaled % PRICE_SCALE === 0n ? whole : whole + 1n, "unit price");
}

/** Exact product units (1e-19 micro-cent) as cents, rounded half up once. */
export function exactToCents(exact: bigint): number {
  return toSafeInteger(divideRoundHalfUp(exact, EXACT_PER_MICRO_CENT * MICRO_CENTS_PER_CENT));
}

/** Whole cents (a fee, a package price) in exact product units. */
export function centsToExact(cents: number): bigint {
  return BigInt(cents) * MICRO_CENTS_PER_CENT * EXACT_PER_MICRO_CENT;
}

/** Cents for `quantity` units at `unitPrice` (whole or decimal micro-cents), rounded half up once. */
export function perUnitCents(quantity: number, unitPrice: number | string): number {
  return exactToCents(scaleQuantity(quantity) * scalePrice(unitPrice));
}
