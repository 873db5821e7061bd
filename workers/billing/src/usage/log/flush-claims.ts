import {
  byUsageLogObject,
  type ClaimOutcome,
  type FlushClaim,
} from "@edge-platform/shared/usage-log/client";
import {
  applyUsageFlush,
  type UsageFlush,
  type UsageFlushEventClaim,
  type UsageFlushOutcome,
  type UsageFlushWindowDelta,
} from "../aggregates-storage.ts";
import { hourStartOf, type UsageFlushHourDelta } from "../hourly-storage.ts";
import {
  type ClaimedMeterEvent,
  meterGroupDeltas,
  meterHourDeltas,
} from "../meter-groups-storage.ts";
import { usageLogOfId } from "./shards.ts";

/*
 * A counter flush through the usage log (the EntitlementCounter's step 3):
 *   1. claim the flush's events in their shards (PENDING, or VALIDATED in
 *      the window the counter counted them in; idempotent per flush id);
 *   2. add each window's units, with the claimed events' units, to
 *      usage_aggregates in one D1 batch guarded by the flush id;
 *   3. mark the claimed events AGGREGATED.
 * A failure anywhere leaves the counter's flush row, and the retry (same
 * flush id) finds the same claim, applies nothing twice, and finishes.
 * An event the counter counted but no shard holds may still be in the D1
 * log of an earlier release, waiting to be moved in (usage/log/d1-drain.ts):
 * the flush then waits for it rather than give its units up.
 */

type FlushEnv = Pick<Env, "DB" | "USAGE_LOG">;

const windowOf = (row: { subscriptionId: string; featureLookupKey: string; periodKey: string }) =>
  `${row.subscriptionId}\u0000${row.featureLookupKey}\u0000${row.periodKey}`;

/**
 * What the claimed events add: units per window (a metered event adds the
 * units its counter counted, counterUnits, not its amount), per hour, and
 * the metered events' contributions to their groups.
 */
function countClaimed(
  claimed: ClaimOutcome["claimed"],
  claims: readonly UsageFlushEventClaim[],
  deltaByWindow: ReadonlyMap<string, UsageFlushWindowDelta>,
  flushHours: readonly UsageFlushHourDelta[],
) {
  const units = new Map<string, number>();
  const hours: UsageFlushHourDelta[] = [...flushHours];
  const metered: ClaimedMeterEvent[] = [];
  const claimById = new Map(claims.map((claim) => [claim.id, claim]));
  for (const event of claimed) {
    const claim = claimById.get(event.id);
    if (!claim) continue;
    const window = windowOf(claim);
    // Flushes claimed by an earlier release carry no units: the event's amount was its units.
    const eventUnits = claim.units ?? event.amount;
    units.set(window, (units.get(window) ?? 0) + eventUnits);
    hours.push({
      subscriptionId: claim.subscriptionId,
      featureLookupKey: claim.featureLookupKey,
      hourStart: hourStartOf(event.timestamp),
      amount: eventUnits,
    });
    const delta = deltaByWindow.get(window);
    if (claim.meter && delta) {
      metered.push({
        id: event.id,
        timestamp: event.timestamp,
        subscriptionId: claim.subscriptionId,
        featureLookupKey: claim.featureLookupKey,
        periodKey: claim.periodKey,
        periodStart: delta.periodStart,
        periodEnd: delta.periodEnd,
        meter: claim.meter,
      });
    }
  }
  return { units, hours, metered };
}

export async function applyCounterFlush(
  env: FlushEnv,
  flush: UsageFlush,
): Promise<UsageFlushOutcome> {
  const claims = flush.claims ?? [];
  const deltaByWindow = new Map(flush.deltas.map((delta) => [windowOf(delta), delta]));
  const logClaims: FlushClaim[] = claims.map((claim) => {
    const delta = deltaByWindow.get(windowOf(claim));
    // The counter puts a delta (the window's bounds) beside every window it claims events in.
    if (!delta) throw new Error("usage flush claims events in a window it has no delta for");
    // Only what the shard checks: the meter and units stay here, for D1.
    return {
      id: claim.id,
      subscriptionId: claim.subscriptionId,
      featureLookupKey: claim.featureLookupKey,
      periodKey: claim.periodKey,
      periodStart: delta.periodStart,
      periodEnd: delta.periodEnd,
    };
  });
  const groups = [
    ...byUsageLogObject(logClaims, (claim) => ({
      tenantId: flush.tenantId,
      id: claim.id,
    })).values(),
  ];
  const outcomes = await Promise.all(
    groups.map(async (group) => ({
      group,
      outcome: await usageLogOfId(env.USAGE_LOG, flush.tenantId, group.id).claim(
        flush.id,
        group.items,
      ),
    })),
  );
  const missing = outcomes.flatMap(({ outcome }) => outcome.missing);
  if (missing.length > 0 && (await stillInD1Log(env.DB, missing)) > 0) {
    throw new Error("usage flush waits for events still to be moved from the D1 log");
  }
  const { units, hours, metered } = countClaimed(
    outcomes.flatMap(({ outcome }) => outcome.claimed),
    claims,
    deltaByWindow,
    flush.hours ?? [],
  );
  const applied = await applyUsageFlush(env.DB, {
    id: flush.id,
    tenantId: flush.tenantId,
    deltas: flush.deltas.map((delta) => ({
      ...delta,
      amount: delta.amount + (units.get(windowOf(delta)) ?? 0),
    })),
    hours,
    meterGroups: [...(flush.meterGroups ?? []), ...meterGroupDeltas(metered)],
    meterHours: meterHourDeltas(metered),
  });
  const at = new Date().toISOString();
  await Promise.all(
    outcomes.map(({ group, outcome }) =>
      outcome.claimed.length === 0
        ? Promise.resolve(0)
        : usageLogOfId(env.USAGE_LOG, flush.tenantId, group.id).finishClaim(
            flush.id,
            outcome.claimed.map((event) => event.id),
            at,
          ),
    ),
  );
  return {
    applied,
    claimedEventIds: outcomes.flatMap(({ outcome }) => outcome.claimed.map((event) => event.id)),
  };
}

/** How many of these ids the D1 log of earlier releases still holds (0 once it is gone). */
export async function stillInD1Log(d1: D1Database, ids: string[]): Promise<number> {
  try {
    const row = await d1
      .prepare(
        "SELECT count(*) AS n FROM usage_events WHERE id IN (SELECT value FROM json_each(?1))",
      )
      .bind(JSON.stringify(ids))
      .first<{ n: number }>();
    return row?.n ?? 0;
  } catch (error) {
    if (String(error).includes("no such table")) return 0;
    throw error;
  }
}
