import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { tenantArchivePrefix } from "../src/usage/log/archive-layout.ts";
import { HOT_PAGE_SQL } from "../src/usage/log/listing.ts";
import { listUsageEvents, storeUsageEvents } from "../src/usage/log/service.ts";
import { UsageLogStore } from "../src/usage/log/storage.ts";
import type { UsageLog } from "../src/usage/log/usage-log.ts";
import { insertTenant } from "./entitlement-fixtures.ts";
import { call, expectError } from "./helpers.ts";
import {
  ARCHIVE_AT,
  age,
  aggregateAll,
  customer,
  EVENTS,
  HOUR,
  incoming,
  inUsageLog,
  usageLogObject,
  withShards,
} from "./usage-log-helpers.ts";

const MINUTE = 60_000;
const at = (ms: number) => new Date(ms).toISOString();

interface Listed {
  id: string;
  eventId: string;
  timestamp: string;
  receivedAt: string;
  status: string;
}

type Page = { data: Listed[]; meta: { nextCursor: string | null } };

const eventIds = (events: { eventId: string }[]) => events.map((event) => event.eventId);

/** Sent events in the listing's order (their timestamps are distinct here). */
const byTime = <T extends { timestamp: string }>(events: T[]) =>
  [...events].sort((a, b) => a.timestamp.localeCompare(b.timestamp));

/** Finishes a shard's hot events and archives them, as received `hoursAgo` hours ago. */
async function archiveHot(tenantId: string, shard: number, hoursAgo: number, fileEvents?: number) {
  await aggregateAll(tenantId, shard);
  await age(tenantId, shard, hoursAgo);
  return archiveInFiles(tenantId, shard, fileEvents);
}

/** Archives everything a shard may archive, in files of at most `fileEvents` events when given. */
function archiveInFiles(tenantId: string, shard: number, fileEvents?: number) {
  return runInDurableObject(usageLogObject(tenantId, shard), async (instance: UsageLog) => {
    const holder = instance as unknown as { env: Env };
    const original = holder.env;
    if (fileEvents)
      holder.env = {
        ...original,
        USAGE_ARCHIVE_FILE_EVENTS: String(fileEvents),
        USAGE_ARCHIVE_FILE_SPREAD: "0",
      };
    let files = 0;
    try {
      for (let run = 0; run < 50; run++) {
        const report = await instance.archiveDue({ nowMs: ARCHIVE_AT(), maxFiles: 1 });
        if (report.files === 0) break;
        files += report.files;
      }
    } finally {
      holder.env = original;
    }
    return files;
  });
}

/** Every page of a listing through the service, following the cursor. */
async function allPages(
  listEnv: Parameters<typeof listUsageEvents>[0],
  tenantId: string,
  query: Omit<Parameters<typeof listUsageEvents>[2], "cursor">,
): Promise<Listed[][]> {
  const pages: Listed[][] = [];
  let cursor: string | undefined;
  do {
    const page = await listUsageEvents(listEnv, tenantId, {
      ...query,
      ...(cursor ? { cursor } : {}),
    });
    expect(page.data.length).toBeLessThanOrEqual(query.limit);
    pages.push(page.data);
    cursor = page.meta.nextCursor ?? undefined;
    expect(pages.length).toBeLessThan(200);
  } while (cursor);
  return pages;
}

/** The shard's archive files as its `files` table knows them, in order of writing. */
function fileRows(tenantId: string, shard = 0) {
  return inUsageLog(tenantId, shard, (sql) =>
    sql
      .exec<{
        id: number;
        key: string;
        first_timestamp: string | null;
        last_timestamp: string | null;
      }>("SELECT id, key, first_timestamp, last_timestamp FROM files ORDER BY id")
      .toArray(),
  );
}

describe("GET /usage/events: listed by event time", () => {
  it("lists in timestamp order whatever the order of arrival, across the archive and the hot log, with filters and a cursor", async () => {
    const { owner, key, tenantId } = await customer();
    const base = Date.now() - 3 * HOUR;
    // Sent one by one, in an order other than their timestamps'.
    const older = [5, 1, 6, 0, 3, 2, 4].map((offset, i) =>
      incoming({
        feature: i % 2 === 0 ? "storage" : "api_calls",
        amount: i + 1,
        timestamp: at(base + offset * MINUTE),
      }),
    );
    for (const event of older) {
      expect((await call(EVENTS, { token: key, body: [event] })).status).toBe(202);
    }
    expect(await archiveHot(tenantId, 0, 5)).toBe(1);
    // Newer arrivals, several of them with earlier times than archived ones.
    const newer = [2.5, 0.5, 7, 3.5].map((offset, i) =>
      incoming({ amount: 100 + i, timestamp: at(base + offset * MINUTE) }),
    );
    for (const event of newer) await call(EVENTS, { token: key, body: [event] });
    const expected = byTime([...older, ...newer]);

    const all = await call(`${EVENTS}?limit=1000`, { token: key });
    expect(all.status).toBe(200);
    expect(all.body.meta).toEqual({ nextCursor: null });
    expect(eventIds(all.body.data)).toEqual(eventIds(expected));
    // Each listed event is the body GET /usage/events/{eventId} answers.
    const one = await call(`${EVENTS}/${expected[2]?.eventId}`, { token: key });
    expect(all.body.data[2]).toEqual(one.body);

    // Pages of 3, across the archive and the hot log, with a member's token.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: Page } = await call(
        `${EVENTS}?limit=3${cursor ? `&cursor=${cursor}` : ""}`,
        { token: owner.accessToken, tenant: tenantId },
      );
      expect(page.body.data.length).toBeLessThanOrEqual(3);
      seen.push(...eventIds(page.body.data));
      cursor = page.body.meta.nextCursor;
    } while (cursor);
    expect(seen).toEqual(eventIds(expected));

    const storage = await call(`${EVENTS}?feature=storage`, { token: key });
    expect(eventIds(storage.body.data)).toEqual(
      eventIds(expected.filter((e) => e.feature === "storage")),
    );
    const pending = await call(`${EVENTS}?status=PENDING`, { token: key });
    expect(eventIds(pending.body.data)).toEqual(eventIds(byTime(newer)));

    // from/to bound the event time...
    const cut = encodeURIComponent(all.body.data[3].timestamp);
    const early = await call(`${EVENTS}?to=${cut}`, { token: key });
    expect(eventIds(early.body.data)).toEqual(eventIds(expected.slice(0, 3)));
    const late = await call(`${EVENTS}?from=${cut}`, { token: key });
    expect(eventIds(late.body.data)).toEqual(eventIds(expected.slice(3)));
    // ...receivedFrom/receivedTo the time of receipt (the older ones were received 5 hours ago)...
    const hourAgo = encodeURIComponent(at(Date.now() - HOUR));
    const receivedBefore = await call(`${EVENTS}?receivedTo=${hourAgo}`, { token: key });
    expect(eventIds(receivedBefore.body.data)).toEqual(eventIds(byTime(older)));
    const receivedSince = await call(`${EVENTS}?receivedFrom=${hourAgo}`, { token: key });
    expect(eventIds(receivedSince.body.data)).toEqual(eventIds(byTime(newer)));
    // ...and all of them combine.
    const both = await call(`${EVENTS}?from=${cut}&receivedFrom=${hourAgo}`, { token: key });
    expect(eventIds(both.body.data)).toEqual(
      eventIds(expected.slice(3).filter((e) => newer.includes(e))),
    );
    const window = await call(
      `${EVENTS}?from=${encodeURIComponent(at(base + MINUTE))}&to=${encodeURIComponent(at(base + 5 * MINUTE))}&receivedTo=${hourAgo}`,
      { token: key },
    );
    expect(eventIds(window.body.data)).toEqual(
      eventIds(
        byTime(older)
          .filter((e) => e.timestamp >= at(base + MINUTE))
          .slice(0, 4),
      ),
    );
  });

  it("pages exactly through many events of the same timestamp, across shards and archive files", async () => {
    const tenantId = await insertTenant();
    const sharded = withShards(tenantId, 4);
    const tie = Date.now() - 2 * HOUR;
    const timestamps = (n: number) =>
      Array.from({ length: n }, (_, i) => at(tie + (i % 5 === 0 ? -1 : i % 7 === 0 ? 1 : 0)));
    const first = timestamps(24).map((timestamp) => incoming({ timestamp }));
    expect((await storeUsageEvents(sharded, tenantId, first)).size).toBe(24);
    // Each shard archives in files of 3, so the tie spans several files per shard.
    let files = 0;
    for (let shard = 0; shard < 4; shard++) files += await archiveHot(tenantId, shard, 3, 3);
    expect(files).toBeGreaterThan(4);
    const second = timestamps(20).map((timestamp) => incoming({ timestamp }));
    expect((await storeUsageEvents(sharded, tenantId, second)).size).toBe(20);

    const [everything] = await allPages(sharded, tenantId, { limit: 1000 });
    expect(new Set(eventIds(everything ?? []))).toEqual(new Set(eventIds([...first, ...second])));
    const positions = (everything ?? []).map((e) => `${e.timestamp}|${e.id}`);
    expect(positions).toEqual([...positions].sort());
    expect(new Set(positions).size).toBe(44);
    for (const limit of [1, 4, 7, 43, 44]) {
      const pages = await allPages(sharded, tenantId, { limit });
      expect(eventIds(pages.flat())).toEqual(eventIds(everything ?? []));
      expect(pages).toHaveLength(Math.ceil(44 / limit));
    }
  });

  it("resumes exactly when events arrive and are archived between pages", async () => {
    const tenantId = await insertTenant();
    const base = Date.now() - 2 * HOUR;
    const events = Array.from({ length: 10 }, (_, i) =>
      incoming({ timestamp: at(base + i * 1000) }),
    );
    await storeUsageEvents(env, tenantId, events);
    const firstPage = await listUsageEvents(env, tenantId, { limit: 4 });
    expect(eventIds(firstPage.data)).toEqual(eventIds(events.slice(0, 4)));
    const cursor = firstPage.meta.nextCursor as string;

    // Meanwhile: a late event older than the cursor, one at the cursor's
    // very timestamp (stored later, so after it), one later; and all of
    // them, those already listed too, move to an archive file.
    // Stored a moment later, so that their ids come after the listed ones'.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const lateOlder = incoming({ timestamp: at(base + 1500) });
    const sameTime = incoming({ timestamp: events[3]?.timestamp as string });
    const later = incoming({ timestamp: at(base + 5500) });
    await storeUsageEvents(env, tenantId, [lateOlder, sameTime, later]);
    expect(await archiveHot(tenantId, 0, 3)).toBe(1);

    const rest: Listed[] = [];
    let next: string | null = cursor;
    while (next) {
      const page: Page = await listUsageEvents(env, tenantId, { limit: 4, cursor: next });
      rest.push(...page.data);
      next = page.meta.nextCursor;
    }
    expect(eventIds(rest)).toEqual(
      eventIds([sameTime, ...events.slice(4, 6), later, ...events.slice(6)]),
    );
    // The late event is not on the following pages; a listing from the start has it.
    const again = await listUsageEvents(env, tenantId, { limit: 100 });
    const [e0, e1, e2, e3, ...fromE4] = events;
    expect(eventIds(again.data)).toEqual(
      eventIds([e0, e1, lateOlder, e2, e3, sameTime].flatMap((e) => (e ? [e] : []))).concat(
        eventIds([...fromE4.slice(0, 2), later, ...fromE4.slice(2)]),
      ),
    );
  });

  it("skips archive files by their event times, and learns the times of files written before they were kept", async () => {
    const tenantId = await insertTenant();
    const base = Date.now() - 3 * HOUR;
    const batchA = Array.from({ length: 5 }, (_, i) =>
      incoming({ timestamp: at(base + i * MINUTE) }),
    );
    await storeUsageEvents(env, tenantId, batchA);
    expect(await archiveHot(tenantId, 0, 3)).toBe(1);
    const batchB = Array.from({ length: 5 }, (_, i) =>
      incoming({ timestamp: at(base + (10 + i) * MINUTE) }),
    );
    await storeUsageEvents(env, tenantId, batchB);
    expect(await archiveHot(tenantId, 0, 3)).toBe(1);
    const [fileA, fileB] = await fileRows(tenantId);
    expect(fileA).toMatchObject({
      first_timestamp: batchA[0]?.timestamp,
      last_timestamp: batchA[4]?.timestamp,
    });
    expect(fileB).toMatchObject({
      first_timestamp: batchB[0]?.timestamp,
      last_timestamp: batchB[4]?.timestamp,
    });
    const keyA = fileA?.key as string;
    const keyB = fileB?.key as string;
    const bytes = new Map<string, ArrayBuffer>();
    for (const key of [keyA, keyB]) {
      bytes.set(key, await ((await env.USAGE_ARCHIVE.get(key)) as R2ObjectBody).arrayBuffer());
    }
    const restore = (key: string) => env.USAGE_ARCHIVE.put(key, bytes.get(key) as ArrayBuffer);

    // B gone: the first pages need only A (B starts after the events they hold)...
    await env.USAGE_ARCHIVE.delete(keyB);
    const pages = [await listUsageEvents(env, tenantId, { limit: 2 })];
    pages.push(
      await listUsageEvents(env, tenantId, {
        limit: 2,
        cursor: pages[0]?.meta.nextCursor as string,
      }),
    );
    expect(eventIds(pages.flatMap((page) => page.data))).toEqual(eventIds(batchA.slice(0, 4)));
    // ...and the one that goes past A reads B.
    await expect(
      listUsageEvents(env, tenantId, { limit: 2, cursor: pages[1]?.meta.nextCursor as string }),
    ).rejects.toThrow(/cannot be read/);
    await restore(keyB);
    // A gone: a page after A's times does not read it.
    await env.USAGE_ARCHIVE.delete(keyA);
    const fromB = { limit: 10, from: batchB[0]?.timestamp as string };
    expect(eventIds((await listUsageEvents(env, tenantId, fromB)).data)).toEqual(eventIds(batchB));
    await restore(keyA);

    // Files finished by earlier code have no times: read whenever a page may need them...
    await inUsageLog(tenantId, 0, (sql) => {
      sql.exec("UPDATE files SET first_timestamp = NULL, last_timestamp = NULL");
    });
    expect(eventIds((await listUsageEvents(env, tenantId, fromB)).data)).toEqual(eventIds(batchB));
    // ...which records their times, so later pages skip them again.
    expect(await fileRows(tenantId)).toEqual([fileA, fileB]);
    await env.USAGE_ARCHIVE.delete(keyA);
    expect(eventIds((await listUsageEvents(env, tenantId, fromB)).data)).toEqual(eventIds(batchB));
    await restore(keyA);
  });

  it("gives an object of an earlier release the files' time columns and the index, which serves the page", async () => {
    const tenantId = await insertTenant();
    await storeUsageEvents(env, tenantId, [incoming()]);
    const state = await inUsageLog(tenantId, 0, (sql) => {
      // The storage an earlier release left: no index on timestamp, no time columns on files.
      sql.exec("DROP INDEX events_timestamp_idx");
      sql.exec("ALTER TABLE files DROP COLUMN first_timestamp");
      sql.exec("ALTER TABLE files DROP COLUMN last_timestamp");
      new UsageLogStore(sql);
      const columns = sql
        .exec<{ name: string }>("SELECT name FROM pragma_table_info('files')")
        .toArray()
        .map((row) => row.name);
      const plan = sql
        .exec<{ detail: string }>(
          `EXPLAIN QUERY PLAN ${HOT_PAGE_SQL}`,
          ...["2026-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", "", ""],
          ...["0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", null, null, null, null, 101],
        )
        .toArray()
        .map((row) => row.detail);
      return { columns, plan };
    });
    expect(state.columns).toEqual(expect.arrayContaining(["first_timestamp", "last_timestamp"]));
    expect(state.plan.join("\n")).toContain("events_timestamp_idx");
    // Read in the index's order: no sort of the matching rows.
    expect(state.plan.join("\n")).not.toContain("TEMP B-TREE");
    expect((await listUsageEvents(env, tenantId, { limit: 10 })).data).toHaveLength(1);
  });

  it("validates its query and keeps tenants apart", async () => {
    const one = await customer();
    const other = await customer();
    await call(EVENTS, { token: one.key, body: [incoming()] });
    expect((await call(EVENTS, { token: other.key })).body).toEqual({
      data: [],
      meta: { nextCursor: null },
    });
    expectError(await call(`${EVENTS}?limit=1001`, { token: one.key }), 400);
    expectError(await call(`${EVENTS}?limit=0`, { token: one.key }), 400);
    expectError(await call(`${EVENTS}?status=LOST`, { token: one.key }), 400);
    expectError(await call(`${EVENTS}?from=yesterday`, { token: one.key }), 400);
    expectError(await call(`${EVENTS}?receivedFrom=yesterday`, { token: one.key }), 400);
    expectError(await call(`${EVENTS}?receivedTo=2026-11-01`, { token: one.key }), 400);
    expectError(await call(`${EVENTS}?cursor=nonsense`, { token: one.key }), 400);
    // A cursor of the listing in order of receipt names no position in event time.
    const receiptCursor = btoa(`v1:${crypto.randomUUID()}`).replace(/=+$/, "");
    expectError(
      await call(`${EVENTS}?cursor=${encodeURIComponent(receiptCursor)}`, { token: one.key }),
      400,
      /order of receipt/,
    );
    expectError(await call(`${EVENTS}?colour=red`, { token: one.key }), 400);
    expectError(await call(EVENTS), 401);
  });
});

describe("usage archive files: event times", () => {
  it("keeps each file's earliest and latest event time", async () => {
    const tenantId = await insertTenant();
    const base = Date.now() - 2 * HOUR;
    const offsets = [7, 2, 9, 4, 1, 8];
    await storeUsageEvents(
      env,
      tenantId,
      offsets.map((offset) => incoming({ timestamp: at(base + offset * 1000) })),
    );
    // Files of 3 in id order (order of receipt): each has the range of its own events.
    const inIdOrder = await inUsageLog(tenantId, 0, (sql) =>
      sql
        .exec<{ timestamp: string }>("SELECT timestamp FROM events ORDER BY id")
        .toArray()
        .map((row) => row.timestamp),
    );
    const rangeOf = (times: string[]) => [[...times].sort()[0], [...times].sort().at(-1)];
    expect(await archiveHot(tenantId, 0, 3, 3)).toBe(2);
    expect(
      (await fileRows(tenantId)).map((file) => [file.first_timestamp, file.last_timestamp]),
    ).toEqual([rangeOf(inIdOrder.slice(0, 3)), rangeOf(inIdOrder.slice(3))]);
    const objects = await env.USAGE_ARCHIVE.list({ prefix: tenantArchivePrefix(tenantId) });
    expect(objects.objects).toHaveLength(2);
    expect(
      (await listUsageEvents(env, tenantId, { limit: 100 })).data.map((e) => e.timestamp),
    ).toEqual([...offsets].sort((a, b) => a - b).map((offset) => at(base + offset * 1000)));
  });
});
