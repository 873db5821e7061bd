import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { EventIdHash } from "../src/usage/log/event-id-hash.ts";
import { compactedTableName, dayTableName } from "../src/usage/log/id-index.ts";
import { findUsageEvent, storeUsageEvents } from "../src/usage/log/service.ts";
import type { UsageLog } from "../src/usage/log/usage-log.ts";
import { insertTenant } from "./entitlement-fixtures.ts";
import {
  dayTables,
  HOUR,
  incoming,
  inUsageLog,
  storeAndArchive,
  usageLogObject,
  useStore,
  utcDay,
} from "./usage-log-helpers.ts";

type Incoming = ReturnType<typeof incoming>;
const batch = (count: number): Incoming[] => Array.from({ length: count }, () => incoming());

/** Each segment's id count as its filter row keeps it. */
async function filterRows(tenantId: string) {
  return inUsageLog(tenantId, 0, (sql) =>
    sql
      .exec<{ segment: string; ids: number }>(
        "SELECT segment, ids FROM id_filters ORDER BY segment",
      )
      .toArray()
      .map((row) => ({ ...row })),
  );
}

describe("usage log: the archived-id index in bounded segments with filters", () => {
  it("starts a day's next segment once one is full, refuses every id across them, and keeps refusing after a restart", async () => {
    const tenantId = await insertTenant();
    await useStore(tenantId, undefined, { segmentIds: 3 });
    const files = [batch(4), batch(2), batch(3), batch(1)];
    for (const events of files) await storeAndArchive(tenantId, events, 2);
    const day = utcDay(Date.now() - 2 * HOUR);
    // 4 fill the first (it had room); 2 + 3 the second; the last starts a third.
    expect(await dayTables(tenantId)).toEqual([1, 2, 3].map((n) => dayTableName(day, n)));
    expect(await filterRows(tenantId)).toEqual([
      { segment: dayTableName(day, 1), ids: 4 },
      { segment: dayTableName(day, 2), ids: 5 },
      { segment: dayTableName(day, 3), ids: 1 },
    ]);
    const archived = files.flat();
    const fresh = incoming();
    expect([...(await storeUsageEvents(env, tenantId, [...archived, fresh]))]).toEqual([
      fresh.eventId,
    ]);

    // A new instance reads the segments and their filters back from storage.
    await useStore(tenantId);
    expect((await storeUsageEvents(env, tenantId, archived)).size).toBe(0);
    for (const events of files) {
      const event = events[0] as Incoming;
      expect(await findUsageEvent(env, tenantId, event.eventId)).toMatchObject({
        eventId: event.eventId,
        amount: event.amount,
        status: "AGGREGATED",
      });
    }

    // Past retention every segment of the day goes, with its filter.
    const log = usageLogObject(tenantId, 0);
    const dayAfter = Date.parse(`${day}T00:00:00.000Z`) + 24 * HOUR;
    expect(await log.prune(dayAfter + 35 * 24 * HOUR)).toBe(archived.length);
    expect(await dayTables(tenantId)).toEqual([]);
    expect(await filterRows(tenantId)).toEqual([]);
  });

  it("grows a segment's filter past its first size without losing an id", async () => {
    const tenantId = await insertTenant();
    // The smallest filter is sized for 512 ids: 700 make it rebuild from the segment's rows.
    const first = batch(300);
    const second = batch(400);
    await storeAndArchive(tenantId, first, 2);
    await storeAndArchive(tenantId, second, 2);
    const day = utcDay(Date.now() - 2 * HOUR);
    expect(await filterRows(tenantId)).toEqual([{ segment: dayTableName(day, 1), ids: 700 }]);
    const bytes = await inUsageLog(
      tenantId,
      0,
      (sql) => sql.exec<{ n: number }>("SELECT length(bits) AS n FROM id_filters").one().n,
    );
    expect(bytes).toBeGreaterThan(1_024);
    await useStore(tenantId);
    expect((await storeUsageEvents(env, tenantId, [...first, ...second])).size).toBe(0);
  });

  it("reads an unsegmented day table of earlier releases beside the segments", async () => {
    const tenantId = await insertTenant();
    const earlier = batch(3);
    await storeAndArchive(tenantId, earlier, 2);
    const day = utcDay(Date.now() - 2 * HOUR);
    // The state an earlier release left: one table for the day, no filter.
    const legacy = dayTableName(day).replace(/_0001$/, "");
    await inUsageLog(tenantId, 0, (sql) => {
      sql.exec(`ALTER TABLE ${dayTableName(day)} RENAME TO ${legacy}`);
      sql.exec("DELETE FROM id_filters");
    });
    await useStore(tenantId);
    expect((await storeUsageEvents(env, tenantId, earlier)).size).toBe(0);
    expect((await findUsageEvent(env, tenantId, earlier[1]?.eventId ?? "")).eventId).toBe(
      earlier[1]?.eventId,
    );
    // New files of the day go to a segment beside it.
    const later = batch(2);
    await storeAndArchive(tenantId, later, 2);
    expect(await dayTables(tenantId)).toEqual([legacy, dayTableName(day, 1)]);
    expect((await storeUsageEvents(env, tenantId, [...earlier, ...later])).size).toBe(0);
    const log = usageLogObject(tenantId, 0);
    const dayAfter = Date.parse(`${day}T00:00:00.000Z`) + 24 * HOUR;
    expect(await log.prune(dayAfter + 35 * 24 * HOUR)).toBe(5);
    expect(await dayTables(tenantId)).toEqual([]);
  });
});

describe("usage log: a past day's segments merged into one table", () => {
  it("merges them a range of hashes at a time, finds every id throughout, and takes a late file in again", async () => {
    const tenantId = await insertTenant();
    await useStore(tenantId, undefined, { segmentIds: 3, compactChunkIds: 4 });
    const pastFiles = [batch(4), batch(2), batch(3)];
    for (const events of pastFiles) await storeAndArchive(tenantId, events, 50);
    const todays = batch(2);
    await storeAndArchive(tenantId, todays, 2);
    const past = utcDay(Date.now() - 50 * HOUR);
    const today = utcDay(Date.now() - 2 * HOUR);
    const log = usageLogObject(tenantId, 0);
    const archived = [...pastFiles.flat(), ...todays];
    // Today's segments are not due; the past day's 9 ids go in 3 steps.
    const steps: boolean[] = [];
    for (;;) {
      const more = await log.compactIds(Date.now());
      steps.push(more);
      // Every id is refused and found between the steps.
      expect((await storeUsageEvents(env, tenantId, archived)).size).toBe(0);
      if (!more) break;
    }
    expect(steps).toEqual([true, true, false]);
    expect(await dayTables(tenantId)).toEqual([compactedTableName(past), dayTableName(today, 1)]);
    expect((await filterRows(tenantId)).map((row) => row.segment)).toEqual([
      dayTableName(today, 1),
    ]);
    const merged = await inUsageLog(
      tenantId,
      0,
      (sql) =>
        sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${compactedTableName(past)}`).one().n,
    );
    expect(merged).toBe(9);
    for (const events of pastFiles) {
      const event = events[1] as Incoming;
      expect((await findUsageEvent(env, tenantId, event.eventId)).eventId).toBe(event.eventId);
    }

    // A late file of that day goes to a new segment, and the next compaction takes it in.
    const late = batch(2);
    await storeAndArchive(tenantId, late, 50);
    expect(await dayTables(tenantId)).toEqual([
      dayTableName(past, 1),
      compactedTableName(past),
      dayTableName(today, 1),
    ]);
    while (await log.compactIds(Date.now()));
    expect(await dayTables(tenantId)).toEqual([compactedTableName(past), dayTableName(today, 1)]);
    expect((await storeUsageEvents(env, tenantId, [...archived, ...late])).size).toBe(0);
    // Nothing is due before a day has ended and two hours passed.
    expect(await log.compactIds(Date.parse(`${today}T00:00:00.000Z`) + 26 * HOUR - 1)).toBe(false);
    expect(await dayTables(tenantId)).toContain(dayTableName(today, 1));

    // Retention takes the merged day whole.
    const dayAfter = Date.parse(`${past}T00:00:00.000Z`) + 24 * HOUR;
    expect(await log.prune(dayAfter + 35 * 24 * HOUR)).toBe(11);
    expect(await dayTables(tenantId)).toEqual([dayTableName(today, 1)]);
  });
});

/** Counts the archive file reads of the shard's object from now on. */
async function countFileReads(tenantId: string): Promise<{ reads: number }> {
  const counter = { reads: 0 };
  await runInDurableObject(usageLogObject(tenantId, 0), (instance: UsageLog) => {
    const real = (instance as unknown as { env: Env }).env;
    const archive = real.USAGE_ARCHIVE;
    const counting = {
      get: (key: string) => {
        counter.reads++;
        return archive.get(key);
      },
      put: archive.put.bind(archive),
    } as unknown as R2Bucket;
    (instance as unknown as { env: Env }).env = { ...real, USAGE_ARCHIVE: counting };
  });
  return counter;
}

describe("usage log: an archived id's check", () => {
  it("refuses a resent archived eventId from its index row alone, and accepts a new one that shares its hash", async () => {
    const tenantId = await insertTenant();
    const archived = batch(30);
    await storeAndArchive(tenantId, archived, 2);
    const files = await countFileReads(tenantId);
    expect((await storeUsageEvents(env, tenantId, archived)).size).toBe(0);
    expect(files.reads).toBe(0);
    // Every id hashes alike: the new one hits the first's row, whose check is not its own.
    const sameHash: EventIdHash = () => [-7, 42];
    await useStore(tenantId, sameHash);
    const first = incoming();
    await storeAndArchive(tenantId, [first], 2);
    const reads = await countFileReads(tenantId);
    const fresh = incoming();
    expect([...(await storeUsageEvents(env, tenantId, [fresh, first]))]).toEqual([fresh.eventId]);
    expect(reads.reads).toBe(0);
    await useStore(tenantId);
  });

  it("confirms a hit on rows written before the check against the file, and gives older tables the column", async () => {
    const tenantId = await insertTenant();
    const archived = batch(5);
    await storeAndArchive(tenantId, archived, 2);
    const table = dayTableName(utcDay(Date.now() - 2 * HOUR));
    // The table as an earlier release left it: no check column.
    await inUsageLog(tenantId, 0, (sql) => sql.exec(`ALTER TABLE ${table} DROP COLUMN c`));
    await useStore(tenantId);
    const files = await countFileReads(tenantId);
    expect((await storeUsageEvents(env, tenantId, archived)).size).toBe(0);
    // One decision: the file read once, for all five.
    expect(files.reads).toBe(1);
    const columns = await inUsageLog(tenantId, 0, (sql) =>
      sql
        .exec<{ name: string }>("SELECT name FROM pragma_table_info(?)", table)
        .toArray()
        .map((row) => row.name),
    );
    expect(columns).toEqual(["h", "file_id", "c"]);
    const fresh = incoming();
    expect([...(await storeUsageEvents(env, tenantId, [fresh]))]).toEqual([fresh.eventId]);
    expect((await findUsageEvent(env, tenantId, archived[2]?.eventId ?? "")).eventId).toBe(
      archived[2]?.eventId,
    );
  });
});
