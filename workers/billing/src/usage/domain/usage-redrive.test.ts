import { describe, expect, it } from "vitest";
import {
  DEFAULT_REDRIVE_AFTER_SECONDS,
  redriveAfterSeconds,
  redriveOf,
  type UnfinishedEventRow,
} from "./usage-redrive.ts";

const pending: UnfinishedEventRow = {
  id: "6f6c0b0e-7d0c-4c83-9d2b-0a0a0a0a0a01",
  tenantId: "6f6c0b0e-7d0c-4c83-9d2b-0a0a0a0a0a02",
  eventId: "evt-1",
  feature: "api_calls",
  amount: 3,
  timestamp: "2026-11-23T10:00:00.000Z",
  receivedAt: "2026-11-23T10:00:01.000Z",
  status: "PENDING",
  subscriptionId: null,
  periodKey: null,
  periodStart: null,
  periodEnd: null,
  validatedAt: null,
  properties: {},
};

const validated: UnfinishedEventRow = {
  ...pending,
  status: "VALIDATED",
  subscriptionId: "6f6c0b0e-7d0c-4c83-9d2b-0a0a0a0a0a03",
  periodKey: "2026-11-01T00:00:00.000Z",
  periodStart: "2026-11-01T00:00:00.000Z",
  periodEnd: "2026-12-01T00:00:00.000Z",
  validatedAt: "2026-11-23T10:00:02.000Z",
};

describe("redriveOf", () => {
  it("sends a PENDING event to validation with the fields of its row", () => {
    expect(redriveOf(pending)).toEqual({
      queue: "raw",
      message: {
        id: pending.id,
        tenantId: pending.tenantId,
        eventId: "evt-1",
        feature: "api_calls",
        amount: 3,
        timestamp: pending.timestamp,
        receivedAt: pending.receivedAt,
      },
    });
  });

  it("sends a VALIDATED event straight to aggregation in the window validation stored", () => {
    expect(redriveOf(validated)).toEqual({
      queue: "validated",
      message: {
        id: validated.id,
        tenantId: validated.tenantId,
        eventId: "evt-1",
        subscriptionId: validated.subscriptionId,
        feature: "api_calls",
        amount: 3,
        timestamp: "2026-11-23T10:00:00.000Z",
        receivedAt: validated.receivedAt,
        window: {
          key: "2026-11-01T00:00:00.000Z",
          start: "2026-11-01T00:00:00.000Z",
          end: "2026-12-01T00:00:00.000Z",
        },
        validatedAt: validated.validatedAt,
      },
    });
  });

  it("carries the event's properties to either queue, and leaves out an empty set", () => {
    const properties = { region: "eu", tokens: 1200 };
    expect(redriveOf({ ...pending, properties }).message.properties).toEqual(properties);
    expect(redriveOf({ ...validated, properties }).message.properties).toEqual(properties);
    expect(redriveOf(pending).message).not.toHaveProperty("properties");
  });

  it("sends a VALIDATED row that lost its window back through validation", () => {
    expect(redriveOf({ ...validated, subscriptionId: null }).queue).toBe("raw");
    expect(redriveOf({ ...validated, periodKey: null }).queue).toBe("raw");
  });
});

describe("redrive bound", () => {
  it("reads the configured seconds, with a floor and a default", () => {
    expect(redriveAfterSeconds("20")).toBe(20);
    expect(redriveAfterSeconds("1")).toBe(5);
    expect(redriveAfterSeconds(undefined)).toBe(DEFAULT_REDRIVE_AFTER_SECONDS);
    expect(redriveAfterSeconds("")).toBe(DEFAULT_REDRIVE_AFTER_SECONDS);
    expect(redriveAfterSeconds("soon")).toBe(DEFAULT_REDRIVE_AFTER_SECONDS);
  });
});
