import type { ConsumeResult } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import { allowanceOf } from "@edge-platform/shared/billing/entitlement-decision";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import {
  counterUnits,
  DEFAULT_METER,
  type EventMeterReading,
  type EventProperties,
  isPlainMeter,
  readEvent,
} from "@edge-platform/shared/billing/meter";
import type { CounterMeterGroups } from "./meter-groups.ts";
import type { WindowKey } from "./window-keys.ts";

/*
 * A consume of a feature with a meter: the units it adds are the meter's
 * (counterUnits), and its reading joins the feature's groups. For
 * UNIQUE_COUNT the decision is on the distinct value: one the window has
 * counted is admitted with no change, a new one takes a unit (refused at a
 * HARD limit like any unit). Decided in the counter's synchronous step, so
 * racing consumes of one new value count it once.
 */

export type MeteredConsume =
  | { kind: "plain" }
  | { kind: "answered"; result: ConsumeResult }
  | { kind: "metered"; units: number; reading: EventMeterReading | null };

export function meteredConsume(
  groups: CounterMeterGroups,
  snapshot: SnapshotTerms,
  key: WindowKey,
  input: { featureKey: string; amount: number; properties?: EventProperties | undefined },
  used: number,
): MeteredConsume {
  const meter = snapshot.meter ?? DEFAULT_METER;
  if (isPlainMeter(meter)) return { kind: "plain" };
  const reading = readEvent(meter, { amount: input.amount, properties: input.properties ?? {} });
  if (!reading.counts) {
    if (reading.reason === "FILTERED") return { kind: "metered", units: 0, reading: null };
    return {
      kind: "answered",
      result: { status: "invalid_properties", feature: input.featureKey, message: reading.message },
    };
  }
  const counted: EventMeterReading = {
    groupKey: reading.groupKey,
    dimensions: reading.dimensions,
    value: reading.value,
    distinct: reading.distinct,
  };
  if (reading.distinct !== null && groups.counted(key, reading.groupKey, reading.distinct)) {
    const limit = allowanceOf(snapshot);
    return {
      kind: "answered",
      result: {
        status: "consumed",
        feature: input.featureKey,
        type: snapshot.featureType,
        consumed: 0,
        used,
        limit,
        remaining: Math.max(0, limit - used),
        overage: used > limit,
        resetAt: key.window.end?.toISOString() ?? null,
      },
    };
  }
  return { kind: "metered", units: counterUnits(meter, input.amount, reading), reading: counted };
}
