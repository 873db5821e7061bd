// Money arithmetic. Amounts are integer cents; overage unit prices are
// integer micro-cents (1 cent = 100 micro-cents). Products are computed in
// BigInt so that no intermediate value loses precision, and the result must
// fit a safe integer. There is no float anywhere on these paths.
//
// THE rounding rule (the only one): a fraction of a cent rounds half up,
// i.e. to the nearest cent with exact halves going towards +infinity
// (0.5 -> 1, -0.5 -> 0). It applies to usage lines (quantity x micro-cents
// / 100) and to proration (price x unused time / period length).

export const MICRO_CENTS_PER_CENT = 100n;

/** numerator / denominator rounded to the nearest integer, halves towards +infinity. */
export function divideRoundHalfUp(numerator: bigint, denominator: bigint): bigint {
  if (denominator <= 0n) throw new RangeError("denominator must be positive");
  // floor((2n + d) / 2d) is round-half-up for any sign of n.
  const twice = 2n * numerator + denominator;
  const divisor = 2n * denominator;
  const quotient = twice / divisor;
  // BigInt division truncates towards zero; make it a floor.
  return twice % divisor !== 0n && twice < 0n ? quotient - 1n : quotient;
}

export function toSafeInteger(value: bigint, what = "amount"): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new RangeError(`${what} is out of range`);
  }
  return Number(value);
}

function requireInteger(value: number, what: string): bigint {
  if (!Number.isSafeInteger(value)) throw new RangeError(`${what} must be a safe integer`);
  return BigInt(value);
}

/** Cents for `quantity` units at `unitPriceMicroCents` each. */
export function usageAmountCents(quantity: number, unitPriceMicroCents: number): number {
  const units = requireInteger(quantity, "quantity");
  const price = requireInteger(unitPriceMicroCents, "unitPriceMicroCents");
  return toSafeInteger(divideRoundHalfUp(units * price, MICRO_CENTS_PER_CENT));
}

/** `amountCents` x part / whole (e.g. milliseconds of a period), rounded by the rule above. */
export function prorateCents(amountCents: number, part: number, whole: number): number {
  const amount = requireInteger(amountCents, "amountCents");
  const p = requireInteger(part, "part");
  const w = requireInteger(whole, "whole");
  if (w <= 0n) throw new RangeError("whole must be positive");
  let clamped = p;
  if (clamped < 0n) clamped = 0n;
  if (clamped > w) clamped = w;
  return toSafeInteger(divideRoundHalfUp(amount * clamped, w));
}

/** Cents as micro-cents (for the unit price of a base-fee line). */
export function centsToMicroCents(cents: number): number {
  return toSafeInteger(requireInteger(cents, "cents") * MICRO_CENTS_PER_CENT);
}

/** Exact integer sum; throws rather than lose precision. */
export function sumCents(values: readonly number[]): number {
  return toSafeInteger(values.reduce((sum, value) => sum + requireInteger(value, "amount"), 0n));
}

/** "$1,234.56" style, for descriptions only (never parsed back). */
export function formatCents(cents: number, currency: string): string {
  const negative = cents < 0;
  const absolute = BigInt(Math.abs(cents));
  const major = (absolute / 100n).toLocaleString("en-US");
  const minor = (absolute % 100n).toString().padStart(2, "0");
  return `${negative ? "-" : ""}${major}.${minor} ${currency.toUpperCase()}`;
}
