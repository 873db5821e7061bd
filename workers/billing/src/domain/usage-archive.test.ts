import { describe, expect, it } from "vitest";
import {
  type ArchivedUsageEvent,
  archiveHorizon,
  archiveObjectKey,
  DEFAULT_RETENTION_DAYS,
  dayBounds,
  findInNdjson,
  retentionDays,
  toNdjson,
} from "./usage-archive.ts";

const event = (eventId: string): ArchivedUsageEvent => ({
  id: `id-${eventId}`,
  tenantId: "t",
  eventId,
  subscriptionId: null,
  feature: "api_calls",
  amount: 1,
  timestamp: "2026-10-01T10:00:00.000Z",
  receivedAt: "2026-10-01T10:00:01.000Z",
  status: "AGGREGATED",
  rejectionCode: null,
  rejectionReason: null,
  periodKey: null,
  periodStart: null,
  periodEnd: null,
  validatedAt: null,
  aggregatedAt: null,
  aggregationFlushId: null,
  metadata: { note: "line\nbreak" },
  createdAt: "2026-10-01T10:00:01.000Z",
  updatedAt: "2026-10-01T10:00:02.000Z",
});

describe("usage archive rules", () => {
  it("reads the retention in days, never below the validation window", () => {
    expect(retentionDays("40")).toBe(40);
    expect(retentionDays("3")).toBe(8);
    expect(retentionDays(undefined)).toBe(DEFAULT_RETENTION_DAYS);
    expect(retentionDays("a month")).toBe(DEFAULT_RETENTION_DAYS);
  });

  it("puts the horizon at the start of a whole UTC day", () => {
    expect(archiveHorizon(Date.parse("2026-11-23T13:45:00.000Z"), 35)).toBe(
      "2026-10-19T00:00:00.000Z",
    );
  });

  it("bounds a day and refuses what is not one", () => {
    expect(dayBounds("2026-10-19")).toEqual({
      start: "2026-10-19T00:00:00.000Z",
      end: "2026-10-20T00:00:00.000Z",
    });
    expect(() => dayBounds("2026-10-19T00")).toThrow();
  });

  it("names a part by tenant, day and number", () => {
    expect(archiveObjectKey("t1", "2026-10-19", 7)).toBe(
      "usage-events/t1/2026-10-19/part-00007.ndjson.gz",
    );
  });

  it("writes one line per event and finds an event by its eventId", () => {
    const text = toNdjson([event("a"), event("b")]);
    expect(text.split("\n")).toHaveLength(3);
    expect(findInNdjson(text, "b")).toEqual(event("b"));
    expect(findInNdjson(text, "c")).toBeUndefined();
  });
});
