import { describe, expect, it } from "vitest";
import {
  addMonthsClamped,
  billingAnchorOf,
  cyclePeriodAt,
  initialSubscriptionPeriods,
  resetWindowAt,
  subscriptionPeriodAt,
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
