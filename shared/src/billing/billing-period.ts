import type { BillingInterval, ResetPeriod } from "../db/schema/catalog.ts";

// Subscription periods and entitlement reset windows, all in UTC.
//
// A cycle is anchored on one instant (its origin): boundary k is the origin
// plus k whole months, keeping the time of day, with the day of month
// clamped to the target month's last day. Boundaries are always computed
// from the origin, never chained from the previous boundary, so a cycle
// anchored on 31 January goes 28/29 February, 31 March, 30 April, 31 May
// and never drifts to the 28th (nor overflows to 3 March as JS Date does).

export const MS_PER_DAY = 86_400_000;

export interface Period {
  start: Date;
  /** Exclusive. */
  end: Date;
}

export function daysInMonthUtc(year: number, monthIndex: number): number {
  return new Date(Date.UTC(year, monthIndex + 1, 0)).getUTCDate();
}

/** `instant` plus whole months in UTC; the day clamps to the target month's length. */
export function addMonthsClamped(instant: Date, months: number): Date {
  if (!Number.isInteger(months)) throw new RangeError("months must be an integer");
  const monthCount = instant.getUTCMonth() + months;
  const year = instant.getUTCFullYear() + Math.floor(monthCount / 12);
  const month = ((monthCount % 12) + 12) % 12;
  const day = Math.min(instant.getUTCDate(), daysInMonthUtc(year, month));
  return new Date(
    Date.UTC(
      year,
      month,
      day,
      instant.getUTCHours(),
      instant.getUTCMinutes(),
      instant.getUTCSeconds(),
      instant.getUTCMilliseconds(),
    ),
  );
}

export function intervalMonths(interval: BillingInterval | Exclude<ResetPeriod, "NEVER">): number {
  return interval === "MONTHLY" ? 1 : 12;
}

/** Boundary `index` of a cycle of `months`-month periods anchored at `origin`. */
export function cycleBoundary(origin: Date, months: number, index: number): Date {
  return addMonthsClamped(origin, months * index);
}

/**
 * The period of the cycle that contains `instant`, and its index (0 is the
 * period starting at `origin`). Instants before the origin fall in period 0.
 */
export function cyclePeriodAt(
  origin: Date,
  months: number,
  instant: Date,
): Period & { index: number } {
  if (instant.getTime() <= origin.getTime()) {
    return { index: 0, start: origin, end: cycleBoundary(origin, months, 1) };
  }
  const monthsApart =
    (instant.getUTCFullYear() - origin.getUTCFullYear()) * 12 +
    (instant.getUTCMonth() - origin.getUTCMonth());
  let index = Math.max(0, Math.floor(monthsApart / months));
  // The estimate is off by at most one either way (day and time of day).
  while (index > 0 && cycleBoundary(origin, months, index).getTime() > instant.getTime()) index--;
  while (cycleBoundary(origin, months, index + 1).getTime() <= instant.getTime()) index++;
  return {
    index,
    start: cycleBoundary(origin, months, index),
    end: cycleBoundary(origin, months, index + 1),
  };
}

/** The billing anchor stored with a subscription: the start's UTC day of month, at most 28. */
export function billingAnchorOf(firstBillableStart: Date): number {
  return Math.min(firstBillableStart.getUTCDate(), 28);
}

/** What a subscription's periods are derived from. */
export interface SubscriptionTimeline {
  startedAt: Date;
  /** Set when the subscription started with a trial; the first billable period starts here. */
  trialEndsAt: Date | null;
  interval: BillingInterval;
  /**
   * The instant the billing cycle is counted from; absent or null means the
   * first billable start. A plan change that keeps the cycle sets it to the
   * replaced subscription's origin, which lies before `startedAt`: the first
   * period is then cut to start at `startedAt` (see planChangeCycleOrigin).
   */
  cycleOrigin?: Date | null;
}

/** The stored columns a timeline is read from. */
export interface StoredTimeline {
  startedAt: string;
  trialEndsAt: string | null;
  billingCycleOrigin: string | null;
}

export function timelineOf(row: StoredTimeline, interval: BillingInterval): SubscriptionTimeline {
  return {
    startedAt: new Date(row.startedAt),
    trialEndsAt: row.trialEndsAt ? new Date(row.trialEndsAt) : null,
    interval,
    cycleOrigin: row.billingCycleOrigin ? new Date(row.billingCycleOrigin) : null,
  };
}

/** The start of the first billable period: the trial's end, or the start when there is no trial. */
export function firstBillableStart(timeline: SubscriptionTimeline): Date {
  return timeline.trialEndsAt ?? timeline.startedAt;
}

/** Where the billing cycle's boundaries are counted from. */
export function cycleOriginOf(timeline: SubscriptionTimeline): Date {
  return timeline.cycleOrigin ?? firstBillableStart(timeline);
}

const later = (a: Date, b: Date) => (a.getTime() >= b.getTime() ? a : b);

export function isInTrial(timeline: SubscriptionTimeline, instant: Date): boolean {
  return timeline.trialEndsAt !== null && instant.getTime() < timeline.trialEndsAt.getTime();
}

/**
 * The subscription's current period at `instant`: the trial itself while
 * it runs, otherwise the billing period (a period of the cycle counted from
 * the cycle origin) that contains the instant. A period of an inherited
 * cycle that began before the subscription starts at the subscription's
 * start instead; `cycleStart` keeps the full period's start, which
 * proration measures against.
 */
export function subscriptionPeriodAt(
  timeline: SubscriptionTimeline,
  instant: Date,
): Period & { trial: boolean; cycleStart: Date } {
  if (timeline.trialEndsAt && isInTrial(timeline, instant)) {
    return {
      start: timeline.startedAt,
      end: timeline.trialEndsAt,
      trial: true,
      cycleStart: timeline.startedAt,
    };
  }
  // Instants before the first billable start belong to the first period.
  const billableStart = firstBillableStart(timeline);
  const period = cyclePeriodAt(
    cycleOriginOf(timeline),
    intervalMonths(timeline.interval),
    later(instant, billableStart),
  );
  return {
    start: later(period.start, billableStart),
    end: period.end,
    trial: false,
    cycleStart: period.start,
  };
}

/**
 * The full cycle period a billed period belongs to: the same as the period
 * except for the first period after a plan change that kept the cycle,
 * which is a tail of it. A stored period that is not inside one cycle
 * period (e.g. a trial period left current by a pause) is its own cycle
 * period, so it is never prorated and never blocks its invoice.
 */
export function cyclePeriodOf(timeline: SubscriptionTimeline, period: Period): Period {
  const full = cyclePeriodAt(
    cycleOriginOf(timeline),
    intervalMonths(timeline.interval),
    period.start,
  );
  const inside =
    full.start.getTime() <= period.start.getTime() && period.end.getTime() <= full.end.getTime();
  return inside ? { start: full.start, end: full.end } : { start: period.start, end: period.end };
}

/** The longest trial a price may carry (plan_prices.trial_days). */
export const MAX_PRICE_TRIAL_DAYS = 365;

/**
 * The stored fields of a subscription created at `startedAt`. With
 * `cycleOrigin` (a plan change that keeps the replaced subscription's
 * cycle, see planChangeCycleOrigin) the first period runs from `startedAt`
 * to the end of that cycle's current period; a trial and an inherited
 * cycle do not go together.
 */
export function initialSubscriptionPeriods(
  startedAt: Date,
  interval: BillingInterval,
  trialDays?: number,
  cycleOrigin?: Date | null,
): {
  status: "ACTIVE" | "TRIALING";
  trialEndsAt: Date | null;
  billingAnchor: number;
  billingCycleOrigin: Date;
  currentPeriodStart: Date;
  currentPeriodEnd: Date;
} {
  if (trialDays !== undefined && (!Number.isInteger(trialDays) || trialDays < 1)) {
    throw new RangeError("trialDays must be a positive integer");
  }
  if (cycleOrigin) {
    if (trialDays !== undefined) throw new RangeError("an inherited cycle has no trial");
    if (cycleOrigin.getTime() > startedAt.getTime()) {
      throw new RangeError("an inherited cycle origin cannot lie after the start");
    }
  }
  const trialEndsAt = trialDays ? new Date(startedAt.getTime() + trialDays * MS_PER_DAY) : null;
  const timeline: SubscriptionTimeline = {
    startedAt,
    trialEndsAt,
    interval,
    cycleOrigin: cycleOrigin ?? null,
  };
  const current = subscriptionPeriodAt(timeline, startedAt);
  const origin = cycleOriginOf(timeline);
  return {
    status: trialEndsAt ? "TRIALING" : "ACTIVE",
    trialEndsAt,
    billingAnchor: billingAnchorOf(origin),
    billingCycleOrigin: origin,
    currentPeriodStart: current.start,
    currentPeriodEnd: current.end,
  };
}

/** What a plan change needs to know of the subscription it replaces. */
export interface ReplacedSubscription {
  status: string;
  timeline: SubscriptionTimeline;
}

/**
 * The plan-change rule. The new subscription keeps the replaced one's
 * billing cycle (same origin, so its first period ends where the old
 * current period would have ended and later periods fall on the same
 * days) when all of these hold:
 * - the billing interval stays the same (monthly -> annual or back starts a
 *   fresh cycle at the change: the old plan gets its credit for the unused
 *   part, the new plan's first period is a whole period from the change);
 * - the replaced subscription is past its trial (a trial is not carried
 *   over, and changing plan during one starts fresh: nothing was billed);
 * - the new subscription asks for no trial of its own.
 * Returns the origin to keep, or null for a fresh cycle.
 */
export function planChangeCycleOrigin(
  replaced: ReplacedSubscription | null,
  change: { interval: BillingInterval; trialDays?: number | undefined; at: Date },
): Date | null {
  if (!replaced || change.trialDays !== undefined) return null;
  if (replaced.timeline.interval !== change.interval) return null;
  if (replaced.status === "TRIALING" || isInTrial(replaced.timeline, change.at)) return null;
  const origin = cycleOriginOf(replaced.timeline);
  return origin.getTime() <= change.at.getTime() ? origin : null;
}

/** A window over which an entitlement's usage counts before it resets. */
export interface ResetWindow {
  /**
   * Names the window in counters and aggregates: the start of the whole
   * window of the billing cycle (ISO-8601 UTC), or `lifetime`. Usage
   * belongs to the tenant and the feature: a plan change that keeps the
   * cycle keeps the window key, so units used before the change count
   * against the new plan's limit.
   */
  key: string;
  /** Where this subscription's part of the window starts (its start, if later than the window's). */
  start: Date;
  /** Exclusive; null when the usage never resets. This is the check's `resetAt`. */
  end: Date | null;
}

export const LIFETIME_WINDOW_KEY = "lifetime";

/**
 * The reset window containing `instant`, following the subscription's own
 * periods rather than calendar months: MONTHLY windows are one-month steps
 * and ANNUALLY windows twelve-month steps from the cycle origin (the first
 * billable start, or the origin kept through a plan change, in which case
 * the subscription's first window is the tail of the replaced one's: same
 * key, starting at the subscription's start). During a trial the steps run
 * from the subscription's start and the last trial window is cut at the
 * trial's end, so usage restarts with the first billable period. NEVER is
 * one window for the tenant's lifetime.
 */
export function resetWindowAt(
  timeline: SubscriptionTimeline,
  resetPeriod: ResetPeriod,
  instant: Date,
): ResetWindow {
  if (resetPeriod === "NEVER") {
    return { key: LIFETIME_WINDOW_KEY, start: timeline.startedAt, end: null };
  }
  const months = intervalMonths(resetPeriod);
  if (timeline.trialEndsAt && isInTrial(timeline, instant)) {
    const window = cyclePeriodAt(timeline.startedAt, months, instant);
    const end =
      window.end.getTime() < timeline.trialEndsAt.getTime() ? window.end : timeline.trialEndsAt;
    return { key: window.start.toISOString(), start: window.start, end };
  }
  const billableStart = firstBillableStart(timeline);
  const window = cyclePeriodAt(cycleOriginOf(timeline), months, later(instant, billableStart));
  const start = later(window.start, billableStart);
  return { key: window.start.toISOString(), start, end: window.end };
}
