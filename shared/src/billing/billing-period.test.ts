import { describe, expect, it } from "vitest";
import {
  addMonthsClamped,
  billingAnchorOf,
  cyclePeriodAt,
  cyclePeriodOf,
  initialSubscriptionPeriods,
  planChangeCycleOrigin,
  resetWindowAt,
  type SubscriptionTimeline,
  subscriptionPeriodAt,
  timelineOf,
} from "./billing-period.ts";

const at = (iso: string) => new Date(iso);
const iso = (date: Date | null) => date?.toISOString() ?? null;

describe("addMonthsClamped", () => {
  it("clamps month ends instead of overflowing into the next month", () => {
    expect(iso(addMonthsClamped(at("2026-01-31T10:00:00.000Z"), 1))).toBe(
      "2026-02-28T10:00:00.000Z",
    );
    expect(iso(addMonthsClamped(at("2028-01-31T10:00:00.000Z"), 1))).toBe(
      "2028-02-29T10:00:00.000Z",
    );
    expect(iso(addMonthsClamped(at("2026-03-31T00:00:00.000Z"), 1))).toBe(
      "2026-04-30T00:00:00.000Z",
    );
  });

  it("keeps the time of day and crosses year ends", () => {
    expect(iso(addMonthsClamped(at("2026-12-15T23:59:59.999Z"), 1))).toBe(
      "2027-01-15T23:59:59.999Z",
    );
    expect(iso(addMonthsClamped(at("2028-02-29T12:00:00.000Z"), 12))).toBe(
      "2029-02-28T12:00:00.000Z",
    );
    expect(iso(addMonthsClamped(at("2026-01-15T00:00:00.000Z"), -1))).toBe(
      "2025-12-15T00:00:00.000Z",
    );
  });

  it("is independent of the host time zone (pure UTC arithmetic)", () => {
    // 00:30 UTC on the 1st is still the previous day in any western zone.
    expect(iso(addMonthsClamped(at("2026-03-01T00:30:00.000Z"), 1))).toBe(
      "2026-04-01T00:30:00.000Z",
    );
  });
});

describe("cyclePeriodAt", () => {
  const origin = at("2026-01-31T10:00:00.000Z");

  it("computes every boundary from the origin, so the 31st comes back after February", () => {
    const periods = [
      "2026-02-15T00:00:00.000Z",
      "2026-03-10T00:00:00.000Z",
      "2026-04-05T00:00:00.000Z",
    ].map((instant) => cyclePeriodAt(origin, 1, at(instant)));
    expect(periods.map((p) => [iso(p.start), iso(p.end), p.index])).toEqual([
      ["2026-01-31T10:00:00.000Z", "2026-02-28T10:00:00.000Z", 0],
      ["2026-02-28T10:00:00.000Z", "2026-03-31T10:00:00.000Z", 1],
      ["2026-03-31T10:00:00.000Z", "2026-04-30T10:00:00.000Z", 2],
    ]);
  });

  it("treats boundaries as inclusive starts and exclusive ends", () => {
    const onBoundary = cyclePeriodAt(origin, 1, at("2026-02-28T10:00:00.000Z"));
    expect(onBoundary.index).toBe(1);
    const justBefore = cyclePeriodAt(origin, 1, at("2026-02-28T09:59:59.999Z"));
    expect(justBefore.index).toBe(0);
  });

  it("handles instants before the origin and years later", () => {
    expect(cyclePeriodAt(origin, 1, at("2025-06-01T00:00:00.000Z")).index).toBe(0);
    const later = cyclePeriodAt(origin, 12, at("2031-01-31T09:00:00.000Z"));
    expect([iso(later.start), iso(later.end)]).toEqual([
      "2030-01-31T10:00:00.000Z",
      "2031-01-31T10:00:00.000Z",
    ]);
  });

  it("finds the right period for every day across four years", () => {
    for (let day = 0; day < 4 * 366; day++) {
      const instant = new Date(origin.getTime() + day * 86_400_000 + 3_600_000);
      const period = cyclePeriodAt(origin, 1, instant);
      expect(period.start.getTime()).toBeLessThanOrEqual(instant.getTime());
      expect(period.end.getTime()).toBeGreaterThan(instant.getTime());
    }
  });
});

describe("billingAnchorOf", () => {
  it("is the UTC day of month, capped at 28", () => {
    expect(billingAnchorOf(at("2026-05-07T23:00:00.000Z"))).toBe(7);
    expect(billingAnchorOf(at("2026-01-31T00:00:00.000Z"))).toBe(28);
  });
});

describe("initialSubscriptionPeriods", () => {
  it("starts the first period now when there is no trial", () => {
    const periods = initialSubscriptionPeriods(at("2026-01-31T10:00:00.000Z"), "MONTHLY");
    expect(periods.status).toBe("ACTIVE");
    expect(periods.trialEndsAt).toBeNull();
    expect(periods.billingAnchor).toBe(28);
    expect(iso(periods.currentPeriodStart)).toBe("2026-01-31T10:00:00.000Z");
    expect(iso(periods.currentPeriodEnd)).toBe("2026-02-28T10:00:00.000Z");
  });

  it("runs a trial first; the first billable period starts at its end", () => {
    const startedAt = at("2026-01-20T08:00:00.000Z");
    const periods = initialSubscriptionPeriods(startedAt, "MONTHLY", 14);
    expect(periods.status).toBe("TRIALING");
    expect(iso(periods.trialEndsAt)).toBe("2026-02-03T08:00:00.000Z");
    expect(iso(periods.currentPeriodStart)).toBe("2026-01-20T08:00:00.000Z");
    expect(iso(periods.currentPeriodEnd)).toBe("2026-02-03T08:00:00.000Z");
    expect(periods.billingAnchor).toBe(3);
    const timeline = { startedAt, trialEndsAt: periods.trialEndsAt, interval: "MONTHLY" as const };
    const firstBillable = subscriptionPeriodAt(timeline, at("2026-02-03T08:00:00.000Z"));
    expect([iso(firstBillable.start), iso(firstBillable.end), firstBillable.trial]).toEqual([
      "2026-02-03T08:00:00.000Z",
      "2026-03-03T08:00:00.000Z",
      false,
    ]);
  });

  it("makes annual periods twelve months long", () => {
    const periods = initialSubscriptionPeriods(at("2028-02-29T00:00:00.000Z"), "ANNUALLY");
    expect(iso(periods.currentPeriodEnd)).toBe("2029-02-28T00:00:00.000Z");
  });

  it("refuses a non-positive or fractional trial", () => {
    expect(() => initialSubscriptionPeriods(new Date(), "MONTHLY", 0)).toThrow(RangeError);
    expect(() => initialSubscriptionPeriods(new Date(), "MONTHLY", 1.5)).toThrow(RangeError);
  });
});

describe("resetWindowAt", () => {
  const annual = {
    startedAt: at("2026-01-31T10:00:00.000Z"),
    trialEndsAt: null,
    interval: "ANNUALLY" as const,
  };

  it("follows the subscription's own months, not calendar months", () => {
    const window = resetWindowAt(annual, "MONTHLY", at("2026-03-15T00:00:00.000Z"));
    expect([window.key, iso(window.start), iso(window.end)]).toEqual([
      "2026-02-28T10:00:00.000Z",
      "2026-02-28T10:00:00.000Z",
      "2026-03-31T10:00:00.000Z",
    ]);
  });

  it("resets annually on the subscription's anniversary", () => {
    const window = resetWindowAt(annual, "ANNUALLY", at("2027-01-31T09:59:59.000Z"));
    expect([iso(window.start), iso(window.end)]).toEqual([
      "2026-01-31T10:00:00.000Z",
      "2027-01-31T10:00:00.000Z",
    ]);
  });

  it("never resets a NEVER entitlement", () => {
    const window = resetWindowAt(annual, "NEVER", at("2030-01-01T00:00:00.000Z"));
    expect(window).toEqual({ key: "lifetime", start: annual.startedAt, end: null });
  });

  it("cuts the last trial window at the trial's end and restarts with the first billable period", () => {
    const trial = {
      startedAt: at("2026-01-01T00:00:00.000Z"),
      trialEndsAt: at("2026-02-15T00:00:00.000Z"),
      interval: "MONTHLY" as const,
    };
    const first = resetWindowAt(trial, "MONTHLY", at("2026-01-10T00:00:00.000Z"));
    const second = resetWindowAt(trial, "MONTHLY", at("2026-02-10T00:00:00.000Z"));
    const billable = resetWindowAt(trial, "MONTHLY", at("2026-02-20T00:00:00.000Z"));
    expect([first, second, billable].map((w) => [iso(w.start), iso(w.end)])).toEqual([
      ["2026-01-01T00:00:00.000Z", "2026-02-01T00:00:00.000Z"],
      ["2026-02-01T00:00:00.000Z", "2026-02-15T00:00:00.000Z"],
      ["2026-02-15T00:00:00.000Z", "2026-03-15T00:00:00.000Z"],
    ]);
    const annualDuringTrial = resetWindowAt(trial, "ANNUALLY", at("2026-01-10T00:00:00.000Z"));
    expect(iso(annualDuringTrial.end)).toBe("2026-02-15T00:00:00.000Z");
  });
});

describe("plan changes", () => {
  // The replaced subscription: monthly from 31 January 10:00, so its periods
  // end on 28 February, 31 March, 30 April ... at 10:00.
  const old: SubscriptionTimeline = {
    startedAt: at("2026-01-31T10:00:00.000Z"),
    trialEndsAt: null,
    interval: "MONTHLY",
  };
  const change = at("2026-02-10T00:00:00.000Z");

  it("keeps the replaced subscription's cycle at the same interval, without a trial", () => {
    const replaced = { status: "ACTIVE", timeline: old };
    expect(iso(planChangeCycleOrigin(replaced, { interval: "MONTHLY", at: change }))).toBe(
      "2026-01-31T10:00:00.000Z",
    );
    expect(
      iso(
        planChangeCycleOrigin(
          { status: "PAST_DUE", timeline: old },
          { interval: "MONTHLY", at: change },
        ),
      ),
    ).toBe("2026-01-31T10:00:00.000Z");
    // A chain of changes keeps the first origin.
    const inherited = { ...old, startedAt: change, cycleOrigin: old.startedAt };
    expect(
      iso(
        planChangeCycleOrigin(
          { status: "ACTIVE", timeline: inherited },
          { interval: "MONTHLY", at: at("2026-02-20T00:00:00.000Z") },
        ),
      ),
    ).toBe("2026-01-31T10:00:00.000Z");
    // After a trial the cycle counts from the trial's end.
    const afterTrial = {
      startedAt: at("2026-01-01T00:00:00.000Z"),
      trialEndsAt: at("2026-01-15T00:00:00.000Z"),
      interval: "MONTHLY" as const,
    };
    expect(
      iso(
        planChangeCycleOrigin(
          { status: "ACTIVE", timeline: afterTrial },
          { interval: "MONTHLY", at: change },
        ),
      ),
    ).toBe("2026-01-15T00:00:00.000Z");
  });

  it("starts a fresh cycle on an interval change, from a trial, with a new trial, or with nothing to replace", () => {
    const replaced = { status: "ACTIVE", timeline: old };
    expect(planChangeCycleOrigin(replaced, { interval: "ANNUALLY", at: change })).toBeNull();
    expect(
      planChangeCycleOrigin(replaced, { interval: "MONTHLY", trialDays: 7, at: change }),
    ).toBeNull();
    expect(planChangeCycleOrigin(null, { interval: "MONTHLY", at: change })).toBeNull();
    const trialing = { ...old, trialEndsAt: at("2026-02-14T10:00:00.000Z") };
    expect(
      planChangeCycleOrigin(
        { status: "TRIALING", timeline: trialing },
        { interval: "MONTHLY", at: change },
      ),
    ).toBeNull();
    // Paused during its trial: still in the trial.
    expect(
      planChangeCycleOrigin(
        { status: "PAUSED", timeline: trialing },
        { interval: "MONTHLY", at: change },
      ),
    ).toBeNull();
  });

  it("runs the first period from the change to the old period's end, then follows the old cycle with month-end clamping", () => {
    const periods = initialSubscriptionPeriods(change, "MONTHLY", undefined, old.startedAt);
    expect(periods).toMatchObject({ status: "ACTIVE", trialEndsAt: null, billingAnchor: 28 });
    expect(iso(periods.billingCycleOrigin)).toBe("2026-01-31T10:00:00.000Z");
    expect([iso(periods.currentPeriodStart), iso(periods.currentPeriodEnd)]).toEqual([
      "2026-02-10T00:00:00.000Z",
      "2026-02-28T10:00:00.000Z",
    ]);
    const timeline = timelineOf(
      {
        startedAt: change.toISOString(),
        trialEndsAt: null,
        billingCycleOrigin: periods.billingCycleOrigin.toISOString(),
      },
      "MONTHLY",
    );
    const first = subscriptionPeriodAt(timeline, at("2026-02-20T00:00:00.000Z"));
    expect([iso(first.start), iso(first.end), iso(first.cycleStart)]).toEqual([
      "2026-02-10T00:00:00.000Z",
      "2026-02-28T10:00:00.000Z",
      "2026-01-31T10:00:00.000Z",
    ]);
    // The next periods are the old cycle's: the 31st comes back after February.
    const next = subscriptionPeriodAt(timeline, first.end);
    const after = subscriptionPeriodAt(timeline, next.end);
    expect([next, after].map((p) => [iso(p.start), iso(p.end)])).toEqual([
      ["2026-02-28T10:00:00.000Z", "2026-03-31T10:00:00.000Z"],
      ["2026-03-31T10:00:00.000Z", "2026-04-30T10:00:00.000Z"],
    ]);
    expect(next.cycleStart).toEqual(next.start);
    // The full cycle period a billed period belongs to, for proration.
    const cycle = cyclePeriodOf(timeline, { start: first.start, end: first.end });
    expect([iso(cycle.start), iso(cycle.end)]).toEqual([
      "2026-01-31T10:00:00.000Z",
      "2026-02-28T10:00:00.000Z",
    ]);
    expect(cyclePeriodOf(timeline, next)).toEqual({ start: next.start, end: next.end });
    // A stored period outside the cycle (a trial period left current) stands for itself.
    const trialPeriod = { start: at("2026-01-20T00:00:00.000Z"), end: change };
    expect(cyclePeriodOf(timeline, trialPeriod)).toEqual(trialPeriod);
  });

  it("a fresh cycle starts at the change and stores its own origin", () => {
    const periods = initialSubscriptionPeriods(change, "ANNUALLY", undefined, null);
    expect(iso(periods.billingCycleOrigin)).toBe("2026-02-10T00:00:00.000Z");
    expect([iso(periods.currentPeriodStart), iso(periods.currentPeriodEnd)]).toEqual([
      "2026-02-10T00:00:00.000Z",
      "2027-02-10T00:00:00.000Z",
    ]);
    expect(iso(initialSubscriptionPeriods(change, "MONTHLY", 14).billingCycleOrigin)).toBe(
      "2026-02-24T00:00:00.000Z",
    );
  });

  it("refuses an inherited cycle with a trial or an origin after the start", () => {
    expect(() => initialSubscriptionPeriods(change, "MONTHLY", 7, old.startedAt)).toThrow(
      RangeError,
    );
    expect(() =>
      initialSubscriptionPeriods(change, "MONTHLY", undefined, at("2026-02-11T00:00:00.000Z")),
    ).toThrow(RangeError);
  });

  it("keeps the replaced subscription's window key after a plan change: usage is the tenant's, the subscription's part starts at the change", () => {
    const timeline = {
      startedAt: change,
      trialEndsAt: null,
      interval: "MONTHLY" as const,
      cycleOrigin: old.startedAt,
    };
    const first = resetWindowAt(timeline, "MONTHLY", at("2026-02-15T00:00:00.000Z"));
    expect([first.key, iso(first.start), iso(first.end)]).toEqual([
      "2026-01-31T10:00:00.000Z",
      "2026-02-10T00:00:00.000Z",
      "2026-02-28T10:00:00.000Z",
    ]);
    // The same key as the replaced subscription's window at the same instant.
    const replaced = { ...timeline, startedAt: old.startedAt, cycleOrigin: null };
    expect(resetWindowAt(replaced, "MONTHLY", at("2026-02-09T00:00:00.000Z")).key).toBe(first.key);
    // An instant before the change (a late usage event) counts in the first window.
    expect(resetWindowAt(timeline, "MONTHLY", at("2026-02-05T00:00:00.000Z"))).toEqual(first);
    const second = resetWindowAt(timeline, "MONTHLY", at("2026-03-05T00:00:00.000Z"));
    expect([iso(second.start), iso(second.end)]).toEqual([
      "2026-02-28T10:00:00.000Z",
      "2026-03-31T10:00:00.000Z",
    ]);
    const yearly = resetWindowAt(timeline, "ANNUALLY", at("2026-06-01T00:00:00.000Z"));
    expect(yearly.key).toBe("2026-01-31T10:00:00.000Z");
    expect([iso(yearly.start), iso(yearly.end)]).toEqual([
      "2026-02-10T00:00:00.000Z",
      "2027-01-31T10:00:00.000Z",
    ]);
    expect(resetWindowAt(timeline, "NEVER", change)).toMatchObject({ start: change, end: null });
  });

  it("reads rows written before the origin column as anchored on the first billable start", () => {
    const legacy = timelineOf(
      { startedAt: "2026-01-31T10:00:00.000Z", trialEndsAt: null, billingCycleOrigin: null },
      "MONTHLY",
    );
    const period = subscriptionPeriodAt(legacy, at("2026-03-01T00:00:00.000Z"));
    expect([iso(period.start), iso(period.end)]).toEqual([
      "2026-02-28T10:00:00.000Z",
      "2026-03-31T10:00:00.000Z",
    ]);
  });
});
