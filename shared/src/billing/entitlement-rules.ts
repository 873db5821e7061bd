import type {
  ChargePricing,
  FeatureType,
  LimitBehavior,
  ResetPeriod,
} from "../db/schema/catalog.ts";

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
}

/**
 * A create or update request: a field that is absent is not sent (on update
 * it keeps its stored value); `null` clears it.
 */
export type EntitlementTermsInput = { [K in keyof EntitlementTerms]?: EntitlementTerms[K] };

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
] as const satisfies readonly (keyof EntitlementTerms)[];

const EMPTY_TERMS: EntitlementTerms = {
  value: null,
  limit: null,
  limitBehavior: null,
  overagePrice: null,
  includedAmount: null,
  resetPeriod: null,
  pricing: null,
};

export const ENTITLEMENT_RULE_MESSAGES = {
  booleanMissing: 'BOOLEAN features require "value" (true or false)',
  booleanForbidden:
    'BOOLEAN features only accept "value". Do not set limit, limitBehavior, overagePrice, pricing, includedAmount, or resetPeriod',
  quotaMissing: 'QUOTA features require "limit" and "resetPeriod"',
  quotaForbidden: 'QUOTA features do not accept "value" or "includedAmount"',
  softQuotaMissingPrice:
    'SOFT quotas require "overagePrice" (micro-cents per unit used beyond the limit) or "pricing"',
  hardQuotaForbidsPrice:
    'HARD quotas do not accept "overagePrice" or "pricing": nothing can be used beyond a hard limit (send null to clear it)',
  meteredMissing:
    'METERED features require "overagePrice" and "resetPeriod" (or "pricing" instead of "overagePrice")',
  priceTwice:
    '"overagePrice" and "pricing" cannot both be set: overagePrice is the per-unit shorthand, pricing a tiered or package charge (send null to clear the other)',
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
 * HARD, METERED `includedAmount` 0. Missing fields are reported before
 * forbidden ones. Value ranges (non-negative integers, enums) are the
 * request schema's job.
 */
export function resolveEntitlementTerms(
  type: FeatureType,
  input: EntitlementTermsInput,
  existing?: EntitlementTerms,
): TermsResolution {
  // Only the term fields: callers may hand in whole rows.
  const base = existing ?? EMPTY_TERMS;
  const terms = Object.fromEntries(
    TERM_FIELDS.map((field) => [field, input[field] !== undefined ? input[field] : base[field]]),
  ) as unknown as EntitlementTerms;
  const fail = (message: string): TermsResolution => ({ ok: false, message });

  switch (type) {
    case "BOOLEAN": {
      if (!isSet(terms.value)) return fail(ENTITLEMENT_RULE_MESSAGES.booleanMissing);
      const forbidden = [
        terms.limit,
        terms.limitBehavior,
        terms.overagePrice,
        terms.includedAmount,
        terms.resetPeriod,
        terms.pricing,
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
      if (terms.limitBehavior === "SOFT" && !isSet(terms.overagePrice) && !isSet(terms.pricing)) {
        return fail(ENTITLEMENT_RULE_MESSAGES.softQuotaMissingPrice);
      }
      if (terms.limitBehavior === "HARD" && (isSet(terms.overagePrice) || isSet(terms.pricing))) {
        return fail(ENTITLEMENT_RULE_MESSAGES.hardQuotaForbidsPrice);
      }
      if (isSet(terms.overagePrice) && isSet(terms.pricing)) {
        return fail(ENTITLEMENT_RULE_MESSAGES.priceTwice);
      }
      return { ok: true, terms };
    }
    case "METERED": {
      if ((!isSet(terms.overagePrice) && !isSet(terms.pricing)) || !isSet(terms.resetPeriod)) {
        return fail(ENTITLEMENT_RULE_MESSAGES.meteredMissing);
      }
      if (isSet(terms.value) || isSet(terms.limit) || isSet(terms.limitBehavior)) {
        return fail(ENTITLEMENT_RULE_MESSAGES.meteredForbidden);
      }
      if (isSet(terms.overagePrice) && isSet(terms.pricing)) {
        return fail(ENTITLEMENT_RULE_MESSAGES.priceTwice);
      }
      terms.includedAmount ??= 0;
      return { ok: true, terms };
    }
  }
}

/** Features that have no unit (BOOLEAN) must not be given one; QUOTA and METERED may. */
export function featureUnitProblem(type: FeatureType, unit: string | null | undefined) {
  if (type === "BOOLEAN" && isSet(unit)) {
    return 'BOOLEAN features have no "unit": leave it out or send null';
  }
  return undefined;
}
