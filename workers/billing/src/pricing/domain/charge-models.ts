import type { BilledCharge, BilledTier } from "@edge-platform/shared/db/schema/billing";
import type { ChargePricing, PricingTier } from "@edge-platform/shared/db/schema/catalog";
import { divideRoundHalfUp, MICRO_CENTS_PER_CENT, toSafeInteger } from "../../platform/index.ts";
import {
  centsToExact,
  decimalPriceProblem,
  exactToCents,
  PRICE_SCALE,
  QUANTITY_SCALE,
  roundedMicroCents,
  scalePrice,
  scaleQuantity,
  unscaleQuantity,
} from "./fixed-point.ts";

// The charge models: how the units a feature bills (beyond its included
// amount or SOFT limit) become money. Pure functions, no I/O.
//
//   per unit   `overagePrice` micro-cents each (the shorthand).
//   graduated  each unit at the price of the tier it falls in; a tier's
//              flatFee once when any unit falls in it.
//   volume     every unit at the price of the tier the total reaches, plus
//              that tier's flatFee.
//   package    each started package of `packageSize` units costs
//              `packagePrice` cents.
//
// Unit prices are micro-cents (1/100 cent), whole (`unitPrice`,
// `overagePrice`) or decimal strings (`unitPriceDecimal`,
// `overagePriceDecimal`); fees and package prices cents. Quantities may be
// fractions (AVG and WEIGHTED_SUM meters). Rounding: a charge is summed
// exactly (units x unit price, plus fees, in fixed point: fixed-point.ts)
// and rounded half up to cents ONCE, by the rule in money.ts. Per-unit
// lines keep that rule as it always was: each line is quantity x price
// rounded. A tiered or package window billed across
// several invoices (a window longer than the billing period, or an invoice
// finalized early) is priced as a whole each time, and each invoice bills
// the window's charge so far less what earlier invoices charged of it, so
// the lines of a window add up to the charge of all its units, rounded
// once. Graduated and package charges only grow with the units; a volume
// charge can fall when the total reaches a cheaper tier: the window then
// keeps what it was charged (a line never takes money back).

export const MAX_PRICING_TIERS = 20;

/**
 * How a billable feature prices its units: the per-unit shorthand or a
 * charge model. A per-unit price given as a decimal (`unitPriceDecimal`)
 * is the price; `unitPrice` is then that price rounded up to whole
 * micro-cents, so a positive price never reads as free.
 */
export type UsagePricing =
  | { model: "per_unit"; unitPrice: number; unitPriceDecimal?: string | undefined }
  | ChargePricing;

const isCount = (value: unknown): value is number =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0;

const isSet = (value: unknown) => value !== undefined && value !== null;

/** Why a tier's unit price cannot be stored: exactly one of unitPrice and unitPriceDecimal. */
function tierPriceProblem(tier: PricingTier, at: string): string | undefined {
  const whole = isSet(tier.unitPrice);
  const decimal = isSet(tier.unitPriceDecimal);
  if (whole && decimal) {
    return `${at} takes one of unitPrice and unitPriceDecimal, not both`;
  }
  if (decimal) return decimalPriceProblem(`${at}.unitPriceDecimal`, tier.unitPriceDecimal);
  if (!whole) {
    return `${at} needs unitPrice (whole micro-cents) or unitPriceDecimal (decimal micro-cents)`;
  }
  if (!isCount(tier.unitPrice)) {
    return `${at}.unitPrice must be a non-negative whole number of micro-cents (1 cent = 100)`;
  }
  return undefined;
}

/** A tier's unit price as the exact arithmetic takes it. */
const tierPrice = (tier: PricingTier) => scalePrice(tier.unitPriceDecimal ?? tier.unitPrice ?? 0);

/** Why `pricing` cannot be stored (the first problem found), or undefined when it is valid. */
export function pricingProblem(pricing: ChargePricing): string | undefined {
  if (pricing.model === "package") {
    if (!isCount(pricing.packageSize) || pricing.packageSize < 1) {
      return "pricing.packageSize must be a whole number of units, at least 1";
    }
    if (!isCount(pricing.packagePrice)) {
      return "pricing.packagePrice must be a non-negative whole number of cents";
    }
    return undefined;
  }
  const { tiers } = pricing;
  if (!Array.isArray(tiers) || tiers.length === 0) {
    return "pricing.tiers must list at least one tier";
  }
  if (tiers.length > MAX_PRICING_TIERS) {
    return `pricing.tiers must have at most ${MAX_PRICING_TIERS} tiers`;
  }
  let previous = 0;
  for (const [index, tier] of tiers.entries()) {
    const at = `pricing.tiers[${index}]`;
    const last = index === tiers.length - 1;
    const priceProblem = tierPriceProblem(tier, at);
    if (priceProblem) return priceProblem;
    if (tier.flatFee !== undefined && !isCount(tier.flatFee)) {
      return `${at}.flatFee must be a non-negative whole number of cents`;
    }
    if (tier.upTo === null) {
      if (!last) return `${at}.upTo is null, but only the last tier may be open (upTo: null)`;
      continue;
    }
    if (!isCount(tier.upTo)) return `${at}.upTo must be a whole number of units or null`;
    if (tier.upTo <= previous) {
      return index === 0
        ? `${at}.upTo must be at least 1`
        : `${at}.upTo must be greater than the previous tier's upTo (${previous}): tiers strictly increase`;
    }
    if (last) return "The last tier must be open: give it upTo: null";
    previous = tier.upTo;
  }
  return undefined;
}

/**
 * A charge for billed units 0..units (units scaled by QUANTITY_SCALE): the
 * exact amount in units of 1e-19 micro-cent (fixed-point.ts) and what it
 * billed.
 */
interface Charge {
  exact: bigint;
  /** Graduated: scaled units per tier (same order as the tiers). */
  unitsPerTier: bigint[];
  /** Volume: the reached tier's index. */
  reachedTier: number | null;
  packages: number;
}

const fee = (tier: PricingTier) => centsToExact(tier.flatFee ?? 0);
const scaledBound = (upTo: number) => BigInt(upTo) * QUANTITY_SCALE;

function charge(pricing: ChargePricing, units: bigint): Charge {
  const none: Charge = { exact: 0n, unitsPerTier: [], reachedTier: null, packages: 0 };
  if (units <= 0n) return none;
  if (pricing.model === "package") {
    const size = scaledBound(pricing.packageSize);
    const packages = toSafeInteger((units + size - 1n) / size, "packages");
    return { ...none, packages, exact: BigInt(packages) * centsToExact(pricing.packagePrice) };
  }
  if (pricing.model === "volume") {
    const index = pricing.tiers.findIndex(
      (tier) => tier.upTo === null || units <= scaledBound(tier.upTo),
    );
    const tier = pricing.tiers[index];
    if (!tier) throw new RangeError("volume tiers have no open last tier");
    return { ...none, reachedTier: index, exact: units * tierPrice(tier) + fee(tier) };
  }
  let exact = 0n;
  let below = 0n;
  const unitsPerTier = pricing.tiers.map((tier) => {
    const top =
      tier.upTo === null || units < scaledBound(tier.upTo) ? units : scaledBound(tier.upTo);
    const inTier = top > below ? top - below : 0n;
    if (tier.upTo !== null) below = scaledBound(tier.upTo);
    if (inTier > 0n) exact += inTier * tierPrice(tier) + fee(tier);
    return inTier;
  });
  return { ...none, exact, unitsPerTier };
}

/** Cents for billed units 0..units of a window (a fraction allowed), rounded half up once. */
export function chargeCents(pricing: ChargePricing, units: number): number {
  if (!Number.isFinite(units) || units < 0) throw new RangeError("units must not be negative");
  return exactToCents(charge(pricing, scaleQuantity(units)).exact);
}

export interface UsageCharge {
  /** Cents this line bills. */
  amount: number;
  /**
   * The line's unit price in whole micro-cents: the price itself for a
   * whole per-unit price, a decimal one rounded half up; otherwise the
   * average, amount x 100 / quantity rounded half up.
   */
  unitPriceMicroCents: number;
  /** What the tiers or packages billed; null for per-unit pricing. */
  billed: BilledCharge | null;
}

/** A billed tier; a tier priced in decimal micro-cents also says its exact price. */
export type PricedBilledTier = BilledTier & { unitPriceDecimal?: string };

function tierRows(
  tiers: PricingTier[],
  units: (index: number) => bigint,
  fees: (index: number) => number,
): BilledTier[] {
  const rows: PricedBilledTier[] = [];
  let below = 0;
  tiers.forEach((tier, index) => {
    const from = below + 1;
    below = tier.upTo ?? below;
    const count = units(index);
    if (count > 0n) {
      rows.push({
        from,
        upTo: tier.upTo,
        units: unscaleQuantity(count),
        unitPrice:
          tier.unitPriceDecimal !== undefined
            ? roundedMicroCents(tier.unitPriceDecimal)
            : (tier.unitPrice ?? 0),
        flatFee: fees(index),
        ...(tier.unitPriceDecimal !== undefined ? { unitPriceDecimal: tier.unitPriceDecimal } : {}),
      });
    }
  });
  return rows;
}

/** The per-unit line: quantity x price, exact, rounded half up once. */
function perUnitCharge(
  pricing: Extract<UsagePricing, { model: "per_unit" }>,
  quantity: bigint,
): UsageCharge {
  const price = pricing.unitPriceDecimal ?? pricing.unitPrice;
  return {
    amount: exactToCents(quantity * scalePrice(price)),
    unitPriceMicroCents:
      pricing.unitPriceDecimal !== undefined
        ? roundedMicroCents(pricing.unitPriceDecimal)
        : pricing.unitPrice,
    billed: null,
  };
}

/**
 * The line for `quantity` more billed units of a window of which
 * `alreadyBilled` units and `alreadyCharged` cents were on earlier
 * invoices. Quantities may be fractions (rounded to 9 decimals); prices
 * whole or decimal micro-cents.
 */
export function usageCharge(
  pricing: UsagePricing,
  window: { alreadyBilled: number; alreadyCharged: number },
  quantity: number,
): UsageCharge {
  const units = scaleQuantity(quantity);
  if (pricing.model === "per_unit") return perUnitCharge(pricing, units);
  const earlier = scaleQuantity(window.alreadyBilled);
  const before = charge(pricing, earlier);
  const total = earlier + units;
  const after = charge(pricing, total);
  const amount = Math.max(0, exactToCents(after.exact) - window.alreadyCharged);
  const unitPriceMicroCents =
    units > 0n
      ? toSafeInteger(
          divideRoundHalfUp(BigInt(amount) * MICRO_CENTS_PER_CENT * QUANTITY_SCALE, units),
        )
      : 0;
  return { amount, unitPriceMicroCents, billed: billedOf(pricing, before, after, total) };
}

/** What a line of tiered or package pricing billed: the packages or tiers its units fell in. */
function billedOf(
  pricing: ChargePricing,
  before: Charge,
  after: Charge,
  total: bigint,
): BilledCharge {
  if (pricing.model === "package") {
    return {
      model: "package",
      packages: {
        count: after.packages - before.packages,
        packageSize: pricing.packageSize,
        packagePrice: pricing.packagePrice,
      },
    };
  }
  if (pricing.model === "volume") {
    const reached = after.reachedTier;
    return {
      model: "volume",
      tiers: tierRows(
        pricing.tiers,
        (index) => (index === reached ? total : 0n),
        (index) => (index === reached ? (pricing.tiers[index]?.flatFee ?? 0) : 0),
      ),
    };
  }
  return {
    model: "graduated",
    tiers: tierRows(
      pricing.tiers,
      (index) => (after.unitsPerTier[index] ?? 0n) - (before.unitsPerTier[index] ?? 0n),
      // A tier's fee goes on the line where its first unit is billed.
      (index) =>
        (before.unitsPerTier[index] ?? 0n) === 0n && (after.unitsPerTier[index] ?? 0n) > 0n
          ? (pricing.tiers[index]?.flatFee ?? 0)
          : 0,
    ),
  };
}

const count = (value: number) => value.toLocaleString("en-US");

/**
 * Micro-cents (whole, or a decimal string) as a currency amount with at
 * least two decimals ("0.005 USD", "0.000015 USD" for "0.15").
 */
export function formatUnitPrice(microCents: number | string, currency: string): string {
  const scaled = scalePrice(typeof microCents === "number" ? Math.abs(microCents) : microCents);
  const negative = typeof microCents === "number" && microCents < 0;
  // 1 currency unit = 10,000 micro-cents.
  const perMajor = 10_000n * PRICE_SCALE;
  const major = (scaled / perMajor).toLocaleString("en-US");
  const minor = (scaled % perMajor)
    .toString()
    .padStart(perMajor.toString().length - 1, "0")
    .replace(/0+$/, "")
    .padEnd(2, "0");
  return `${negative ? "-" : ""}${major}.${minor} ${currency.toUpperCase()}`;
}

/** The part of a line's description that says how the units were priced. */
export function describeCharge(billed: BilledCharge, currency: string): string {
  const cents = (value: number) => formatUnitPrice(value * 100, currency);
  if (billed.packages) {
    const { count: packages, packageSize, packagePrice } = billed.packages;
    return `package: ${count(packages)} x ${cents(packagePrice)} per ${count(packageSize)} units`;
  }
  const parts = (billed.tiers ?? []).map((tier) => {
    const range =
      tier.upTo === null ? `${count(tier.from)}+` : `${count(tier.from)}-${count(tier.upTo)}`;
    const flat = tier.flatFee > 0 ? ` + ${cents(tier.flatFee)} flat` : "";
    const price = (tier as PricedBilledTier).unitPriceDecimal ?? tier.unitPrice;
    return `${count(tier.units)} x ${formatUnitPrice(price, currency)} (tier ${range})${flat}`;
  });
  return `${billed.model}: ${parts.join(" + ")}`;
}
