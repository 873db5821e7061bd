import type { UsageEntry } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import { describe, expect, it } from "vitest";
import { sortRecordedBatch } from "./record-batch.ts";
import { attributionId, entryWindowKey } from "./window-keys.ts";

const SUBSCRIPTION = "00000000-0000-4000-8000-000000000001";

function entry(eventId: string, overrides: Partial<UsageEntry> = {}): UsageEntry {
  return {
    eventId,
    subscriptionId: SUBSCRIPTION,
    featureKey: "api_calls",
    periodKey: "2026-03-01T00:00:00.000Z",
    periodStart: "2026-03-01T00:00:00.000Z",
    periodEnd: "2026-04-01T00:00:00.000Z",
    amount: 2,
    occurredAt: "2026-03-10T11:00:00.000Z",
    ...overrides,
  };
}

function sorted(entries: UsageEntry[], fresh: string[]) {
  return sortRecordedBatch(entries, entries.map(entryWindowKey), new Set(fresh));
}

describe("sortRecordedBatch", () => {
  it("counts each fresh id once, and every other entry as a duplicate", () => {
    const batch = sorted([entry("a"), entry("b"), entry("a")], ["a"]);
    expect(batch).toMatchObject({ recorded: 1, duplicates: 2 });
  });

  it("leaves the caller's set of fresh ids as it was", () => {
    const fresh = new Set(["a"]);
    const entries = [entry("a")];
    sortRecordedBatch(entries, entries.map(entryWindowKey), fresh);
    expect(fresh).toEqual(new Set(["a"]));
  });

  it("queues logged events for the flush to claim, each after those before it in its row", () => {
    const entries = [
      entry("a", { usageEventId: "11111111-1111-4111-8111-111111111111", amount: 3 }),
      entry("b", { usageEventId: "22222222-2222-4222-8222-222222222222", amount: 4 }),
    ];
    const batch = sorted(entries, ["a", "b"]);
    expect(batch.logged.map((logged) => [logged.countedBefore, logged.amount])).toEqual([
      [0, 3],
      [3, 4],
    ]);
    expect(batch.pendingRows).toEqual([
      expect.objectContaining({ id: "11111111-1111-4111-8111-111111111111", amount: 3 }),
      expect.objectContaining({ id: "22222222-2222-4222-8222-222222222222", amount: 4 }),
    ]);
    const units = batch.counted.get(attributionId(entryWindowKey(entries[0] as UsageEntry)));
    expect(units).toMatchObject({ claimed: 7, direct: 0 });
    expect(batch.directHours).toEqual([]);
  });

  it("adds units without a logged event directly, with their hour of use", () => {
    const entries = [
      entry("a", { occurredAt: "2026-03-10T11:00:00.000Z" }),
      entry("b", { occurredAt: "2026-03-10T12:30:00.000Z", amount: 5 }),
    ];
    const batch = sorted(entries, ["a", "b"]);
    expect([...batch.counted.values()]).toEqual([
      expect.objectContaining({ claimed: 0, direct: 7, lastAt: "2026-03-10T12:30:00.000Z" }),
    ]);
    expect(batch.directHours.map((hour) => [hour.units, hour.at])).toEqual([
      [2, "2026-03-10T11:00:00.000Z"],
      [5, "2026-03-10T12:30:00.000Z"],
    ]);
    expect(batch.pendingRows).toEqual([]);
  });

  it("keeps one row of units per subscription, feature and window, in batch order", () => {
    const batch = sorted(
      [
        entry("a", { featureKey: "storage" }),
        entry("b"),
        entry("c", { featureKey: "storage" }),
        entry("d", { periodKey: "lifetime", periodEnd: null }),
      ],
      ["a", "b", "c", "d"],
    );
    expect(
      [...batch.counted.values()].map((units) => [units.key.featureKey, units.key.window.key]),
    ).toEqual([
      ["storage", "2026-03-01T00:00:00.000Z"],
      ["api_calls", "2026-03-01T00:00:00.000Z"],
      ["api_calls", "lifetime"],
    ]);
  });
});
