import {
  type ArchivePart,
  archiveCandidates,
  dayHasUnfinishedEvents,
  deletePartRows,
  eventIdsStillInD1,
  eventsForNextPart,
  markPartDeleted,
  nextPartNumber,
  recordUploadedPart,
  uploadedParts,
} from "../db/usage-archive.ts";
import {
  archiveHorizon,
  archiveObjectKey,
  dayBounds,
  retentionDays,
  toNdjson,
} from "../domain/usage-archive.ts";
import { usageArchiveIndex } from "../durable-objects/usage-archive-index.ts";

/** Events per archive object. */
export const ARCHIVE_PART_EVENTS = 10_000;
/** Parts written (or finished) per run: bounded work per Cron Trigger. */
const ARCHIVE_MAX_PARTS_PER_RUN = 10;
/** Rows per DELETE statement. */
const DELETE_BATCH = 1_000;
/** Oldest events looked at to find the tenant days to archive. */
const CANDIDATE_SCAN = 5_000;

export interface UsageArchiveReport {
  /** Parts uploaded by this run. */
  uploaded: number;
  /** Parts whose rows this run deleted from D1 (new ones and ones a crashed run left). */
  finished: number;
  events: number;
  deleted: number;
  /** Tenant days passed over because an event of theirs is still unfinished. */
  skippedDays: number;
}

export interface UsageArchiveOptions {
  partEvents?: number;
  maxParts?: number;
  /** Tests: fail at a step, as a crash there would. */
  crashAfter?: "upload" | "record" | "index";
}

type ArchiveEnv = Pick<
  Env,
  "DB" | "USAGE_ARCHIVE" | "USAGE_ARCHIVE_INDEX" | "USAGE_RETENTION_DAYS"
>;

async function gzip(text: string): Promise<Uint8Array> {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/**
 * The archive job (Cron Trigger): moves the raw event log past the
 * retention window from D1 to R2, per tenant and UTC day, in parts of at
 * most ARCHIVE_PART_EVENTS events. Each part:
 *   1. upload the gzip NDJSON object under a key derived from (tenant, day,
 *      part number); the part number is the count of parts recorded, so a
 *      run that died before step 2 cuts the same part again and overwrites
 *      the same object;
 *   2. record it in usage_archive_parts (UPLOADED, with its first and last id);
 *   3. index its eventIds in the tenant's UsageArchiveIndex (an upsert);
 *   4. delete its rows from D1 in batches, then mark it DELETED.
 * A run first finishes the parts a crashed run left UPLOADED (steps 3-4).
 * A day is archived only when every one of its events is finished.
 * Nothing is lost (rows leave D1 only after their object and index entry
 * exist) and nothing is archived twice (same key, same rows).
 */
export async function runUsageArchive(
  env: ArchiveEnv,
  now: Date,
  options: UsageArchiveOptions = {},
): Promise<UsageArchiveReport> {
  const partEvents = options.partEvents ?? ARCHIVE_PART_EVENTS;
  const maxParts = options.maxParts ?? ARCHIVE_MAX_PARTS_PER_RUN;
  const report: UsageArchiveReport = {
    uploaded: 0,
    finished: 0,
    events: 0,
    deleted: 0,
    skippedDays: 0,
  };
  let budget = maxParts;

  for (const part of await uploadedParts(env.DB, budget)) {
    report.deleted += await finishPart(env, part, options, now);
    report.finished++;
    budget--;
  }

  const horizon = archiveHorizon(now.getTime(), retentionDays(env.USAGE_RETENTION_DAYS));
  for (const { tenantId, day } of await archiveCandidates(env.DB, horizon, CANDIDATE_SCAN)) {
    if (budget <= 0) break;
    const bounds = dayBounds(day);
    if (await dayHasUnfinishedEvents(env.DB, tenantId, bounds)) {
      report.skippedDays++;
      continue;
    }
    while (budget > 0) {
      const events = await eventsForNextPart(env.DB, tenantId, bounds, partEvents);
      const first = events[0];
      const last = events.at(-1);
      if (!first || !last) break;
      const number = await nextPartNumber(env.DB, tenantId, day);
      const key = archiveObjectKey(tenantId, day, number);
      const body = await gzip(toNdjson(events));
      await env.USAGE_ARCHIVE.put(key, body, {
        httpMetadata: { contentType: "application/x-ndjson", contentEncoding: "gzip" },
        customMetadata: { tenantId, day, part: String(number), events: String(events.length) },
      });
      if (options.crashAfter === "upload") throw new Error("injected crash after the upload");
      const part: ArchivePart = {
        key,
        tenantId,
        day,
        part: number,
        eventCount: events.length,
        firstId: first.id,
        lastId: last.id,
        bytes: body.byteLength,
        status: "UPLOADED",
        deletedAt: null,
      };
      await recordUploadedPart(env.DB, part);
      if (options.crashAfter === "record") throw new Error("injected crash after the record");
      report.uploaded++;
      report.events += events.length;
      report.deleted += await finishPart(env, part, options, now);
      report.finished++;
      budget--;
      if (events.length < partEvents) break;
    }
  }
  if (report.uploaded + report.finished + report.skippedDays > 0) {
    console.log(JSON.stringify({ level: "info", msg: "usage archive", ...report }));
  }
  return report;
}

/** Steps 3 and 4 for one part: index what is still in D1, delete it, mark the part. */
async function finishPart(
  env: ArchiveEnv,
  part: ArchivePart,
  options: UsageArchiveOptions,
  now: Date,
): Promise<number> {
  const bounds = dayBounds(part.day);
  const remaining = await eventIdsStillInD1(env.DB, part, bounds);
  if (remaining.length > 0) {
    await usageArchiveIndex(env.USAGE_ARCHIVE_INDEX, part.tenantId).add(part.key, remaining);
  }
  if (options.crashAfter === "index") throw new Error("injected crash after the index");
  let deleted = 0;
  for (;;) {
    const changes = await deletePartRows(env.DB, part, bounds, DELETE_BATCH);
    deleted += changes;
    if (changes < DELETE_BATCH) break;
  }
  await markPartDeleted(env.DB, part.key, now.toISOString());
  return deleted;
}
