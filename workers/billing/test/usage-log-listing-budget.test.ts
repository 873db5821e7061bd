import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { listUsageEvents, storeUsageEvents } from "../src/usage/log/service.ts";
import type { UsageLog } from "../src/usage/log/usage-log.ts";
import { insertTenant } from "./entitlement-fixtures.ts";
import { call } from "./helpers.ts";
import {
  ARCHIVE_AT,
  age,
  customer,
  EVENTS,
  finishAll,
  HOUR,
  incoming,
  usageLogObject,
  withShards,
} from "./usage-log-helpers.ts";

/*
 * GET /usage/events reads at most USAGE_LIST_MAX_FILES archive files per
 * request: a page cut short by it holds what was found so far, and its
 * cursor goes on from there.
 */

const at = (ms: number) => new Date(ms).toISOString();
type ListEnv = Parameters<typeof listUsageEvents>[0];
type Query = Omit<Parameters<typeof listUsageEvents>[2], "cursor">;
type Page = Awaited<ReturnType<typeof listUsageEvents>>;

/** Finishes a shard's events and archives all of them in files of `fileEvents`, received 3 hours ago. */
async function archiveAll(tenantId: string, shard: number, fileEvents: number) {
  await finishAll(tenantId, shard);
  await age(tenantId, shard, 3);
  return runInDurableObject(usageLogObject(tenantId, shard), async (instance: UsageLog) => {
    const holder = instance as unknown as { env: Env };
    const original = holder.env;
    holder.env = {
      ...original,
      USAGE_ARCHIVE_FILE_EVENTS: String(fileEvents),
      USAGE_ARCHIVE_FILE_SPREAD: "0",
    };
    try {
      return (await instance.archiveDue({ nowMs: ARCHIVE_AT() })).files;
    } finally {
      holder.env = original;
    }
  });
}

/** The env with a budget of archive files per request, counting the files each request reads. */
function budgeted(base: ListEnv, maxFiles: number) {
  const reads = { count: 0 };
  const archive = {
    get: (key: string) => {
      reads.count++;
      return env.USAGE_ARCHIVE.get(key);
    },
  } as unknown as R2Bucket;
  return {
    listEnv: { ...base, USAGE_ARCHIVE: archive, USAGE_LIST_MAX_FILES: String(maxFiles) },
    reads,
  };
}

/** Follows the cursor to the end; each page with the files its request read. */
async function follow(base: ListEnv, maxFiles: number, tenantId: string, query: Query) {
  const { listEnv, reads } = budgeted(base, maxFiles);
  const pages: { page: Page; files: number }[] = [];
  let cursor: string | undefined;
  do {
    reads.count = 0;
    const page = await listUsageEvents(listEnv, tenantId, {
      ...query,
      ...(cursor ? { cursor } : {}),
    });
    expect(page.data.length).toBeLessThanOrEqual(query.limit);
    pages.push({ page, files: reads.count });
    cursor = page.meta.nextCursor ?? undefined;
    expect(pages.length).toBeLessThan(500);
  } while (cursor);
  return pages;
}

const eventIds = (events: { eventId: string }[]) => events.map((event) => event.eventId);

describe("GET /usage/events: bounded archive reads per request", () => {
  it("finds one matching event among 200 archive files, reading no more files per request than the budget", async () => {
    const { key, tenantId } = await customer();
    const base = Date.now() - 6 * HOUR;
    const events = Array.from({ length: 200 }, (_, i) =>
      incoming({ feature: i === 137 ? "storage" : "api_calls", timestamp: at(base + i * 1000) }),
    );
    expect((await call(EVENTS, { token: key, body: events })).status).toBe(202);
    expect(await archiveAll(tenantId, 0, 1)).toBe(200);

    const pages = await follow(env, 5, tenantId, { limit: 10, feature: "storage" });
    expect(Math.max(...pages.map((p) => p.files))).toBe(5);
    expect(pages.flatMap((p) => eventIds(p.page.data))).toEqual([events[137]?.eventId]);
    // The files are read once over the whole listing, five a request.
    expect(pages).toHaveLength(40);
    expect(pages.reduce((sum, p) => sum + p.files, 0)).toBe(200);
    // A page cut short by the budget may hold nothing and still give a cursor.
    expect(pages[0]?.page).toEqual({ data: [], meta: { nextCursor: expect.any(String) } });

    // Through the API, with the configured budget: a client following the cursor finds it.
    const found: string[] = [];
    let requests = 0;
    let cursor: string | null = null;
    do {
      const query = `${EVENTS}?feature=storage&limit=10${cursor ? `&cursor=${cursor}` : ""}`;
      const response: { status: number; body: Page } = await call(query, { token: key });
      expect(response.status).toBe(200);
      found.push(...eventIds(response.body.data));
      cursor = response.body.meta.nextCursor;
      requests++;
    } while (cursor);
    expect(found).toEqual([events[137]?.eventId]);
    expect(requests).toBe(Math.ceil(200 / Number(env.USAGE_LIST_MAX_FILES)));
  });

  it("lists every event once and in order when the budget cuts pages short, across shards and overlapping files", async () => {
    const tenantId = await insertTenant();
    const sharded = withShards(tenantId, 2);
    const base = Date.now() - 6 * HOUR;
    // One batch: ids within it are not in the order of the times, so files
    // of three events (in id order) span times that overlap one another.
    const events = Array.from({ length: 90 }, (_, i) =>
      incoming({
        feature: i % 10 === 3 ? "storage" : "api_calls",
        timestamp: at(base + Math.floor(i / 2) * 1000),
      }),
    );
    expect((await storeUsageEvents(sharded, tenantId, events)).size).toBe(90);
    let files = 0;
    for (const shard of [0, 1]) files += await archiveAll(tenantId, shard, 3);
    expect(files).toBeGreaterThanOrEqual(28);
    // A few stay hot, among the archived ones' times.
    const hot = Array.from({ length: 6 }, (_, i) =>
      incoming({ timestamp: at(base + i * 13_000 + 500) }),
    );
    expect((await storeUsageEvents(sharded, tenantId, hot)).size).toBe(6);

    const unbounded = { ...sharded, USAGE_LIST_MAX_FILES: "1000" };
    const all = (await listUsageEvents(unbounded, tenantId, { limit: 1000 })).data;
    expect(all).toHaveLength(96);
    const positions = all.map((e) => `${e.timestamp}|${e.id}`);
    expect(positions).toEqual([...positions].sort());
    for (const [maxFiles, query] of [
      [2, { limit: 7 }],
      [4, { limit: 5, feature: "storage" }],
      [1, { limit: 3, from: all[40]?.timestamp as string }],
    ] as const) {
      const pages = await follow(sharded, maxFiles, tenantId, query);
      const expected = all.filter(
        (e) =>
          (!("feature" in query) || e.feature === query.feature) &&
          (!("from" in query) || e.timestamp >= query.from),
      );
      expect(eventIds(pages.flatMap((p) => p.page.data))).toEqual(eventIds(expected));
      expect(pages.some((p) => p.page.data.length < query.limit && p.page.meta.nextCursor)).toBe(
        true,
      );
    }
  });
});
