import { findArchivePart } from "../db/usage-archive.ts";
import { type ArchivedUsageEvent, findInNdjson } from "../domain/usage-archive.ts";
import { usageArchiveIndex } from "../durable-objects/usage-archive-index.ts";

export const USAGE_ARCHIVE_BUCKET = "usage-archive";

export interface ArchivedEventFound {
  event: ArchivedUsageEvent;
  archive: { bucket: string; key: string; archivedAt: string | null };
}

export type ArchiveLookup =
  | { kind: "not_archived" }
  | ({ kind: "found" } & ArchivedEventFound)
  /** The index names a part that cannot be read now: say where it is. */
  | { kind: "unreadable"; bucket: string; key: string };

async function gunzipText(body: ReadableStream): Promise<string> {
  return new Response(body.pipeThrough(new DecompressionStream("gzip"))).text();
}

/** Finds an event that left D1 (jobs/usage-archive.ts) in its R2 archive part. */
export async function findArchivedEvent(
  env: Pick<Env, "DB" | "USAGE_ARCHIVE" | "USAGE_ARCHIVE_INDEX">,
  tenantId: string,
  eventId: string,
): Promise<ArchiveLookup> {
  const key = await usageArchiveIndex(env.USAGE_ARCHIVE_INDEX, tenantId).find(eventId);
  if (!key) return { kind: "not_archived" };
  const object = await env.USAGE_ARCHIVE.get(key);
  if (!object) return { kind: "unreadable", bucket: USAGE_ARCHIVE_BUCKET, key };
  const event = findInNdjson(await gunzipText(object.body), eventId);
  if (!event || event.tenantId !== tenantId) {
    return { kind: "unreadable", bucket: USAGE_ARCHIVE_BUCKET, key };
  }
  const part = await findArchivePart(env.DB, key);
  return {
    kind: "found",
    event,
    archive: { bucket: USAGE_ARCHIVE_BUCKET, key, archivedAt: part?.deletedAt ?? null },
  };
}
