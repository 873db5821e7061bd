import { fnv1a } from "@edge-platform/shared/usage-log/client";
import { retentionDays } from "../domain/usage-archive.ts";

/*
 * Where the usage log's Parquet files go in R2 and when they are written.
 *
 *   usage/tenant=<tenantId>/date=<yyyy-mm-dd>/shard-<n>-<first event id>.parquet
 *
 * `date` is the UTC day the events were received. Hive-style `key=value`
 * folders let DuckDB, R2 SQL or any Parquet reader prune by tenant and day.
 * A file holds the finished events of one shard and one day, in id order
 * (the order they were received); its name comes from its first event, so
 * writing it again overwrites the same object.
 */

export const ARCHIVE_PREFIX = "usage";
/** Finished events per file when they come faster than an hour. */
export const DEFAULT_ARCHIVE_FILE_EVENTS = 10_000;
/**
 * A finished event stays hot this long before it may be archived (unless
 * `USAGE_ARCHIVE_SETTLE_SECONDS` says otherwise): a counter flush retried
 * after it finished its events finds them here.
 */
export const ARCHIVE_SETTLE_MS = 60_000;
/**
 * A file holds between (1 - spread) and all of USAGE_ARCHIVE_FILE_EVENTS,
 * picked per file from its first event's id, unless
 * `USAGE_ARCHIVE_FILE_SPREAD` says otherwise. Tenants that ingest at one
 * rate would otherwise fill their files at the same moment and every shard
 * would encode and write at once (each closed hour lines them up again);
 * sizes that differ make each shard's files come due at its own moments.
 */
export const DEFAULT_ARCHIVE_FILE_SPREAD = 0.5;

export function tenantArchivePrefix(tenantId: string): string {
  return `${ARCHIVE_PREFIX}/tenant=${tenantId}/`;
}

export function archiveFileKey(
  tenantId: string,
  day: string,
  shard: number,
  firstId: string,
): string {
  return `${tenantArchivePrefix(tenantId)}date=${day}/shard-${shard}-${firstId}.parquet`;
}

export function hourStartMs(nowMs: number): number {
  return Math.floor(nowMs / 3_600_000) * 3_600_000;
}

export interface ArchiveSettings {
  /** The most events a file holds. */
  fileEvents: number;
  /** The share of `fileEvents` by which a file may be smaller (0 to 0.9). */
  fileSpread: number;
  settleMs: number;
  retentionDays: number;
}

export function archiveSettings(
  env: Pick<
    Env,
    | "USAGE_ARCHIVE_FILE_EVENTS"
    | "USAGE_ARCHIVE_FILE_SPREAD"
    | "USAGE_ARCHIVE_SETTLE_SECONDS"
    | "USAGE_RETENTION_DAYS"
  >,
): ArchiveSettings {
  const configured = Number(env.USAGE_ARCHIVE_FILE_EVENTS);
  const spread =
    env.USAGE_ARCHIVE_FILE_SPREAD === undefined
      ? Number.NaN
      : Number(env.USAGE_ARCHIVE_FILE_SPREAD);
  const settleSeconds = Number(env.USAGE_ARCHIVE_SETTLE_SECONDS);
  return {
    fileEvents:
      Number.isFinite(configured) && configured >= 1
        ? Math.min(100_000, Math.floor(configured))
        : DEFAULT_ARCHIVE_FILE_EVENTS,
    fileSpread:
      Number.isFinite(spread) && spread >= 0 ? Math.min(0.9, spread) : DEFAULT_ARCHIVE_FILE_SPREAD,
    settleMs:
      Number.isFinite(settleSeconds) && settleSeconds >= 1
        ? Math.min(3_600, Math.floor(settleSeconds)) * 1_000
        : ARCHIVE_SETTLE_MS,
    retentionDays: retentionDays(env.USAGE_RETENTION_DAYS),
  };
}

/**
 * How many events the file that starts at `firstId` holds when full: from
 * fileEvents x (1 - fileSpread) to fileEvents, spread evenly by the id's
 * FNV-1a hash (the same id gives the same size, so a file written again is
 * the same file).
 */
export function fileTarget(settings: ArchiveSettings, firstId: string): number {
  const unit = fnv1a(firstId) / 2 ** 32;
  const smaller = Math.floor(settings.fileEvents * settings.fileSpread * unit);
  return Math.max(1, settings.fileEvents - smaller);
}
