import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { rawQueueIndex } from "@edge-platform/shared/queues/usage";
import { shardOfEventId, shardOfId } from "@edge-platform/shared/usage-log/client";
import { describe, expect, it, vi } from "vitest";
import {
  archiveSettings,
  fileTarget,
  tenantArchivePrefix,
} from "../src/usage/log/archive-layout.ts";
import type { EventIdHash } from "../src/usage/log/event-id-hash.ts";
import { dayTableName } from "../src/usage/log/id-index.ts";
import { decodeUsageEventsParquet } from "../src/usage/log/parquet.ts";
import { rawQueueBinding, rawQueueCount } from "../src/usage/log/raw-queues.ts";
import { findUsageEvent, listUsageEvents, storeUsageEvents } from "../src/usage/log/service.ts";
import { tenantShards } from "../src/usage/log/shards.ts";
import type { UsageLog } from "../src/usage/log/usage-log.ts";
import { insertTenant } from "./entitlement-fixtures.ts";
import { call, expectError } from "./helpers.ts";
import {
  ARCHIVE_AT,
  age,
  aggregateAll,
  archive,
  customer,
  dayTables,
  EVENTS,
  HOUR,
  incoming,
  inUsageLog,
  storeAndArchive,
  usageLogObject,
  useStore,
  utcDay,
  withShards,
} from "./usage-log-helpers.ts";

/**
 * Places a shard's hot events inside the hour the next archive run sees as
 * open (whatever the clock, also a minute before the hour turns).
 */
async function receivedInOpenHour(tenantId: string, shard: number) {
  const openHourStart = new Date(Math.floor((ARCHIVE_AT() + 5_000) / HOUR) * HOUR + 1_000);
  await inUsageLog(tenantId, shard, (sql) => {
    sql.exec("UPDATE events SET received_at = ?", openHourStart.toISOString());
  });
}

async function archiveObjects(tenantId: string) {
  return (await env.USAGE_ARCHIVE.list({ prefix: tenantArchivePrefix(tenantId) })).objects;
}

async function hotCount(tenantId: string, shard: number) {
  return inUsageLog(
    tenantId,
    shard,
    (sql) => sql.exec<{ n: number }>("SELECT count(*) AS n FROM events").one().n,
  );
}

describe("usage log: shards", () => {
  it("reads the shard count per tenant, with a default and overrides", () => {
    const base = {
      USAGE_LOG_SHARDS: "2",
      USAGE_LOG_TENANT_SHARDS: '{"a": 8, "b": {"shards": 4, "previous": 2}}',
    };
    expect(tenantShards(base, "a")).toEqual({ shards: 8 });
    expect(tenantShards(base, "b")).toEqual({ shards: 4, previous: 2 });
    expect(tenantShards(base, "c")).toEqual({ shards: 2 });
    expect(
      tenantShards({ USAGE_LOG_SHARDS: "", USAGE_LOG_TENANT_SHARDS: "not json" }, "c"),
    ).toEqual({
      shards: 1,
    });
  });

  it("refuses a resent eventId in whatever shard holds it, and after the count changed", async () => {
    const tenantId = await insertTenant();
    const sharded = withShards(tenantId, 4);
    const events = Array.from({ length: 40 }, () => incoming());
    const stored = await storeUsageEvents(sharded, tenantId, events);
    expect(stored.size).toBe(40);
    const shards = new Set(events.map((event) => shardOfEventId(event.eventId, 4)));
    expect(shards.size).toBeGreaterThan(1);
    for (const shard of shards) {
      const held = await hotCount(tenantId, shard);
      expect(held).toBe(events.filter((e) => shardOfEventId(e.eventId, 4) === shard).length);
    }
    // Every id names the shard that holds it.
    for (const shard of shards) {
      const ids = await inUsageLog(tenantId, shard, (sql) =>
        sql.exec<{ id: string }>("SELECT id FROM events").toArray(),
      );
      for (const { id } of ids) expect(shardOfId(id)).toBe(shard);
    }
    // Resent: all refused, whatever shard they sit in.
    expect((await storeUsageEvents(sharded, tenantId, events)).size).toBe(0);
    // The count grows to 8, with the old count named for the duplicate window.
    const grown = withShards(tenantId, { shards: 8, previous: 4 });
    const fresh = incoming();
    const again = await storeUsageEvents(grown, tenantId, [...events, fresh]);
    expect([...again]).toEqual([fresh.eventId]);
    // Read back through the new count: found where it was stored.
    const moved = events.find((e) => shardOfEventId(e.eventId, 8) !== shardOfEventId(e.eventId, 4));
    expect(moved).toBeDefined();
    expect((await findUsageEvent(grown, tenantId, moved?.eventId ?? "")).eventId).toBe(
      moved?.eventId,
    );
    const listed = await listUsageEvents(grown, tenantId, { limit: 1000 });
    expect(listed.data).toHaveLength(41);
    // In event-time order, ties by id, across the shards.
    const positions = listed.data.map((event) => `${event.timestamp}|${event.id}`);
    expect(positions).toEqual([...positions].sort());
  });
});

describe("usage log: raw queues", () => {
  it("sends each shard's events to its own raw queue, every event once", async () => {
    const tenantId = await insertTenant();
    const events = Array.from({ length: 200 }, () => incoming());
    await storeUsageEvents(withShards(tenantId, 4), tenantId, events);
    const sent = new Map<number, string[]>();
    const recorder = (index: number) =>
      ({
        sendBatch: async (messages: { body: { events?: { id: string }[]; id?: string } }[]) => {
          const ids = messages.flatMap(
            ({ body }) => body.events?.map((e) => e.id) ?? [body.id ?? ""],
          );
          sent.set(index, [...(sent.get(index) ?? []), ...ids]);
        },
      }) as unknown as Queue;
    for (let shard = 0; shard < 4; shard++) {
      // Once the ingestion's own send to the stack's queues is done, due again.
      await vi.waitFor(
        async () =>
          expect(
            await inUsageLog(
              tenantId,
              shard,
              (sql) => sql.exec<{ n: number }>("SELECT count(*) AS n FROM outbox").one().n,
            ),
          ).toBe(0),
        { timeout: 15_000, interval: 50 },
      );
      await inUsageLog(tenantId, shard, (sql) => {
        sql.exec("INSERT OR IGNORE INTO outbox (id, next_attempt_at) SELECT id, 0 FROM events");
      });
      await runInDurableObject(usageLogObject(tenantId, shard), async (instance: UsageLog) => {
        const real = (instance as unknown as { env: Env }).env;
        const queues = Object.fromEntries(
          Array.from({ length: rawQueueCount(real.USAGE_RAW_QUEUES) }, (_, index) => [
            rawQueueBinding(index),
            recorder(index),
          ]),
        );
        (instance as unknown as { env: Env }).env = { ...real, ...queues };
        await instance.publish(Date.now() + 60_000);
        (instance as unknown as { env: Env }).env = real;
      });
    }
    const queues = rawQueueCount(env.USAGE_RAW_QUEUES);
    expect(queues).toBeGreaterThanOrEqual(4);
    // Four shards, four queues, consecutive from the tenant's own.
    expect([...sent.keys()].sort()).toEqual(
      [0, 1, 2, 3].map((shard) => rawQueueIndex(tenantId, queues, shard)).sort(),
    );
    for (const [queue, ids] of sent) {
      for (const id of ids) expect(rawQueueIndex(tenantId, queues, shardOfId(id))).toBe(queue);
    }
    const all = [...sent.values()].flat();
    expect(all).toHaveLength(200);
    expect(new Set(all).size).toBe(200);
  });
});

describe("usage log: the Parquet archive in R2", () => {
  it("archives finished events of closed hours, and still refuses their ids and finds them with the same body", async () => {
    const { key, tenantId } = await customer();
    const events = Array.from({ length: 12 }, (_, i) =>
      incoming({
        feature: i % 3 === 0 ? "storage" : "api_calls",
        amount: i + 1,
        // Some events have none: those read back as {}.
        ...(i % 4 === 3 ? {} : { properties: { region: i % 2 ? "eu" : "us", tokens: i * 2.5 } }),
      }),
    );
    expect((await call(EVENTS, { token: key, body: events })).body.accepted).toBe(12);
    await aggregateAll(tenantId, 0);
    const hotView = await call(`${EVENTS}/${events[4]?.eventId}`, { token: key });
    expect(hotView.status).toBe(200);
    expect(hotView.body.status).toBe("AGGREGATED");

    // Nothing to archive while the hour is open and the file is not full.
    await receivedInOpenHour(tenantId, 0);
    expect(await archive(tenantId, 0)).toMatchObject({ files: 0, events: 0 });
    await age(tenantId, 0, 2);
    expect(await archive(tenantId, 0)).toMatchObject({ files: 1, events: 12 });
    expect(await hotCount(tenantId, 0)).toBe(0);

    const [object] = await archiveObjects(tenantId);
    const day = object?.key.match(/\/date=(\d{4}-\d{2}-\d{2})\//)?.[1];
    expect(object?.key).toMatch(
      new RegExp(`^usage/tenant=${tenantId}/date=${day}/shard-0-[0-9a-f-]{36}\\.parquet$`),
    );
    const file = await env.USAGE_ARCHIVE.get(object?.key ?? "");
    const rows = await decodeUsageEventsParquet(await (file as R2ObjectBody).arrayBuffer());
    expect(rows.map((row) => row.eventId).sort()).toEqual(events.map((e) => e.eventId).sort());
    expect(rows.every((row) => row.tenantId === tenantId && row.status === "AGGREGATED")).toBe(
      true,
    );
    // The file's day is the UTC day the events were received.
    expect(rows.every((row) => row.receivedAt.slice(0, 10) === day)).toBe(true);
    const propertiesOf = new Map(rows.map((row) => [row.eventId, row.properties]));
    for (const e of events) expect(propertiesOf.get(e.eventId)).toEqual(e.properties ?? {});

    // The same body from R2 as from the hot log (only the receipt time was moved here).
    const archivedView = await call(`${EVENTS}/${events[4]?.eventId}`, { token: key });
    expect(archivedView.status).toBe(200);
    expect({ ...archivedView.body, receivedAt: null }).toEqual({
      ...hotView.body,
      receivedAt: null,
    });
    expect(archivedView.body.properties).toEqual({ region: "us", tokens: 10 });
    const plain = await call(`${EVENTS}/${events[3]?.eventId}`, { token: key });
    expect(plain.body.properties).toEqual({});
    // And the listing, which reads the file too.
    const listed = await call(`${EVENTS}?limit=100`, { token: key });
    const listedProperties = new Map(
      listed.body.data.map((e: { eventId: string; properties: unknown }) => [
        e.eventId,
        e.properties,
      ]),
    );
    expect(listedProperties.size).toBe(events.length);
    for (const e of events) expect(listedProperties.get(e.eventId)).toEqual(e.properties ?? {});
    // Still refused when resent: the id sits in an archive file now.
    const resent = await call(EVENTS, { token: key, body: [events[0], events[11]] });
    expect(resent.body.events.map((e: { status: string }) => e.status)).toEqual([
      "duplicate",
      "duplicate",
    ]);
    // Another tenant's key finds nothing.
    const other = await customer();
    expectError(await call(`${EVENTS}/${events[4]?.eventId}`, { token: other.key }), 404);
  });

  it("forgets ids and the file index after the retention window; a resend then is a new event", async () => {
    const tenantId = await insertTenant();
    const events = Array.from({ length: 5 }, () => incoming());
    await storeUsageEvents(env, tenantId, events);
    await aggregateAll(tenantId, 0);
    await age(tenantId, 0, 2);
    expect(await archive(tenantId, 0)).toMatchObject({ files: 1, events: 5 });
    const log = usageLogObject(tenantId, 0);
    // Inside the window nothing is forgotten.
    expect(await log.prune(Date.now() + 30 * 86_400_000)).toBe(0);
    expect((await storeUsageEvents(env, tenantId, events)).size).toBe(0);
    // Past 35 days the ids and the index go: the event is no longer found,
    // and the same eventId is accepted again (validation then judges its
    // timestamp against the new receipt time).
    expect(await log.prune(Date.now() + 36 * 86_400_000)).toBe(5);
    await expect(findUsageEvent(env, tenantId, events[0]?.eventId ?? "")).rejects.toThrow(
      "Usage event not found",
    );
    expect((await storeUsageEvents(env, tenantId, events.slice(0, 1))).size).toBe(1);
  });

  it("writes every N finished events without waiting for the hour", async () => {
    const tenantId = await insertTenant();
    const small = { ...env, USAGE_ARCHIVE_FILE_EVENTS: "5", USAGE_ARCHIVE_FILE_SPREAD: "0" };
    await storeUsageEvents(
      env,
      tenantId,
      Array.from({ length: 12 }, () => incoming()),
    );
    await aggregateAll(tenantId, 0);
    await receivedInOpenHour(tenantId, 0);
    const reports = await runInDurableObject(
      usageLogObject(tenantId, 0),
      async (instance: UsageLog) => {
        (instance as unknown as { env: Env }).env = small as Env;
        const nowMs = ARCHIVE_AT();
        // As the alarm runs it: one file a time, again at once while full ones were written.
        const runs = [];
        for (let run = 0; run < 3; run++)
          runs.push(await instance.archiveDue({ nowMs, maxFiles: 1 }));
        return runs;
      },
    );
    // Two full files; the last two events wait for their hour to close.
    expect(reports).toEqual([
      { files: 1, events: 5, more: true },
      { files: 1, events: 5, more: true },
      { files: 0, events: 0, more: false },
    ]);
    expect(await hotCount(tenantId, 0)).toBe(2);
    expect(await archiveObjects(tenantId)).toHaveLength(2);
  });

  it("writes full files of the sizes the spread gives their first events, every event once", async () => {
    const tenantId = await insertTenant();
    const spread = { ...env, USAGE_ARCHIVE_FILE_EVENTS: "10", USAGE_ARCHIVE_FILE_SPREAD: "0.5" };
    const events = Array.from({ length: 40 }, () => incoming());
    await storeUsageEvents(env, tenantId, events);
    await aggregateAll(tenantId, 0);
    await receivedInOpenHour(tenantId, 0);
    const files = await runInDurableObject(
      usageLogObject(tenantId, 0),
      async (instance: UsageLog) => {
        (instance as unknown as { env: Env }).env = spread as Env;
        while ((await instance.archiveDue({ nowMs: ARCHIVE_AT(), maxFiles: 1 })).more);
        return (instance as unknown as { ctx: DurableObjectState }).ctx.storage.sql
          .exec<{ first_id: string; events: number }>(
            "SELECT first_id, events FROM files ORDER BY id",
          )
          .toArray();
      },
    );
    const settings = archiveSettings(spread as Env);
    expect(files.length).toBeGreaterThanOrEqual(3);
    for (const file of files) {
      expect(file.events).toBe(fileTarget(settings, file.first_id));
      expect(file.events).toBeGreaterThanOrEqual(5);
    }
    // The rest (fewer than a full file) waits for its hour to close.
    const archived = files.reduce((sum, file) => sum + file.events, 0);
    expect(await hotCount(tenantId, 0)).toBe(40 - archived);
    expect(40 - archived).toBeLessThan(10);
  });

  it.each(["intent", "put"] as const)(
    "loses and duplicates nothing when it crashes after the %s",
    async (crashAfter) => {
      const tenantId = await insertTenant();
      const events = Array.from({ length: 30 }, (_, i) => incoming({ amount: i + 1 }));
      await storeUsageEvents(env, tenantId, events);
      await aggregateAll(tenantId, 0);
      await age(tenantId, 0, 3);
      await expect(archive(tenantId, 0, crashAfter)).rejects.toThrow(
        `injected crash after the ${crashAfter}`,
      );
      // Until the run is finished, every event is still found (hot).
      expect((await findUsageEvent(env, tenantId, events[7]?.eventId ?? "")).amount).toBe(8);
      const resumed = await archive(tenantId, 0);
      expect(resumed).toMatchObject({ files: 1, events: 30 });
      expect(await archive(tenantId, 0)).toMatchObject({ files: 0, events: 0 });
      expect(await hotCount(tenantId, 0)).toBe(0);
      const objects = await archiveObjects(tenantId);
      expect(objects).toHaveLength(1);
      const file = await env.USAGE_ARCHIVE.get(objects[0]?.key ?? "");
      const rows = await decodeUsageEventsParquet(await (file as R2ObjectBody).arrayBuffer());
      expect(rows.map((row) => row.eventId).sort()).toEqual(events.map((e) => e.eventId).sort());
      expect(rows.reduce((sum, row) => sum + row.amount, 0)).toBe((30 * 31) / 2);
      for (const event of events) {
        expect((await findUsageEvent(env, tenantId, event.eventId)).amount).toBe(event.amount);
      }
      expect((await storeUsageEvents(env, tenantId, events)).size).toBe(0);
    },
  );
});

describe("usage log: the archived-id index (an 8-byte hash and the file, one table per day)", () => {
  it("neither refuses nor double counts a different eventId with the same hash", async () => {
    const tenantId = await insertTenant();
    // Every eventId hashes alike: each archived id is a hash hit for every other.
    const sameHash: EventIdHash = () => [-7, 42];
    await useStore(tenantId, sameHash);
    const first = incoming({ amount: 3 });
    await storeAndArchive(tenantId, [first], 2);
    const [second, third] = [incoming({ amount: 5 }), incoming({ amount: 7 })];
    // A hash hit on the first's file: read, it does not hold these, so they are new.
    expect([...(await storeUsageEvents(env, tenantId, [second, third, first]))].sort()).toEqual(
      [second.eventId, third.eventId].sort(),
    );
    await aggregateAll(tenantId, 0);
    await age(tenantId, 0, 2);
    expect(await archive(tenantId, 0)).toMatchObject({ files: 1, events: 2 });
    // The day's table keeps the first; the others, sharing its hash, are indexed by full id.
    const index = await inUsageLog(tenantId, 0, (sql) => ({
      rows: sql
        .exec<{ n: number }>(
          `SELECT count(*) AS n FROM ${dayTableName(utcDay(Date.now() - 2 * HOUR))}`,
        )
        .one().n,
      collisions: sql
        .exec<{ event_id: string }>("SELECT event_id FROM id_collisions ORDER BY event_id")
        .toArray()
        .map((row) => row.event_id),
    }));
    expect(index).toEqual({ rows: 1, collisions: [second.eventId, third.eventId].sort() });
    // Every resend is refused, and each event is found with its own body.
    expect((await storeUsageEvents(env, tenantId, [first, second, third])).size).toBe(0);
    for (const event of [first, second, third]) {
      const found = await findUsageEvent(env, tenantId, event.eventId);
      expect(found).toMatchObject({
        eventId: event.eventId,
        amount: event.amount,
        status: "AGGREGATED",
      });
    }
    await expect(findUsageEvent(env, tenantId, crypto.randomUUID())).rejects.toThrow(
      "Usage event not found",
    );
    // Counted once each: one row per event across the archive files.
    const rows = [];
    for (const object of await archiveObjects(tenantId)) {
      const file = (await env.USAGE_ARCHIVE.get(object.key)) as R2ObjectBody;
      rows.push(...(await decodeUsageEventsParquet(await file.arrayBuffer())));
    }
    expect(rows.map((row) => row.eventId).sort()).toEqual(
      [first, second, third].map((event) => event.eventId).sort(),
    );
    expect(rows.reduce((sum, row) => sum + row.amount, 0)).toBe(15);
    await useStore(tenantId);
  });

  it("refuses duplicates across day tables and the archive boundary, and drops a day past retention", async () => {
    const tenantId = await insertTenant();
    const twoDaysAgo = Array.from({ length: 4 }, () => incoming());
    await storeAndArchive(tenantId, twoDaysAgo, 50);
    const today = Array.from({ length: 3 }, () => incoming());
    await storeAndArchive(tenantId, today, 2);
    const hot = Array.from({ length: 2 }, () => incoming());
    expect((await storeUsageEvents(env, tenantId, hot)).size).toBe(2);
    const oldDay = utcDay(Date.now() - 50 * HOUR);
    const newDay = utcDay(Date.now() - 2 * HOUR);
    expect(await dayTables(tenantId)).toEqual([dayTableName(oldDay), dayTableName(newDay)]);
    // One batch touching both day tables and the hot log: every repeat refused, the new one taken.
    const fresh = incoming();
    const again = await storeUsageEvents(env, tenantId, [
      twoDaysAgo[0],
      today[1],
      hot[0],
      fresh,
      twoDaysAgo[3],
    ] as ReturnType<typeof incoming>[]);
    expect([...again]).toEqual([fresh.eventId]);
    // Found from either day's file and from the hot log.
    for (const event of [twoDaysAgo[2], today[0], hot[1]]) {
      expect((await findUsageEvent(env, tenantId, event?.eventId ?? "")).eventId).toBe(
        event?.eventId,
      );
    }

    // Retention is 35 days: a day's table goes whole once the day is past it.
    const log = usageLogObject(tenantId, 0);
    const dayAfterOld = Date.parse(`${oldDay}T00:00:00.000Z`) + 24 * HOUR;
    expect(await log.prune(dayAfterOld + 35 * 24 * HOUR - 1)).toBe(0);
    expect(await log.prune(dayAfterOld + 35 * 24 * HOUR)).toBe(4);
    expect(await dayTables(tenantId)).toEqual([dayTableName(newDay)]);
    await expect(findUsageEvent(env, tenantId, twoDaysAgo[1]?.eventId ?? "")).rejects.toThrow(
      "Usage event not found",
    );
    // Forgotten: accepted as new (validation then judges its timestamp); the younger day still refuses.
    const resent = await storeUsageEvents(env, tenantId, [twoDaysAgo[1], today[2]] as ReturnType<
      typeof incoming
    >[]);
    expect([...resent]).toEqual([twoDaysAgo[1]?.eventId]);
  });

  it("still reads the index of earlier releases (one row per eventId) until it ages out", async () => {
    const tenantId = await insertTenant();
    const archived = Array.from({ length: 3 }, () => incoming());
    await storeAndArchive(tenantId, archived, 2);
    const hot = incoming();
    expect((await storeUsageEvents(env, tenantId, [hot])).size).toBe(1);
    // The state an earlier release left: its `event_ids` table, no day tables.
    const receivedMs = Date.now() - 2 * HOUR;
    await inUsageLog(tenantId, 0, (sql) => {
      sql.exec(`CREATE TABLE event_ids (
        event_id TEXT PRIMARY KEY, id TEXT NOT NULL, received_ms INTEGER NOT NULL, file_id INTEGER
      ) WITHOUT ROWID`);
      sql.exec("CREATE INDEX event_ids_received_idx ON event_ids (received_ms)");
      const fileId = sql.exec<{ id: number }>("SELECT id FROM files").one().id;
      for (const event of archived) {
        sql.exec(
          "INSERT INTO event_ids VALUES (?, ?, ?, ?)",
          event.eventId,
          crypto.randomUUID(),
          receivedMs,
          fileId,
        );
      }
      const hotId = sql.exec<{ id: string }>("SELECT id FROM events").one().id;
      sql.exec("INSERT INTO event_ids VALUES (?, ?, ?, NULL)", hot.eventId, hotId, Date.now());
      for (const table of sql
        .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE name GLOB 'event_ids_[0-9]*'")
        .toArray()) {
        sql.exec(`DROP TABLE ${table.name}`);
      }
    });
    await useStore(tenantId);
    // Refused and found through the former index.
    expect((await storeUsageEvents(env, tenantId, [...archived, hot])).size).toBe(0);
    expect((await findUsageEvent(env, tenantId, archived[1]?.eventId ?? "")).eventId).toBe(
      archived[1]?.eventId,
    );
    // Past retention its rows go (the hot one stays while its event is hot), then the table.
    const log = usageLogObject(tenantId, 0);
    expect(await log.prune(Date.now() + 36 * 24 * HOUR)).toBe(3);
    expect((await storeUsageEvents(env, tenantId, [hot])).size).toBe(0);
    await aggregateAll(tenantId, 0);
    await age(tenantId, 0, 2);
    await archive(tenantId, 0);
    expect(await log.prune(Date.now() + 36 * 24 * HOUR)).toBe(2);
    const legacy = await inUsageLog(tenantId, 0, (sql) =>
      sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'event_ids'").toArray(),
    );
    expect(legacy).toHaveLength(0);
  });
});
