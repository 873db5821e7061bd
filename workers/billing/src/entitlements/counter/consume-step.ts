import type { ConsumeResult } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import {
  allowanceOf,
  consumeDecision,
  isHardLimited,
} from "@edge-platform/shared/billing/entitlement-decision";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import type { EventProperties } from "@edge-platform/shared/billing/meter";
import type { TenantEntitlementState } from "@edge-platform/shared/db/entitlement-state";
import type { CreditBalance, CreditTerms } from "./credit-balance.ts";
import type { CounterMeterGroups } from "./meter-groups.ts";
import { meteredConsume } from "./metered-consume.ts";
import type { ShardView } from "./shard-view.ts";
import type { UnflushedUsageHours } from "./usage-hours.ts";
import type { UsageNotices } from "./usage-notices.ts";
import type { WindowCounts } from "./window-counts.ts";
import { drawTarget, type WindowKey } from "./window-keys.ts";

/** What a consume asks, keyed or not. */
export interface SettledConsume {
  featureKey: string;
  amount: number;
  properties?: EventProperties | undefined;
  requestId?: string | undefined;
  nowMs?: number | undefined;
}

/** A consume whose window is counted and seeded: ready for its synchronous step. */
export interface CountedConsume {
  kind: "counted";
  /** The tenant's subscription state the consume was prepared on. */
  state: TenantEntitlementState;
  snapshot: SnapshotTerms;
  key: WindowKey;
  terms: CreditTerms | null;
}

/** Around the step: a repeat's first answer instead, and keeping the answer (same synchronous step). */
export interface ConsumeAnswering {
  repeated?: () => ConsumeResult | undefined;
  keep: (result: ConsumeResult) => void;
}

/** The counter's parts the step reads and writes. */
export interface ConsumeStepParts {
  windows: WindowCounts;
  meterGroups: CounterMeterGroups;
  notices: UsageNotices;
  creditGrants: CreditBalance;
  unflushedHours: UnflushedUsageHours;
  view: ShardView;
  /** Whether this object is shard 0 (usage alerts fire there; other shards report their units). */
  owns: () => boolean;
  scheduleFlush: () => void;
}

/*
 * The synchronous step of a consume: read the window's total, decide
 * (domain/entitlement-decision.ts), draw credits and take the units, with no
 * await anywhere, so concurrent consumes cannot interleave inside it.
 */
export class ConsumeStep {
  constructor(private readonly parts: ConsumeStepParts) {}

  /** Decides on the window's total and takes the units (no await: one synchronous step). */
  decide(
    input: SettledConsume,
    { snapshot, key, terms }: CountedConsume,
    now: Date,
    /** Lease units other shards hold (shard 0), or whether the units come from this shard's lease. */
    leases: { leased: number; fromLease: boolean },
  ): ConsumeResult {
    const feature = input.featureKey;
    const used = this.parts.windows.usedIn(key);
    if (used === undefined) throw new Error("counter missing after seeding");
    const metered = meteredConsume(this.parts.meterGroups, snapshot, key, input, used);
    if (metered.kind === "answered") return metered.result;
    const amount = metered.kind === "metered" ? metered.units : input.amount;
    const decision = consumeDecision(
      // Shard 0 granted the lease from below the limit: the units fit.
      leases.fromLease ? { ...snapshot, limitBehavior: "SOFT" } : snapshot,
      used + spokenFor(snapshot, used, amount, leases.leased),
      amount,
    );
    switch (decision.kind) {
      case "not_consumable":
        return { status: "not_consumable", feature };
      case "quota_exceeded":
        this.parts.notices.refused(key, { ...decision, requested: amount }, now);
        return {
          status: "quota_exceeded",
          feature,
          limit: decision.limit,
          used: decision.used,
          requested: amount,
        };
      case "counter_overflow":
        return { status: "counter_overflow", feature, used: decision.used };
      case "consumed": {
        const reading = metered.kind === "metered" ? metered.reading : null;
        const priced = reading
          ? this.parts.meterGroups.pricedAs(key, snapshot, reading)
          : { snapshot, usedBefore: this.parts.windows.attributedUsed(key) };
        const refused =
          terms &&
          this.parts.creditGrants.payForConsume(
            terms,
            priced.snapshot,
            drawTarget(key),
            priced.usedBefore,
            amount,
            now,
          );
        if (refused) return refused;
        if (reading) {
          const placed = this.parts.meterGroups.place(key, reading);
          this.parts.meterGroups.addUnits(key, placed.groupKey, amount);
          this.parts.meterGroups.addDirect(key, placed, now.toISOString());
        }
        this.parts.windows.add(key, amount, now.toISOString(), amount);
        this.parts.unflushedHours.add(key, amount, now.toISOString());
        if (this.parts.owns()) this.parts.notices.counted(snapshot, key, decision.used, now);
        else this.parts.view.count(key, amount);
        this.parts.scheduleFlush();
        return {
          status: "consumed",
          feature,
          type: snapshot.featureType,
          consumed: amount,
          used: decision.used,
          limit: decision.limit,
          remaining: decision.remaining,
          overage: decision.overage,
          resetAt: key.window.end?.toISOString() ?? null,
        };
      }
    }
  }
}

/**
 * The lease units a HARD decision on shard 0 must count as used: all those
 * outstanding when they stand between `used + amount` and the limit, none
 * otherwise (the units then fit whatever the shards admit).
 */
export function spokenFor(
  snapshot: SnapshotTerms,
  used: number,
  amount: number,
  leased: number,
): number {
  return leased > 0 && isHardLimited(snapshot) && used + leased + amount > allowanceOf(snapshot)
    ? leased
    : 0;
}
