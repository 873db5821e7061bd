import type { BillingInterval, ResetPeriod } from "@edge-platform/shared/db/schema/catalog";

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
}

/** The start of the first billable period: the trial's end, or the start when there is no trial. */
export function firstBillableStart(timeline: SubscriptionTimeline): Date {
  return timeline.trialEndsAt ?? timeline.startedAt;
}

export function isInTrial(timeline: SubscriptionTimeline, instant: Date): boolean {
  return timeline.trialEndsAt !== null && instant.getTime() < timeline.trialEndsAt.getTime();
}

/**
 * The subscription's current period at `instant`: the trial itself while
 * it runs, otherwise the billing period (anchored on the first billable
 * start) that contains the instant.
 */
export function subscriptionPeriodAt(
  timeline: SubscriptionTimeline,
  instant: Date,
): Period & { trial: boolean } {
  if (timeline.trialEndsAt && isInTrial(timeline, instant)) {
    return { start: timeline.startedAt, end: timeline.trialEndsAt, trial: true };
  }
  const period = cyclePeriodAt(
    firstBillableStart(timeline),
    intervalMonths(timeline.interval),
    instant,
  );
  return { start: period.start, end: period.end, trial: false };
}

export const MAX_TRIAL_DAYS = 90;

/** The stored fields of a subscription created at `startedAt`. */
export function initialSubscriptionPeriods(
  startedAt: Date,
  interval: BillingInterval,
  trialDays?: number,
): {
  status: "ACTIVE" | "TRIALING";
  trialEndsAt: Date | null;
  billingAnchor: number;
  currentPeriodStart: Date;
  currentPeriodEnd: Date;
} {
  if (trialDays !== undefined && (!Number.isInteger(trialDays) || trialDays < 1)) {
    throw new RangeError("trialDays must be a positive integer");
  }
  const trialEndsAt = trialDays ? new Date(startedAt.getTime() + trialDays * MS_PER_DAY) : null;
  const timeline = { startedAt, trialEndsAt, interval };
  const current = subscriptionPeriodAt(timeline, startedAt);
  return {
    status: trialEndsAt ? "TRIALING" : "ACTIVE",
    trialEndsAt,
    billingAnchor: billingAnchorOf(firstBillableStart(timeline)),
    currentPeriodStart: current.start,
    currentPeriodEnd: current.end,
  };
}

/** A window over which an entitlement's usage counts before it resets. */
export interface ResetWindow {
  /** Names the window in counters and aggregates: its start (ISO-8601 UTC), or `lifetime`. */
  key: string;
  start: Date;
  /** Exclusive; null when the usage never resets. This is the check's `resetAt`. */
  end: Date | null;
}

export const LIFETIME_WINDOW_KEY = "lifetime";

/**
 * The reset window containing `instant`, following the subscription's own
 * periods rather than calendar months: MONTHLY windows are one-month steps
 * and ANNUALLY windows twelve-month steps from the first billable start.
 * During a trial the steps run from the subscription's start and the last
 * trial window is cut at the trial's end, so usage restarts with the first
 * billable period. NEVER is one window for the subscription's lifetime.
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
  const window = cyclePeriodAt(firstBillableStart(timeline), months, instant);
  return { key: window.start.toISOString(), start: window.start, end: window.end };
}
