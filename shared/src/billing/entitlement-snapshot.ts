import type { CatalogStatus, FeatureType } from "../db/schema/catalog.ts";
import { type EntitlementTerms, resolveEntitlementTerms } from "./entitlement-rules.ts";
import type { Meter } from "./meter.ts";

/** An entitlement as a subscription keeps it: the terms plus the feature's key, type and meter. */
export interface SnapshotTerms extends EntitlementTerms {
  featureLookupKey: string;
  featureType: FeatureType;
  /** How the feature's usage is measured; null or absent: SUM of `amount` (DEFAULT_METER). */
  meter?: Meter | null;
}

export interface PlanEntitlementSource {
  feature: {
    lookupKey: string;
    type: FeatureType;
    status: CatalogStatus;
    /** The feature's meter now; null or absent: DEFAULT_METER. */
    meter?: Meter | null;
  };
  terms: EntitlementTerms;
}

/**
 * The snapshots a new subscription gets from its plan's entitlements as
 * they are now: one per feature lookup key, ordered by key. Entitlements of
 * archived features are left out (archiving retires a feature for new
 * subscribers; existing ones keep their snapshots). Terms go through the
 * type rules once more so defaults are explicit in the snapshot. The
 * feature's meter is copied too: a later change of its filters or groupBy
 * applies to new subscribers only.
 */
export function buildEntitlementSnapshots(sources: PlanEntitlementSource[]): SnapshotTerms[] {
  const byKey = new Map<string, SnapshotTerms>();
  for (const { feature, terms } of sources) {
    if (feature.status !== "ACTIVE") continue;
    const resolved = resolveEntitlementTerms(feature.type, {}, terms);
    if (!resolved.ok) {
      // Every write path enforces the rules, so a stored row that breaks them is corruption.
      throw new Error(
        `Stored entitlement for "${feature.lookupKey}" breaks the ${feature.type} rules: ${resolved.message}`,
      );
    }
    byKey.set(feature.lookupKey, {
      featureLookupKey: feature.lookupKey,
      featureType: feature.type,
      ...resolved.terms,
      meter: feature.meter ? structuredClone(feature.meter) : null,
    });
  }
  return [...byKey.values()].sort((a, b) =>
    a.featureLookupKey < b.featureLookupKey ? -1 : a.featureLookupKey > b.featureLookupKey ? 1 : 0,
  );
}
