import type {
  ChargePricing,
  EntitlementDimension,
  FeatureType,
  LimitBehavior,
  ResetPeriod,
} from "../db/schema/catalog.ts";
import type { Meter } from "./meter.ts";

/** What a plan grants of one feature; which fields are set depends on the feature's type. */
export interface EntitlementTerms {
  value: boolean | null;
  limit: number | null;
  limitBehavior: LimitBehavior | null;
  /** Micro-cents per unit beyond the limit (SOFT QUOTA) or the included amount (METERED). */
  overagePrice: number | null;
  includedAmount: number | null;
  resetPeriod: ResetPeriod | null;
  /** Tiered or package pricing of the same units, instead of `overagePrice`. */
  pricing: ChargePricing | null;
  /**
   * Micro-cents per unit as a decimal string ("0.15"), instead of
   * `overagePrice`: prices below one micro-cent. Optional in the type so
   * terms written before it existed still type-check; resolved terms
   * always carry it (null when unset).
   */
  overagePriceDecimal?: string | null;
  /** Prices of groups of the feature's usage (its meter's groupBy values); null: none. */
  dimensions?: EntitlementDimension[] | null;
}

/** A decimal price in micro-cents: up to 15 digits before the point and 10 after. */
export const DECIMAL_PRICE_PATTERN = /^(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,10})?$/;
export const DECIMAL_PRICE_RULE =
  'a non-negative decimal string of micro-cents with at most 15 digits before the point and 10 after ("0.15")';
export const MAX_DIMENSIONS = 100;
export const MAX_MATCH_KEYS = 3;

/** A dimension as a request sends it: includedAmount defaults to 0, one of the prices. */
export interface EntitlementDimensionInput {
  match: EntitlementDimension["match"];
  includedAmount?: number | null | undefined;
  overagePrice?: number | null | undefined;
  overagePriceDecimal?: string | null | undefined;
  pricing?: ChargePricing | null | undefined;
}

/**
 * A create or update request: a field that is absent is not sent (on update
 * it keeps its stored value); `null` clears it.
 */
export type EntitlementTermsInput = {
  [K in Exclude<keyof EntitlementTerms, "dimensions">]?: EntitlementTerms[K];
} & { dimensions?: EntitlementDimensionInput[] | null | undefined };

export type TermsResolution =
  | { ok: true; terms: EntitlementTerms }
  | { ok: false; message: string };

const TERM_FIELDS = [
  "value",
  "limit",
  "limitBehavior",
  "overagePrice",
  "includedAmount",
  "resetPeriod",
  "pricing",
  "overagePriceDecimal",
  "dimensions",
] as const satisfies readonly (keyof EntitlementTerms)[];

const EMPTY_TERMS: EntitlementTerms = {
  value: null,
  limit: null,
  limitBehavior: null,
  overagePrice: null,
  includedAmount: null,
  resetPeriod: null,
  pricing: null,
  overagePriceDecimal: null,
  dimensions: null,
};

export const ENTITLEMENT_RULE_MESSAGES = {
  booleanMissing: 'BOOLEAN features require "value" (true or false)',
  booleanForbidden:
    'BOOLEAN features only accept "value". Do not set limit, limitBehavior, overagePrice, overagePriceDecimal, pricing, dimensions, includedAmount, or resetPeriod',
  quotaMissing: 'QUOTA features require "limit" and "resetPeriod"',
  quotaForbidden: 'QUOTA features do not accept "value" or "includedAmount"',
  softQuotaMissingPrice:
    'SOFT quotas require "overagePrice" (micro-cents per unit used beyond the limit), "overagePriceDecimal" or "pricing"',
  hardQuotaForbidsPrice:
    'HARD quotas do not accept "overagePrice" or "pricing", nor "overagePriceDecimal" or "dimensions": nothing can be used beyond a hard limit (send null to clear it)',
  meteredMissing:
    'METERED features require "overagePrice" and "resetPeriod" (or "overagePriceDecimal" or "pricing" instead of "overagePrice")',
  priceTwice:
    '"overagePrice", "overagePriceDecimal" and "pricing": two prices cannot both be set. overagePrice is the per-unit shorthand in whole micro-cents, overagePriceDecimal the same in decimal micro-cents, pricing a tiered or package charge (send null to clear the others)',
  meteredForbidden: 'METERED features do not accept "value", "limit", or "limitBehavior"',
} as const;

function isSet(value: unknown): boolean {
  return value !== null && value !== undefined;
}

/**
 * The entitlement terms for a feature of `type`, from a create request (no
 * `existing`) or an update merged over the stored terms. The merged result
 * must satisfy the type's rules as a whole, so an update can never leave a
 * row that a create would have refused. Defaults: QUOTA `limitBehavior`
 * HARD, METERED `includedAmount` 0, a dimension's `includedAmount` 0.
 * Missing fields are reported before forbidden ones. Value ranges
 * (non-negative integers, enums, the decimal format) are the request
 * schema's job; whether dimensions fit the feature's meter is
 * dimensionsMeterProblem's.
 */
export function resolveEntitlementTerms(
  type: FeatureType,
  input: EntitlementTermsInput,
  existing?: EntitlementTerms,
): TermsResolution {
  // Only the term fields: callers may hand in whole rows.
  const base = existing ?? EMPTY_TERMS;
  const terms = Object.fromEntries(
    TERM_FIELDS.map((field) => [
      field,
      input[field] !== undefined ? input[field] : (base[field] ?? null),
    ]),
  ) as unknown as EntitlementTerms;
  const fail = (message: string): TermsResolution => ({ ok: false, message });
  const prices = [terms.overagePrice, terms.overagePriceDecimal, terms.pricing].filter(isSet);

  switch (type) {
    case "BOOLEAN": {
      if (!isSet(terms.value)) return fail(ENTITLEMENT_RULE_MESSAGES.booleanMissing);
      const forbidden = [
        terms.limit,
        terms.limitBehavior,
        terms.includedAmount,
        terms.resetPeriod,
        terms.dimensions,
        ...prices,
      ];
      if (forbidden.some(isSet)) return fail(ENTITLEMENT_RULE_MESSAGES.booleanForbidden);
      return { ok: true, terms };
    }
    case "QUOTA": {
      if (!isSet(terms.limit) || !isSet(terms.resetPeriod)) {
        return fail(ENTITLEMENT_RULE_MESSAGES.quotaMissing);
      }
      if (isSet(terms.value) || isSet(terms.includedAmount)) {
        return fail(ENTITLEMENT_RULE_MESSAGES.quotaForbidden);
      }
      terms.limitBehavior ??= "HARD";
      if (terms.limitBehavior === "SOFT" && prices.length === 0) {
        return fail(ENTITLEMENT_RULE_MESSAGES.softQuotaMissingPrice);
      }
      if (terms.limitBehavior === "HARD" && (prices.length > 0 || isSet(terms.dimensions))) {
        return fail(ENTITLEMENT_RULE_MESSAGES.hardQuotaForbidsPrice);
      }
      return pricedTerms(terms, prices.length);
    }
    case "METERED": {
      if (prices.length === 0 || !isSet(terms.resetPeriod)) {
        return fail(ENTITLEMENT_RULE_MESSAGES.meteredMissing);
      }
      if (isSet(terms.value) || isSet(terms.limit) || isSet(terms.limitBehavior)) {
        return fail(ENTITLEMENT_RULE_MESSAGES.meteredForbidden);
      }
      terms.includedAmount ??= 0;
      return pricedTerms(terms, prices.length);
    }
  }
}

/** The priced types' common rules: one price, and dimensions completed with their defaults. */
function pricedTerms(terms: EntitlementTerms, priceCount: number): TermsResolution {
  if (priceCount > 1) return { ok: false, message: ENTITLEMENT_RULE_MESSAGES.priceTwice };
  if (!terms.dimensions) return { ok: true, terms: { ...terms, dimensions: null } };
  const resolved = resolveDimensions(terms.dimensions);
  if (!resolved.ok) return resolved;
  return { ok: true, terms: { ...terms, dimensions: resolved.dimensions } };
}

/** A dimension's match as one comparable key: values compare as strings, keys in any order. */
export function dimensionMatchKey(match: Record<string, unknown>): string {
  return JSON.stringify(
    Object.keys(match)
      .sort()
      .map((key) => [key, String(match[key])]),
  );
}

/**
 * Dimensions with their defaults made explicit, or why they cannot be
 * stored: each has exactly one price, and no two have the same match (the
 * second could never apply).
 */
export function resolveDimensions(
  dimensions: readonly EntitlementDimensionInput[],
): { ok: true; dimensions: EntitlementDimension[] } | { ok: false; message: string } {
  if (dimensions.length > MAX_DIMENSIONS) {
    return { ok: false, message: `dimensions may list at most ${MAX_DIMENSIONS} entries` };
  }
  const seen = new Set<string>();
  const resolved: EntitlementDimension[] = [];
  for (const [index, dimension] of dimensions.entries()) {
    const at = `dimensions[${index}]`;
    const keys = Object.keys(dimension.match ?? {});
    if (keys.length < 1 || keys.length > MAX_MATCH_KEYS) {
      return { ok: false, message: `${at}.match must name 1 to ${MAX_MATCH_KEYS} properties` };
    }
    const priceCount = [
      dimension.overagePrice,
      dimension.overagePriceDecimal,
      dimension.pricing,
    ].filter(isSet).length;
    if (priceCount !== 1) {
      return {
        ok: false,
        message: `${at} needs exactly one of "overagePrice", "overagePriceDecimal" and "pricing"`,
      };
    }
    const key = dimensionMatchKey(dimension.match);
    if (seen.has(key)) {
      return { ok: false, message: `${at}.match repeats an earlier entry's match` };
    }
    seen.add(key);
    resolved.push({
      match: { ...dimension.match },
      includedAmount: dimension.includedAmount ?? 0,
      overagePrice: dimension.overagePrice ?? null,
      overagePriceDecimal: dimension.overagePriceDecimal ?? null,
      pricing: dimension.pricing ?? null,
    });
  }
  return { ok: true, dimensions: resolved };
}

/**
 * Why dimensions do not fit the feature's meter (null: DEFAULT_METER), or
 * undefined: every property a match names must be one of the meter's
 * groupBy, since only those are kept apart per group.
 */
export function dimensionsMeterProblem(
  dimensions: readonly { match: Record<string, unknown> }[] | null | undefined,
  meter: Meter | null | undefined,
): string | undefined {
  if (!dimensions) return undefined;
  const groupBy = new Set(meter?.groupBy ?? []);
  for (const [index, dimension] of dimensions.entries()) {
    const outside = Object.keys(dimension.match).find((key) => !groupBy.has(key));
    if (outside !== undefined) {
      return groupBy.size === 0
        ? `dimensions[${index}].match.${outside}: the feature's meter has no groupBy, so its usage has no groups to price apart`
        : `dimensions[${index}].match.${outside} is not in the feature's meter groupBy (${[...groupBy].join(", ")})`;
    }
  }
  return undefined;
}

/** Features that have no unit (BOOLEAN) must not be given one; QUOTA and METERED may. */
export function featureUnitProblem(type: FeatureType, unit: string | null | undefined) {
  if (type === "BOOLEAN" && isSet(unit)) {
    return 'BOOLEAN features have no "unit": leave it out or send null';
  }
  return undefined;
}
