import { describe, expect, it } from "vitest";
import {
  attributionId,
  countedWindow,
  drawTarget,
  type WindowKey,
  windowId,
} from "./window-keys.ts";

const cycle: WindowKey = {
  subscriptionId: "sub-2",
  featureKey: "api_calls",
  window: {
    key: "2026-03-01T00:00:00.000Z",
    start: new Date("2026-03-15T00:00:00.000Z"),
    end: new Date("2026-04-01T00:00:00.000Z"),
  },
};

const lifetime: WindowKey = {
  subscriptionId: "sub-2",
  featureKey: "seats",
  window: { key: "lifetime", start: new Date("2026-03-15T00:00:00.000Z"), end: null },
};

describe("window keys", () => {
  it("names the tenant's window apart from each subscription's share of it", () => {
    const earlier = { ...cycle, subscriptionId: "sub-1" };
    expect(windowId(earlier)).toBe(windowId(cycle));
    expect(attributionId(earlier)).not.toBe(attributionId(cycle));
  });

  it("describes a cycle window from its whole start, not the subscription's part", () => {
    expect(countedWindow(cycle)).toEqual({
      featureKey: "api_calls",
      windowKey: "2026-03-01T00:00:00.000Z",
      windowStart: "2026-03-01T00:00:00.000Z",
      windowEnd: "2026-04-01T00:00:00.000Z",
    });
    expect(countedWindow(lifetime)).toMatchObject({
      windowStart: "2026-03-15T00:00:00.000Z",
      windowEnd: null,
    });
  });

  it("records draws against the subscription's part of the window", () => {
    expect(drawTarget(cycle)).toEqual({
      subscriptionId: "sub-2",
      featureKey: "api_calls",
      periodKey: "2026-03-01T00:00:00.000Z",
      periodStart: "2026-03-15T00:00:00.000Z",
      periodEnd: "2026-04-01T00:00:00.000Z",
    });
  });
});
