import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import type { MeterContribution, PropertyValue } from "@edge-platform/shared/billing/meter";
import { groupTerms } from "../../pricing/index.ts";

/*
 * A metered event as the counter keeps it: its contribution to its group
 * (stored with its pending row, carried by the flush that claims it), and
 * the terms its group is priced by. Pure.
 */

/** Where the counter placed a metered event: its contribution, and its group's units before it. */
export interface MeterPlacement {
  contribution: MeterContribution;
  groupUnitsBefore: number;
}

/** A contribution as its pending row keeps it (JSON), without the dimensions its group key names. */
export function storedContribution(
  contribution: MeterContribution & { distinct?: string },
): string {
  const { dimensions: _named, ...stored } = contribution;
  return JSON.stringify(stored);
}

/** A pending row's contribution (JSON in `pending_events.meter`), with the distinct value it brought. */
export function contributionOf(
  json: string | null | undefined,
): (MeterContribution & { distinct?: string }) | null {
  return json ? (JSON.parse(json) as MeterContribution & { distinct?: string }) : null;
}

/**
 * The snapshot as one group of a metered feature is priced: the terms of
 * the entitlement's dimension entry its values match, else its own
 * (groupTerms), so a group's draws cost what its invoice line charges.
 */
export function groupPricedSnapshot(
  snapshot: SnapshotTerms,
  dimensions: Record<string, PropertyValue | null>,
): SnapshotTerms {
  if (!snapshot.dimensions || snapshot.dimensions.length === 0) return snapshot;
  const { included, pricing } = groupTerms(snapshot, dimensions);
  const perUnit = pricing.model === "per_unit" ? pricing : null;
  return {
    ...snapshot,
    ...(snapshot.featureType === "QUOTA" ? { limit: included } : { includedAmount: included }),
    overagePrice: perUnit ? perUnit.unitPrice : null,
    overagePriceDecimal: perUnit?.unitPriceDecimal ?? null,
    pricing: perUnit ? null : (pricing as SnapshotTerms["pricing"]),
    dimensions: null,
  };
}
