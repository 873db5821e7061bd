// Trials come from the catalog, once per tenant.
//
// A price may carry `trialDays` (0-365, set by platform administrators).
// A tenant gets a trial only on a subscription that is not a plan change,
// to a price with trialDays > 0, and only if it never had one before
// (tenant_trials records the one it had; the subscribe batch inserts into
// it, so two concurrent subscribes cannot both start a trial). A plan
// change never starts a trial. The tenant never chooses the length.

/** The trial length a new subscription gets, or undefined for none. */
export function trialDaysFor(
  price: { trialDays: number | null },
  tenant: { planChange: boolean; hadTrial: boolean },
): number | undefined {
  if (tenant.planChange || tenant.hadTrial) return undefined;
  const days = price.trialDays ?? 0;
  return days > 0 ? days : undefined;
}
