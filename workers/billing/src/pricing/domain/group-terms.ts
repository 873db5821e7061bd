import type { PropertyValue } from "@edge-platform/shared/billing/meter";
import type {
  ChargePricing,
  EntitlementDimension,
  FeatureType,
} from "@edge-platform/shared/db/schema/catalog";
import type { UsagePricing } from "./charge-models.ts";
import { ceilMicroCents } from "./fixed-point.ts";

// Which terms price one group of a feature's usage (the values of its
// meter's groupBy). Pure: the invoice and the cost of a consume both ask.

/** A price as entitlements and their dimensions carry it: at most one of the three is set. */
export interface PriceTerms {
  overagePrice: number | null;
  overagePriceDecimal?: string | null | undefined;
  pricing: ChargePricing | null;
}

/**
 * How units priced by `terms` are charged: the charge model, else the
 * decimal per-unit price, else the whole per-unit price (0 when none).
 */
export function usagePricingOfTerms(terms: PriceTerms): UsagePricing {
  if (terms.pricing) return terms.pricing;
  const decimal = terms.overagePriceDecimal;
  if (decimal !== null && decimal !== undefined) {
    return { model: "per_unit", unitPrice: ceilMicroCents(decimal), unitPriceDecimal: decimal };
  }
  return { model: "per_unit", unitPrice: terms.overagePrice ?? 0 };
}

/** What the chooser reads of an entitlement (a snapshot satisfies it). */
export interface GroupTermsSource extends PriceTerms {
  /** QUOTA: a SOFT quota's own allowance is its `limit`; otherwise `includedAmount`. */
  featureType?: FeatureType | undefined;
  limit?: number | null | undefined;
  includedAmount: number | null;
  dimensions?: readonly EntitlementDimension[] | null | undefined;
}

/** The units a group gets before its price applies, and that price. */
export interface GroupTerms {
  included: number;
  pricing: UsagePricing;
}

/** Whether every pair of `match` equals the group's value of that property, compared as strings. */
export function dimensionMatches(
  match: Record<string, PropertyValue>,
  dimensions: Record<string, PropertyValue | null>,
): boolean {
  return Object.entries(match).every(([key, value]) => {
    const actual = dimensions[key];
    return actual !== null && actual !== undefined && String(actual) === String(value);
  });
}

/**
 * The terms of the group whose groupBy values are `dimensions`
 * ({model: "large", direction: "input"}): those of the first entry of
 * `terms.dimensions` that matches, else the entitlement's own allowance
 * (SOFT quota: its limit; METERED: includedAmount) and price.
 */
export function groupTerms(
  terms: GroupTermsSource,
  dimensions: Record<string, PropertyValue | null>,
): GroupTerms {
  const entry = terms.dimensions?.find((dimension) =>
    dimensionMatches(dimension.match, dimensions),
  );
  if (entry) return { included: entry.includedAmount, pricing: usagePricingOfTerms(entry) };
  const included = terms.featureType === "QUOTA" ? (terms.limit ?? 0) : (terms.includedAmount ?? 0);
  return { included, pricing: usagePricingOfTerms(terms) };
}
