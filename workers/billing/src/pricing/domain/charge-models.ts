import type { BilledCharge, BilledTier } from "@edge-platform/shared/db/schema/billing";
import type { ChargePricing, PricingTier } from "@edge-platform/shared/db/schema/catalog";
import {
  divideRoundHalfUp,
  MICRO_CENTS_PER_CENT,
  toSafeInteger,
  usageAmountCents,
} from "../../platform/index.ts";

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
// Unit prices are micro-cents (1/100 cent), fees and package prices cents.
// Rounding: a charge is summed exactly in micro-cents (units x unit price,
// plus fees x 100) and rounded half up to cents ONCE, by the rule in
// money.ts. Per-unit lines keep that rule as it always was: each line is
// quantity x price rounded. A tiered or package window billed across
// several invoices (a window longer than the billing period, or an invoice
// finalized early) is priced as a whole each time, and each invoice bills
// the window's charge so far less what earlier invoices charged of it, so
// the lines of a window add up to the charge of all its units, rounded
// once. Graduated and package charges only grow with the units; a volume
// charge can fall when the total reaches a cheaper tier: the window then
// keeps what it was charged (a line never takes money back).

export const MAX_PRICING_TIERS = 20;

/** How a billable feature prices its units: the per-unit shorthand or a charge model. */
export type UsagePricing = { model: "per_unit"; unitPrice: number } | ChargePricing;

const isCount = (value: unknown): value is number =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0;

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
    if (!isCount(tier.unitPrice)) {
      return `${at}.unitPrice must be a non-negative whole number of micro-cents (1 cent = 100)`;
    }
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

/** A charge for billed units 1..units: exact micro-cents and what it billed. */
interface Charge {
  microCents: bigint;
  /** Graduated: units per tier (same order as the tiers); volume: the reached tier's index. */
  unitsPerTier: number[];
  reachedTier: number | null;
  packages: number;
}

const fee = (tier: PricingTier) => BigInt(tier.flatFee ?? 0) * MICRO_CENTS_PER_CENT;

function charge(pricing: ChargePricing, units: number): Charge {
  const none: Charge = { microCents: 0n, unitsPerTier: [], reachedTier: null, packages: 0 };
  if (units <= 0) return none;
  if (pricing.model === "package") {
    const packages = Math.ceil(units / pricing.packageSize);
    return {
      ...none,
      packages,
      microCents: BigInt(packages) * BigInt(pricing.packagePrice) * MICRO_CENTS_PER_CENT,
    };
  }
  if (pricing.model === "volume") {
    const index = pricing.tiers.findIndex((tier) => tier.upTo === null || units <= tier.upTo);
    const tier = pricing.tiers[index];
    if (!tier) throw new RangeError("volume tiers have no open last tier");
    return {
      ...none,
      reachedTier: index,
      microCents: BigInt(units) * BigInt(tier.unitPrice) + fee(tier),
    };
  }
  let microCents = 0n;
  let below = 0;
  const unitsPerTier = pricing.tiers.map((tier) => {
    const top = tier.upTo === null ? units : Math.min(units, tier.upTo);
    const inTier = Math.max(0, top - below);
    below = tier.upTo ?? below;
    if (inTier > 0) microCents += BigInt(inTier) * BigInt(tier.unitPrice) + fee(tier);
    return inTier;
  });
  return { ...none, microCents, unitsPerTier };
}

const toCents = (microCents: bigint) =>
  toSafeInteger(divideRoundHalfUp(microCents, MICRO_CENTS_PER_CENT));

/** Cents for billed units 1..units of a window, rounded half up once. */
export function chargeCents(pricing: ChargePricing, units: number): number {
  if (!Number.isSafeInteger(units) || units < 0) throw new RangeError("units must be a count");
  return toCents(charge(pricing, units).microCents);
}

export interface UsageCharge {
  /** Cents this line bills. */
  amount: number;
  /**
   * The line's unit price in micro-cents: the price itself for per-unit
   * pricing; otherwise the average, amount x 100 / quantity rounded half up.
   */
  unitPriceMicroCents: number;
  /** What the tiers or packages billed; null for per-unit pricing. */
  billed: BilledCharge | null;
}

function tierRows(
  tiers: PricingTier[],
  units: (index: number) => number,
  fees: (index: number) => number,
): BilledTier[] {
  const rows: BilledTier[] = [];
  let below = 0;
  tiers.forEach((tier, index) => {
    const from = below + 1;
    below = tier.upTo ?? below;
    const count = units(index);
    if (count > 0) {
      rows.push({
        from,
        upTo: tier.upTo,
        units: count,
        unitPrice: tier.unitPrice,
        flatFee: fees(index),
      });
    }
  });
  return rows;
}

/**
 * The line for `quantity` more billed units of a window of which
 * `alreadyBilled` units and `alreadyCharged` cents were on earlier invoices.
 */
export function usageCharge(
  pricing: UsagePricing,
  window: { alreadyBilled: number; alreadyCharged: number },
  quantity: number,
): UsageCharge {
  if (pricing.model === "per_unit") {
    return {
      amount: usageAmountCents(quantity, pricing.unitPrice),
      unitPriceMicroCents: pricing.unitPrice,
      billed: null,
    };
  }
  const before = charge(pricing, window.alreadyBilled);
  const total = window.alreadyBilled + quantity;
  const after = charge(pricing, total);
  const amount = Math.max(0, toCents(after.microCents) - window.alreadyCharged);
  const unitPriceMicroCents =
    quantity > 0
      ? toSafeInteger(divideRoundHalfUp(BigInt(amount) * MICRO_CENTS_PER_CENT, BigInt(quantity)))
      : 0;
  let billed: BilledCharge;
  if (pricing.model === "package") {
    billed = {
      model: "package",
      packages: {
        count: after.packages - before.packages,
        packageSize: pricing.packageSize,
        packagePrice: pricing.packagePrice,
      },
    };
  } else if (pricing.model === "volume") {
    const reached = after.reachedTier;
    billed = {
      model: "volume",
      tiers: tierRows(
        pricing.tiers,
        (index) => (index === reached ? total : 0),
        (index) => (index === reached ? (pricing.tiers[index]?.flatFee ?? 0) : 0),
      ),
    };
  } else {
    billed = {
      model: "graduated",
      tiers: tierRows(
        pricing.tiers,
        (index) => (after.unitsPerTier[index] ?? 0) - (before.unitsPerTier[index] ?? 0),
        // A tier's fee goes on the line where its first unit is billed.
        (index) =>
          (before.unitsPerTier[index] ?? 0) === 0 && (after.unitsPerTier[index] ?? 0) > 0
            ? (pricing.tiers[index]?.flatFee ?? 0)
            : 0,
      ),
    };
  }
  return { amount, unitPriceMicroCents, billed };
}

const count = (value: number) => value.toLocaleString("en-US");

/** Micro-cents as a currency amount with at least two decimals ("0.005 USD"). */
export function formatUnitPrice(microCents: number, currency: string): string {
  const negative = microCents < 0;
  const absolute = BigInt(Math.abs(microCents));
  const major = (absolute / 10_000n).toLocaleString("en-US");
  const minor = (absolute % 10_000n)
    .toString()
    .padStart(4, "0")
    .replace(/0{1,2}$/, "");
  return `${negative ? "-" : ""}${major}.${minor.length < 2 ? minor.padEnd(2, "0") : minor} ${currency.toUpperCase()}`;
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
    return `${count(tier.units)} x ${formatUnitPrice(tier.unitPrice, currency)} (tier ${range})${flat}`;
  });
  return `${billed.model}: ${parts.join(" + ")}`;
}
