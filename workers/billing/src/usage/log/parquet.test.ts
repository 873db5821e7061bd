import { parquetMetadata } from "hyparquet";
import { parquetWriteBuffer } from "hyparquet-writer";
import { describe, expect, it } from "vitest";
import {
  type ArchivedUsageEvent,
  decodeUsageEventsParquet,
  encodeUsageEventsParquet,
  findUsageEventInParquet,
  queryUsageEventsParquet,
  USAGE_EVENTS_PARQUET_SCHEMA,
  USAGE_EVENTS_ROW_GROUP_SIZE,
  UsageEventsParquetError,
} from "./parquet.ts";

const BASE = Date.parse("2026-11-20T00:00:00.000Z");
const FEATURES = ["api_calls", "storage_gb", "seats"];

/** A deterministic mix of statuses, nulls and metadata shapes. */
function makeEvent(index: number): ArchivedUsageEvent {
  const timestamp = new Date(BASE + ((index * 7919) % 86_400_000)).toISOString();
  const status =
    (["AGGREGATED", "AGGREGATED", "VALIDATED", "PENDING", "REJECTED"] as const)[index % 5] ??
    "PENDING";
  const counted = status === "AGGREGATED" || status === "VALIDATED";
  return {
    id: `0193${index.toString(16).padStart(28, "0")}`,
    tenantId: "7c1f0d52-3f4e-4b8a-9a2e-5d6c7b8a9f01",
    eventId: crypto.randomUUID(),
    feature: FEATURES[index % FEATURES.length] as string,
    amount: index % 11 === 0 ? 9_007_199_254_740_991 : (index % 97) - 3,
    timestamp,
    receivedAt: new Date(Date.parse(timestamp) + 1234).toISOString(),
    status,
    reason: status === "REJECTED" ? "TIMESTAMP_TOO_OLD" : null,
    message: status === "REJECTED" ? "timestamp is more than 7 days old" : null,
    subscriptionId: counted ? `sub-${index % 4}` : null,
    periodKey: counted ? "2026-11" : null,
    validatedAt: counted ? new Date(Date.parse(timestamp) + 2000).toISOString() : null,
    aggregatedAt:
      status === "AGGREGATED" ? new Date(Date.parse(timestamp) + 2500).toISOString() : null,
    metadata:
      index % 3 === 0
        ? {}
        : { region: "eu", attempt: index, nested: { ok: true, tags: ["a", "ü"] } },
    properties:
      index % 4 === 0
        ? {}
        : { region: index % 2 ? "eu" : "us", tokens: index * 1.5, model: "größe" },
  };
}

/**
 * A file as an earlier release wrote it: the same columns, without those
 * added since (properties).
 */
function earlierReleaseFile(events: ArchivedUsageEvent[]): ArrayBuffer {
  const kinds = { STRING: "STRING", INT64: "INT64", TIMESTAMP: "TIMESTAMP", JSON: "JSON" } as const;
  return parquetWriteBuffer({
    columnData: USAGE_EVENTS_PARQUET_SCHEMA.filter((column) => column.column !== "properties").map(
      (column) => ({
        name: column.column,
        type: kinds[column.type],
        nullable: column.nullable,
        data: events.map((event) => {
          const value = event[column.field];
          if (value === null) return null;
          if (column.type === "TIMESTAMP") return new Date(value as string);
          if (column.type === "INT64") return BigInt(value as number);
          return value;
        }),
      }),
    ),
  });
}

const byTimeThenId = (a: ArchivedUsageEvent, b: ArchivedUsageEvent) =>
  a.timestamp < b.timestamp
    ? -1
    : a.timestamp > b.timestamp
      ? 1
      : a.eventId < b.eventId
        ? -1
        : a.eventId > b.eventId
          ? 1
          : 0;

describe("usage events Parquet codec", () => {
  it("round-trips every field exactly, sorted by (timestamp, eventId)", async () => {
    const events = Array.from({ length: 500 }, (_, index) => makeEvent(index));
    // Two events at the same instant are ordered by eventId.
    events.push(
      { ...makeEvent(1), eventId: "zzz-same-instant" },
      { ...makeEvent(1), eventId: "aaa-same-instant" },
    );
    const decoded = await decodeUsageEventsParquet(encodeUsageEventsParquet(events));
    expect(decoded).toEqual([...events].sort(byTimeThenId));
    expect(decoded.map((event) => event.eventId)).toContain("aaa-same-instant");
    const same = decoded.filter((event) => event.eventId.endsWith("same-instant"));
    expect(same.map((event) => event.eventId)).toEqual(["aaa-same-instant", "zzz-same-instant"]);
  });

  it("round-trips text beyond ASCII in the id and text columns", async () => {
    const events = [
      { ...makeEvent(1), eventId: "évènement-1", feature: "données_gb", message: "trop tôt ✓" },
      { ...makeEvent(2), eventId: "事件-2", subscriptionId: "abonnement-ü" },
      { ...makeEvent(3), eventId: "plain-3", feature: "données_gb" },
    ];
    const decoded = await decodeUsageEventsParquet(encodeUsageEventsParquet(events));
    expect(decoded).toEqual([...events].sort(byTimeThenId));
  });

  it("accepts every real day of a month and refuses days and hours that do not exist", async () => {
    const edges = [
      "2026-01-31T00:00:00.000Z",
      "2026-12-31T12:30:00.000Z",
      "2028-02-29T23:59:59.999Z",
    ];
    const events = edges.map((timestamp, index) => ({ ...makeEvent(index), timestamp }));
    const decoded = await decodeUsageEventsParquet(encodeUsageEventsParquet(events));
    expect(decoded.map((event) => event.timestamp)).toEqual(edges);
    for (const timestamp of [
      "2026-02-29T00:00:00.000Z",
      "2026-04-31T00:00:00.000Z",
      "2026-11-20T24:00:00.000Z",
      "2026-13-01T00:00:00.000Z",
    ]) {
      expect(() => encodeUsageEventsParquet([{ ...makeEvent(1), timestamp }])).toThrow(
        UsageEventsParquetError,
      );
    }
  });

  it("writes the documented schema: snake_case columns, INT64 amount, UTC millisecond timestamps, JSON metadata", () => {
    const metadata = parquetMetadata(encodeUsageEventsParquet([makeEvent(1)]));
    const columns = metadata.schema.slice(1);
    expect(columns.map((element) => element.name)).toEqual(
      USAGE_EVENTS_PARQUET_SCHEMA.map((c) => c.column),
    );
    for (const [index, column] of USAGE_EVENTS_PARQUET_SCHEMA.entries()) {
      const element = columns[index];
      expect(element?.repetition_type).toBe(column.nullable ? "OPTIONAL" : "REQUIRED");
      if (column.type === "TIMESTAMP") {
        expect(element).toMatchObject({
          type: "INT64",
          logical_type: { type: "TIMESTAMP", isAdjustedToUTC: true, unit: "MILLIS" },
        });
      } else if (column.type === "INT64") {
        expect(element?.type).toBe("INT64");
      } else {
        expect(element).toMatchObject({
          type: "BYTE_ARRAY",
          converted_type: column.type === "JSON" ? "JSON" : "UTF8",
        });
      }
    }
  });

  it("splits files into row groups of the documented size", () => {
    const events = Array.from({ length: USAGE_EVENTS_ROW_GROUP_SIZE * 2 + 1 }, (_, index) =>
      makeEvent(index),
    );
    const metadata = parquetMetadata(encodeUsageEventsParquet(events));
    expect(metadata.row_groups.map((group) => Number(group.num_rows))).toEqual([
      USAGE_EVENTS_ROW_GROUP_SIZE,
      USAGE_EVENTS_ROW_GROUP_SIZE,
      1,
    ]);
  });

  it("encodes an empty batch as a valid empty file", async () => {
    expect(await decodeUsageEventsParquet(encodeUsageEventsParquet([]))).toEqual([]);
  });

  it("refuses values it could not give back exactly", () => {
    expect(() => encodeUsageEventsParquet([{ ...makeEvent(1), amount: 1.5 }])).toThrow(
      UsageEventsParquetError,
    );
    expect(() =>
      encodeUsageEventsParquet([{ ...makeEvent(1), timestamp: "2026-11-20T10:00:00Z" }]),
    ).toThrow(/timestamp of event .* is not an ISO-8601 UTC time with milliseconds/);
    expect(() =>
      encodeUsageEventsParquet([{ ...makeEvent(1), aggregatedAt: "yesterday" }]),
    ).toThrow(UsageEventsParquetError);
  });

  it("reads a file of an earlier release, without the properties column, as events with none", async () => {
    const events = Array.from({ length: 20 }, (_, index) => makeEvent(index));
    const file = earlierReleaseFile(events);
    expect(parquetMetadata(file).schema.map((element) => element.name)).not.toContain("properties");
    const expected = [...events].sort(byTimeThenId).map((event) => ({ ...event, properties: {} }));
    expect(await decodeUsageEventsParquet(file)).toEqual(expected);
    const wanted = events[7] as ArchivedUsageEvent;
    expect(await findUsageEventInParquet(file, wanted.eventId)).toEqual({
      ...wanted,
      properties: {},
    });
  });

  it("refuses to decode a file that is not a usage events file", async () => {
    await expect(
      decodeUsageEventsParquet(
        new TextEncoder().encode("not parquet at all").buffer as ArrayBuffer,
      ),
    ).rejects.toThrow(UsageEventsParquetError);
  });

  it("finds one event by eventId, and null for an id not in the file", async () => {
    const events = Array.from({ length: 5_000 }, (_, index) => makeEvent(index));
    const file = encodeUsageEventsParquet(events);
    const wanted = events[4321] as ArchivedUsageEvent;
    expect(await findUsageEventInParquet(file, wanted.eventId)).toEqual(wanted);
    expect(await findUsageEventInParquet(file, crypto.randomUUID())).toBeNull();
  });

  it("reads only the matching rows of a time range, feature and status", async () => {
    const events = Array.from({ length: 3_000 }, (_, index) => makeEvent(index));
    const file = encodeUsageEventsParquet(events);
    const from = "2026-11-20T06:00:00.000Z";
    const to = "2026-11-20T12:00:00.000Z";
    const expected = events
      .filter(
        (e) =>
          e.timestamp >= from &&
          e.timestamp < to &&
          e.feature === "api_calls" &&
          e.status === "AGGREGATED",
      )
      .sort(byTimeThenId);
    expect(expected.length).toBeGreaterThan(10);
    expect(
      await queryUsageEventsParquet(file, { from, to, feature: "api_calls", status: "AGGREGATED" }),
    ).toEqual(expected);
    expect(await queryUsageEventsParquet(file, {})).toEqual([...events].sort(byTimeThenId));
  });

  it("encodes and decodes 10,000 events in well under a second each", async () => {
    const events = Array.from({ length: 10_000 }, (_, index) => makeEvent(index));
    const encodeStart = performance.now();
    const file = encodeUsageEventsParquet(events);
    const encodeMs = performance.now() - encodeStart;
    const decodeStart = performance.now();
    const decoded = await decodeUsageEventsParquet(file);
    const decodeMs = performance.now() - decodeStart;
    const findStart = performance.now();
    await findUsageEventInParquet(file, (events[7777] as ArchivedUsageEvent).eventId);
    const findMs = performance.now() - findStart;
    console.log(
      `parquet codec, 10,000 events: ${file.byteLength} bytes, encode ${encodeMs.toFixed(0)} ms, decode ${decodeMs.toFixed(0)} ms, find one ${findMs.toFixed(1)} ms`,
    );
    expect(decoded).toHaveLength(10_000);
    // Generous bounds for a loaded 2-core machine; the measured figures are far lower.
    expect(encodeMs).toBeLessThan(2_000);
    expect(decodeMs).toBeLessThan(2_000);
  });
});
