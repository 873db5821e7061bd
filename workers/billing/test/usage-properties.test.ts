import { describe, expect, it } from "vitest";
import { SCHEMA } from "../src/usage/log/schema.ts";
import { UsageLogStore } from "../src/usage/log/storage.ts";
import { createApiKey } from "./catalog-helpers.ts";
import { insertSubscription, snapshot } from "./entitlement-fixtures.ts";
import { call, expectError, register } from "./helpers.ts";
import { inUsageLog, loggedEvents } from "./usage-log-helpers.ts";

const EVENTS = "/api/v1/usage/events";

async function customer() {
  const owner = await register();
  await insertSubscription({
    tenantId: owner.tenant.id,
    snapshots: [snapshot.metered("api_calls", 100)],
  });
  return { owner, key: await createApiKey(owner), tenantId: owner.tenant.id };
}

const event = (overrides: Record<string, unknown> = {}) => ({
  eventId: crypto.randomUUID(),
  feature: "api_calls",
  amount: 1,
  timestamp: new Date().toISOString(),
  ...overrides,
});

const lookup = (key: string, eventId: string) => call(`${EVENTS}/${eventId}`, { token: key });

describe("POST /usage/events: properties", () => {
  it("stores them with the event and returns them from the lookup and the listing ({} when none)", async () => {
    const { key } = await customer();
    const properties = { region: "eu", model: "größe-✓", tokens: 1200, ratio: 0.25, empty: "" };
    const full = Object.fromEntries(
      Array.from({ length: 20 }, (_, i) => [`k${i}_${"x".repeat(60)}`, "v".repeat(256)]),
    );
    const withProperties = event({ properties });
    const withTwenty = event({ properties: full });
    const without = event();
    const result = await call(EVENTS, { token: key, body: [withProperties, withTwenty, without] });
    expect(result.status, JSON.stringify(result.body)).toBe(202);
    expect(result.body).toMatchObject({ accepted: 3, rejected: 0 });

    const one = await lookup(key, withProperties.eventId);
    expect(one.status).toBe(200);
    expect(one.body.properties).toEqual(properties);
    expect((await lookup(key, withTwenty.eventId)).body.properties).toEqual(full);
    expect((await lookup(key, without.eventId)).body.properties).toEqual({});

    const listed = await call(`${EVENTS}?limit=10`, { token: key });
    const byEventId = new Map(
      listed.body.data.map((e: { eventId: string; properties: unknown }) => [
        e.eventId,
        e.properties,
      ]),
    );
    expect(byEventId.get(withProperties.eventId)).toEqual(properties);
    expect(byEventId.get(withTwenty.eventId)).toEqual(full);
    expect(byEventId.get(without.eventId)).toEqual({});
  });

  it("takes an absent amount as 1; a bad amount is still rejected by itself", async () => {
    const { key } = await customer();
    const { amount: _amount, ...noAmount } = event({ properties: { region: "eu" } });
    const result = await call(EVENTS, {
      token: key,
      body: [noAmount, event({ amount: 0 }), event({ amount: null })],
    });
    expect(result.status).toBe(202);
    expect(
      result.body.events.map((e: { status: string; reason?: string }) => e.reason ?? e.status),
    ).toEqual(["accepted", "INVALID_AMOUNT", "INVALID_AMOUNT"]);
    const stored = await lookup(key, noAmount.eventId);
    expect(stored.body).toMatchObject({ amount: 1, properties: { region: "eu" } });
  });

  it.each([
    ["a key that does not match [a-z0-9_]{1,64}", { Region: "eu" }, "Region"],
    ["a key over 64 characters", { ["k".repeat(65)]: 1 }, "k".repeat(65)],
    [
      "more than 20 keys",
      Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, i])),
      "at most 20 keys",
    ],
    ["a string over 256 characters", { note: "n".repeat(257) }, '"note"'],
    ["an object value", { nested: { a: 1 } }, '"nested"'],
    ["a boolean value", { flag: true }, '"flag"'],
    ["a null value", { gone: null }, '"gone"'],
    ["an array instead of an object", ["region"], "properties must be an object"],
    ["a string instead of an object", "region=eu", "properties must be an object"],
    ["null instead of an object", null, "properties must be an object"],
  ])(
    "refuses the whole batch (422) for %s, naming the event and the key, and stores nothing",
    async (_case, properties, named) => {
      const { key, tenantId } = await customer();
      const good = event({ properties: { region: "eu" } });
      const bad = event({ properties });
      const result = await call(EVENTS, { token: key, body: [good, bad, event()] });
      expectError(result, 422, (message) => {
        expect(message).toContain(`event "${bad.eventId}" (index 1)`);
        expect(message).toContain(named);
      });
      expectError(await lookup(key, good.eventId), 404, "Usage event not found");
      expect(await loggedEvents(tenantId)).toEqual([]);
    },
  );

  it("refuses a non-finite number, and names an event without a usable eventId by its index", async () => {
    const { key, tenantId } = await customer();
    const good = event();
    // JSON reads 1e999 as Infinity.
    const rawBody = `[${JSON.stringify(good)}, {"feature": "api_calls", "timestamp": "${new Date().toISOString()}", "properties": {"tokens": 1e999}}]`;
    expectError(await call(EVENTS, { token: key, rawBody }), 422, (message) => {
      expect(message).toBe(
        'Invalid properties in event at index 1: property "tokens" must be a string or a finite number',
      );
    });
    expectError(await lookup(key, good.eventId), 404);
    expect(await loggedEvents(tenantId)).toEqual([]);
  });
});

describe("usage log: the properties column of objects created before it", () => {
  it("is added at start-up, once, and their events read as having none", async () => {
    const { key, tenantId } = await customer();
    const before = event();
    expect((await call(EVENTS, { token: key, body: [before] })).status).toBe(202);
    const columns = (sql: SqlStorage) =>
      sql
        .exec<{ name: string }>("SELECT name FROM pragma_table_info('events')")
        .toArray()
        .map((row) => row.name);
    const found = await inUsageLog(tenantId, 0, (sql) => {
      // The events table as first released (its CREATE statement is never edited).
      const rows = sql.exec("SELECT * FROM events").toArray();
      sql.exec("DROP TABLE events");
      sql.exec(SCHEMA);
      expect(columns(sql)).not.toContain("properties");
      for (const row of rows) {
        const { properties: _properties, ...old } = row;
        const names = Object.keys(old);
        sql.exec(
          `INSERT INTO events (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`,
          ...Object.values(old),
        );
      }
      // A new instance's start-up, twice: the second finds the column there.
      new UsageLogStore(sql);
      const store = new UsageLogStore(sql);
      expect(columns(sql).filter((name) => name === "properties")).toHaveLength(1);
      return store.find(tenantId, before.eventId);
    });
    expect(found).toMatchObject({ kind: "hot", event: { properties: {} } });
  });
});
