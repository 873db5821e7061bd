import type { UsageThreshold } from "@edge-platform/shared/db/schema/catalog";

// Progressive billing: a price's `usageThresholds` are cents of priced
// usage in a billing period. Each time the period's priced usage passes one,
// the usage not billed yet is invoiced at once (a PROGRESSIVE invoice); the
// period's own invoice then subtracts what those billed (PROGRESSIVE_BILLED).
// Fixed thresholds strictly increase; at most one is `recurring`, the last:
// it repeats every `amount` after the last fixed one. Pure functions.

/** Why the thresholds cannot be stored, or undefined when they are valid. */
export function usageThresholdsProblem(thresholds: readonly UsageThreshold[]): string | undefined {
  let previous = 0;
  for (const [index, threshold] of thresholds.entries()) {
    const at = `usageThresholds[${index}]`;
    if (threshold.recurring) {
      if (index !== thresholds.length - 1) {
        return `${at} is recurring: only the last threshold may be (at most one)`;
      }
      continue;
    }
    if (threshold.amount <= previous) {
      return `${at}.amount must be greater than the previous threshold's (${previous}): fixed thresholds strictly increase`;
    }
    previous = threshold.amount;
  }
  return undefined;
}

/** How many thresholds `pricedCents` of usage has reached (a threshold is reached at its amount). */
export function thresholdsReached(
  thresholds: readonly UsageThreshold[] | null | undefined,
  pricedCents: number,
): number {
  if (!thresholds || thresholds.length === 0 || pricedCents <= 0) return 0;
  let reached = 0;
  let lastFixed = 0;
  for (const threshold of thresholds) {
    if (threshold.recurring) {
      if (threshold.amount <= 0 || pricedCents < lastFixed) return reached;
      return reached + Math.floor((pricedCents - lastFixed) / threshold.amount);
    }
    if (pricedCents < threshold.amount) return reached;
    reached++;
    lastFixed = threshold.amount;
  }
  return reached;
}

export interface ProgressiveRequest {
  invoiceId: string;
  subscriptionId: string;
}
