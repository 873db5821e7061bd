import { describe, expect, it } from "vitest";
import {
  counterIdRetentionMs,
  DEFAULT_COUNTER_ID_RETENTION_SECONDS,
  DEFAULT_FLUSH_IDS_RETENTION_SECONDS,
  DEFAULT_FLUSH_INTERVAL_MS,
  flushIdsRetentionMs,
  flushIntervalMs,
} from "./usage-counter-settings.ts";

describe("usage counter settings", () => {
  it("reads the flush interval in ms, within 10 ms and a minute", () => {
    expect(flushIntervalMs(undefined)).toBe(DEFAULT_FLUSH_INTERVAL_MS);
    expect(flushIntervalMs("")).toBe(200);
    expect(flushIntervalMs("not a number")).toBe(200);
    expect(flushIntervalMs("1000")).toBe(1000);
    expect(flushIntervalMs("1500.7")).toBe(1500);
    expect(flushIntervalMs("0")).toBe(10);
    expect(flushIntervalMs("3600000")).toBe(60_000);
  });

  it("reads the counter's id memory in seconds, at least a minute", () => {
    expect(counterIdRetentionMs(undefined)).toBe(DEFAULT_COUNTER_ID_RETENTION_SECONDS * 1000);
    expect(counterIdRetentionMs("3600")).toBe(3_600_000);
    expect(counterIdRetentionMs(String(35 * 86_400))).toBe(35 * 86_400_000);
    expect(counterIdRetentionMs("5")).toBe(60_000);
    expect(counterIdRetentionMs("-1")).toBe(60_000);
    expect(counterIdRetentionMs("soon")).toBe(3_600_000);
  });

  it("reads how long flush ids stay in D1, at least a minute", () => {
    expect(flushIdsRetentionMs(undefined)).toBe(DEFAULT_FLUSH_IDS_RETENTION_SECONDS * 1000);
    expect(flushIdsRetentionMs("7200")).toBe(7_200_000);
    expect(flushIdsRetentionMs("1")).toBe(60_000);
  });
});
