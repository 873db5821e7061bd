import { describe, expect, it } from "vitest";
import {
  FLUSH_MAX_WINDOWS,
  flushedUnits,
  flushRetryDelayMs,
  type PendingEventRow,
  planFlush,
  type UnflushedRow,
} from "./flush.ts";

const NOW = "2026-03-10T12:00:00.000Z";

function event(id: string, overrides: Partial<PendingEventRow> = {}): PendingEventRow {
  return {
    usage_event_id: id,
    subscription_id: "sub-1",
    feature_key: "api_calls",
    period_key: "2026-03-01T00:00:00.000Z",
    period_start: "2026-03-01T00:00:00.000Z",
    period_end: "2026-04-01T00:00:00.000Z",
    amount: 5,
    occurred_at: "2026-03-10T11:00:00.000Z",
    meter: null,
    ...overrides,
  };
}

function unflushed(overrides: Partial<UnflushedRow> = {}): UnflushedRow {
  return {
    subscription_id: "sub-1",
    feature_key: "api_calls",
    period_key: "2026-03-01T00:00:00.000Z",
    period_start: "2026-03-01T00:00:00.000Z",
    period_end: "2026-04-01T00:00:00.000Z",
    unflushed: 7,
    last_event_at: "2026-03-10T10:00:00.000Z",
    ...overrides,
  };
}

describe("planFlush", () => {
  it("has nothing to flush when no units wait", () => {
    expect(planFlush([], [], NOW)).toBeNull();
  });

  it("claims events in their window's delta and leaves their units to the claim", () => {
    const plan = planFlush(
      [event("e1"), event("e2", { occurred_at: "2026-03-10T11:30:00.000Z" })],
      [],
      NOW,
    );
    expect(plan?.claims.map((claim) => claim.id)).toEqual(["e1", "e2"]);
    expect(plan?.deltas).toEqual([
      {
        subscriptionId: "sub-1",
        featureLookupKey: "api_calls",
        periodKey: "2026-03-01T00:00:00.000Z",
        periodStart: "2026-03-01T00:00:00.000Z",
        periodEnd: "2026-04-01T00:00:00.000Z",
        amount: 0,
        lastEventAt: "2026-03-10T11:30:00.000Z",
      },
    ]);
    expect(plan?.directTaken).toEqual([]);
  });

  it("takes unflushed units whole, in one delta with the window's events", () => {
    const plan = planFlush([event("e1")], [unflushed()], NOW);
    expect(plan?.deltas).toHaveLength(1);
    expect(plan?.deltas[0]).toMatchObject({
      amount: 7,
      lastEventAt: "2026-03-10T11:00:00.000Z",
    });
    expect(plan?.directTaken).toEqual([unflushed()]);
  });

  it("keeps units of each subscription in their own delta", () => {
    const plan = planFlush([], [unflushed(), unflushed({ subscription_id: "sub-2" })], NOW);
    expect(plan?.deltas.map((delta) => [delta.subscriptionId, delta.amount])).toEqual([
      ["sub-1", 7],
      ["sub-2", 7],
    ]);
  });

  it("dates units with no time of use at the claim", () => {
    const plan = planFlush([], [unflushed({ last_event_at: null })], NOW);
    expect(plan?.deltas[0]?.lastEventAt).toBe(NOW);
  });

  it("leaves units of windows past the limit for the next flush", () => {
    const events = Array.from({ length: FLUSH_MAX_WINDOWS }, (_, index) =>
      event(`e${index}`, { feature_key: `feature_${index}` }),
    );
    const extraEvent = event("late", { feature_key: "one_too_many" });
    const extraRow = unflushed({ feature_key: "also_too_many" });
    const sameWindow = unflushed({ feature_key: "feature_0" });
    const plan = planFlush([...events, extraEvent], [extraRow, sameWindow], NOW);
    expect(plan?.deltas).toHaveLength(FLUSH_MAX_WINDOWS);
    expect(plan?.claims.map((claim) => claim.id)).not.toContain("late");
    expect(plan?.directTaken).toEqual([sameWindow]);
  });
});

describe("flush retries and totals", () => {
  it("backs off by the most tried flush's attempts, up to a minute", () => {
    expect(flushRetryDelayMs(null)).toBe(2000);
    expect(flushRetryDelayMs(0)).toBe(1000);
    expect(flushRetryDelayMs(3)).toBe(8000);
    expect(flushRetryDelayMs(6)).toBe(60_000);
    expect(flushRetryDelayMs(1000)).toBe(60_000);
  });

  it("counts a flush's units as its deltas' and its claimed events'", () => {
    const plan = planFlush([event("e1")], [unflushed(), unflushed({ feature_key: "b" })], NOW);
    expect(flushedUnits(plan?.deltas ?? [], 5)).toBe(19);
  });
});
