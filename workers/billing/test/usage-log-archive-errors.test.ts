import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { tenantArchivePrefix } from "../src/usage/log/archive-layout.ts";
import { decodeUsageEventsParquet } from "../src/usage/log/parquet.ts";
import { findUsageEvent, listUsageEvents, storeUsageEvents } from "../src/usage/log/service.ts";
import type { UsageLog } from "../src/usage/log/usage-log.ts";
import { insertTenant } from "./entitlement-fixtures.ts";
import { ARCHIVE_AT, finishAll, HOUR, incoming, usageLogObject } from "./usage-log-helpers.ts";

/*
 * The usage log's alarm when archiving fails: R2 refusing the put backs
 * the archive off while the rest of the alarm goes on; a file that cannot
 * be encoded is set aside with its reason, its events kept.
 */

const DAY = 24 * HOUR;

/** Sets the shard's finished events as received `hoursAgo` and settled, so that its alarm archives them now. */
function archivableNow(sql: SqlStorage, hoursAgo: number, eventIds?: string[]) {
  const receivedAt = new Date(Date.now() - hoursAgo * HOUR).toISOString();
  for (const row of sql.exec<{ id: string; event_id: string }>("SELECT id, event_id FROM events")) {
    if (eventIds && !eventIds.includes(row.event_id)) continue;
    sql.exec(
      "UPDATE events SET received_at = ?, finished_at = finished_at - 120000 WHERE id = ?",
      receivedAt,
      row.id,
    );
  }
}

function meta(sql: SqlStorage, key: string): string | undefined {
  return sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0]
    ?.value;
}

/** The tenant's archive files in R2 with the eventIds each holds. */
async function archivedFiles(tenantId: string) {
  const listed = await env.USAGE_ARCHIVE.list({ prefix: tenantArchivePrefix(tenantId) });
  return Promise.all(
    listed.objects.map(async (object) => {
      const body = (await env.USAGE_ARCHIVE.get(object.key)) as R2ObjectBody;
      const events = await decodeUsageEventsParquet(await body.arrayBuffer());
      return { key: object.key, eventIds: events.map((event) => event.eventId).sort() };
    }),
  );
}

/** An archive bucket whose puts fail while `failing.now`, counting them. */
function flakyArchive(bucket: R2Bucket) {
  const state = { now: true, puts: 0 };
  const archive = {
    get: (key: string) => bucket.get(key),
    list: (options?: R2ListOptions) => bucket.list(options),
    put: (...args: Parameters<R2Bucket["put"]>) => {
      state.puts++;
      if (state.now) return Promise.reject(new Error("R2 is unavailable"));
      return bucket.put(...args);
    },
  } as unknown as R2Bucket;
  return { archive, failing: state };
}

describe("usage log alarm: archive failures", () => {
  it("backs the archive off while R2 fails, still prunes, and writes the file once when R2 is back", async () => {
    const tenantId = await insertTenant();
    const old = Array.from({ length: 3 }, () => incoming());
    await storeUsageEvents(env, tenantId, old);
    await finishAll(tenantId, 0);
    const fresh = Array.from({ length: 4 }, () => incoming());
    await storeUsageEvents(env, tenantId, fresh);
    await finishAll(tenantId, 0);

    const outcome = await runInDurableObject(
      usageLogObject(tenantId, 0),
      async (instance: UsageLog, state) => {
        const sql = state.storage.sql;
        await state.storage.deleteAlarm();
        // Archived ids of a day 40 days ago: past the retention window (35 days).
        archivableNow(
          sql,
          40 * 24,
          old.map((e) => e.eventId),
        );
        expect(await instance.archiveDue({ nowMs: ARCHIVE_AT(), maxFiles: 1 })).toMatchObject({
          events: 3,
        });
        const indexedBefore = instance.stats().indexedIds;
        archivableNow(sql, 2);
        const holder = instance as unknown as { env: Env; lastPruneMs: number };
        const original = holder.env;
        const { archive, failing } = flakyArchive(original.USAGE_ARCHIVE);
        holder.env = { ...original, USAGE_ARCHIVE: archive };
        // As if the hourly prune were due.
        holder.lastPruneMs = 0;
        const retries: number[] = [];
        try {
          for (let run = 0; run < 4; run++) {
            // The time of the retry has come (the runtime would run the alarm then).
            sql.exec("UPDATE meta SET value = '0' WHERE key = 'archive_retry_at'");
            const startedMs = Date.now();
            await instance.alarm();
            const retryAt = Number(meta(sql, "archive_retry_at"));
            retries.push(retryAt - startedMs);
            expect(await state.storage.getAlarm()).toBe(retryAt);
            if (run === 0) expect(instance.stats().indexedIds).toBe(0);
          }
          const failures = meta(sql, "archive_failures");
          const hotWhileFailing = instance.stats().events;
          // Backing off, an alarm on other work leaves the archive alone.
          const putsBefore = failing.puts;
          await instance.alarm();
          const putsWhileBackingOff = failing.puts - putsBefore;

          failing.now = false;
          sql.exec("UPDATE meta SET value = '0' WHERE key = 'archive_retry_at'");
          const putsBeforeRecovery = failing.puts;
          await instance.alarm();
          return {
            indexedBefore,
            retries,
            failures,
            hotWhileFailing,
            putsWhileBackingOff,
            recoveryPuts: failing.puts - putsBeforeRecovery,
            afterRecovery: {
              failures: meta(sql, "archive_failures"),
              retryAt: meta(sql, "archive_retry_at"),
              stats: instance.stats(),
            },
          };
        } finally {
          holder.env = original;
          await state.storage.deleteAlarm();
        }
      },
    );
    expect(outcome.indexedBefore).toBe(3);
    // 5 s, doubling per failure in a row (Date.now() may move a little during the alarm).
    for (const [i, retry] of outcome.retries.entries()) {
      expect(retry).toBeGreaterThanOrEqual(5_000 * 2 ** i);
      expect(retry).toBeLessThan(5_000 * 2 ** i + 1_000);
    }
    expect(outcome.failures).toBe("4");
    expect(outcome.hotWhileFailing).toBe(4);
    expect(outcome.putsWhileBackingOff).toBe(0);
    expect(outcome.recoveryPuts).toBe(1);
    expect(outcome.afterRecovery).toMatchObject({
      failures: undefined,
      retryAt: undefined,
      stats: { events: 0, indexedIds: 4, deadLetteredFiles: 0 },
    });
    const files = await archivedFiles(tenantId);
    expect(files.map((file) => file.eventIds)).toEqual(
      expect.arrayContaining([fresh.map((e) => e.eventId).sort()]),
    );
    expect(files).toHaveLength(2);
    // The old ids are forgotten; the fresh ones are found in their file.
    await expect(findUsageEvent(env, tenantId, old[0]?.eventId ?? "")).rejects.toThrow(
      "Usage event not found",
    );
    expect((await findUsageEvent(env, tenantId, fresh[2]?.eventId ?? "")).eventId).toBe(
      fresh[2]?.eventId,
    );
  });

  it("dead-letters a file that cannot be encoded with its reason, keeps its events, and archives later files", async () => {
    const tenantId = await insertTenant();
    const first = Array.from({ length: 3 }, () => incoming());
    await storeUsageEvents(env, tenantId, first);
    await finishAll(tenantId, 0);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const later = Array.from({ length: 3 }, () => incoming());
    await storeUsageEvents(env, tenantId, later);
    await finishAll(tenantId, 0);

    const outcome = await runInDurableObject(
      usageLogObject(tenantId, 0),
      async (instance: UsageLog, state) => {
        const sql = state.storage.sql;
        const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
        await state.storage.deleteAlarm();
        archivableNow(sql, 2);
        // An amount past what a file's INT64 column takes exactly.
        sql.exec(
          "UPDATE events SET amount = 9007199254740993 WHERE event_id = ?",
          first[1]?.eventId,
        );
        const holder = instance as unknown as { env: Env };
        const original = holder.env;
        holder.env = {
          ...original,
          USAGE_ARCHIVE_FILE_EVENTS: "3",
          USAGE_ARCHIVE_FILE_SPREAD: "0",
        };
        try {
          // One file per alarm: the one that cannot be encoded, then the next.
          await instance.alarm();
          await instance.alarm();
          await instance.alarm();
          return {
            deadLetters: sql.exec("SELECT * FROM archive_dead_letters").toArray(),
            fileStatuses: sql
              .exec<{ status: string }>("SELECT status FROM files ORDER BY id")
              .toArray()
              .map((row) => row.status),
            hot: sql
              .exec<{ event_id: string }>("SELECT event_id FROM events ORDER BY event_id")
              .toArray()
              .map((row) => row.event_id),
            failures: meta(sql, "archive_failures"),
            stats: instance.stats(),
            logged: errors.mock.calls.map(([line]) => String(line)),
          };
        } finally {
          errors.mockRestore();
          holder.env = original;
          await state.storage.deleteAlarm();
        }
      },
    );
    const firstIds = first.map((e) => e.eventId).sort();
    expect(outcome.deadLetters).toEqual([
      {
        file_key: expect.stringContaining(tenantArchivePrefix(tenantId)),
        first_id: expect.any(String),
        last_id: expect.any(String),
        events: 3,
        reason: expect.stringMatching(/not a safe integer/),
        failed_ms: expect.any(Number),
      },
    ]);
    expect(outcome.fileStatuses).toEqual(["DEAD", "DONE"]);
    expect(outcome.hot).toEqual(firstIds);
    expect(outcome.failures).toBeUndefined();
    expect(outcome.stats).toMatchObject({ events: 3, deadLetteredFiles: 1 });
    const files = await archivedFiles(tenantId);
    expect(files.map((file) => file.eventIds)).toEqual([later.map((e) => e.eventId).sort()]);
    // The reason is logged, as JSON.
    const logged = outcome.logged
      .filter((line) => line.includes("cannot be encoded"))
      .map((line) => JSON.parse(line));
    expect(logged).toEqual([
      expect.objectContaining({ level: "error", events: 3, reason: expect.any(String) }),
    ]);
    // Every event is still listed, the dead-lettered ones from the hot log.
    const listed = await listUsageEvents(env, tenantId, { limit: 100 });
    expect(listed.data.map((e) => e.eventId).sort()).toEqual(
      [...firstIds, ...later.map((e) => e.eventId)].sort(),
    );

    // Past the retention window the archived events' index goes; the
    // dead-lettered ones stay, as the only copy of them.
    const log = usageLogObject(tenantId, 0);
    expect(await log.prune(Date.now() + 40 * DAY)).toBe(3);
    expect(await log.stats()).toMatchObject({ events: 3, indexedIds: 0, deadLetteredFiles: 1 });
    expect((await findUsageEvent(env, tenantId, first[1]?.eventId ?? "")).amount).toBe(2 ** 53);
  });
});
