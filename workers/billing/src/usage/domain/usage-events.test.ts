import { describe, expect, it } from "vitest";
import { batchRefusal, judgeEvent, planBatch, summarise } from "./usage-events.ts";

const good = {
  eventId: "e-1",
  feature: "api_calls",
  amount: 2,
  timestamp: "2026-11-01T12:00:00+02:00",
};

describe("usage event ingestion rules", () => {
  it("normalises a good event (timestamp to UTC, metadata defaulted)", () => {
    expect(judgeEvent(good)).toEqual({
      ok: true,
      event: { ...good, timestamp: "2026-11-01T10:00:00.000Z", metadata: {}, properties: {} },
    });
  });

  it("takes an absent amount as 1, and keeps the properties", () => {
    const { amount: _amount, ...noAmount } = good;
    const properties = { region: "eu", tokens: 12.5, model: "" };
    expect(judgeEvent({ ...noAmount, properties })).toMatchObject({
      ok: true,
      event: { amount: 1, properties },
    });
  });

  it.each([
    [{ ...good, feature: undefined }, "MISSING_REQUIRED_FIELDS"],
    [{ ...good, amount: null }, "INVALID_AMOUNT"],
    [{ ...good, eventId: "" }, "INVALID_EVENT_ID"],
    [{ ...good, feature: "" }, "INVALID_FEATURE"],
    [{ ...good, amount: 0 }, "INVALID_AMOUNT"],
    [{ ...good, amount: 1e12 }, "INVALID_AMOUNT"],
    [{ ...good, timestamp: "2026-11-01" }, "INVALID_TIMESTAMP"],
    [{ ...good, timestamp: "2026-13-01T00:00:00Z" }, "INVALID_TIMESTAMP"],
    [{ ...good, metadata: "x" }, "INVALID_METADATA"],
    [{ ...good, extra: true }, "UNKNOWN_FIELD"],
    [null, "INVALID_EVENT"],
  ])("rejects %j with %s", (item, code) => {
    const judged = judgeEvent(item);
    expect(judged.ok).toBe(false);
    if (!judged.ok) expect(judged.code).toBe(code);
  });

  it("refuses the whole batch for the first event with bad properties, naming it and the key", () => {
    const refusal = (items: unknown[]) => batchRefusal(planBatch(items).outcomes);
    expect(refusal([good, { ...good, eventId: "e-2", properties: { a: 1 } }])).toBeUndefined();
    expect(refusal([good, { ...good, eventId: "e-2", properties: { "Bad-Key": 1 } }])).toBe(
      'Invalid properties in event "e-2" (index 1): property key "Bad-Key" must match [a-z0-9_]{1,64}',
    );
    // Checked before any other rule, and by index when the eventId is unusable.
    expect(refusal([{ eventId: 7, amount: -1, properties: { note: "x".repeat(257) } }, good])).toBe(
      'Invalid properties in event at index 0: property "note" must be at most 256 characters',
    );
    expect(refusal([{ ...good, properties: [] }])).toMatch(
      /event "e-1" \(index 0\): properties must be an object/,
    );
  });

  it("marks repeats of an eventId inside a batch as duplicates of the first", () => {
    const plan = planBatch([good, { ...good, amount: 0 }, good, { ...good, eventId: "e-2" }]);
    expect(plan.candidates.map((c) => c.index)).toEqual([0, 3]);
    expect(summarise(plan.outcomes)).toMatchObject({
      accepted: 3,
      rejected: 1,
      duplicates: 1,
      events: [
        { eventId: "e-1", status: "accepted" },
        { eventId: "e-1", status: "rejected", reason: "INVALID_AMOUNT" },
        { eventId: "e-1", status: "duplicate" },
        { eventId: "e-2", status: "accepted" },
      ],
    });
  });
});
