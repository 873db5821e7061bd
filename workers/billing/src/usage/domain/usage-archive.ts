/*
 * The usage log's retention (usage/log/): how long each tenant shard keeps
 * the eventIds it holds (the duplicate guard) and the index from an eventId
 * to the Parquet file in R2 that holds the event. The default is 35 days:
 * past the 7-day validation window (an older event can no longer be
 * accepted) and a billing period.
 */

export const DEFAULT_RETENTION_DAYS = 35;
/** Never less than the validation window (7 days) plus a day. */
export const MIN_RETENTION_DAYS = 8;

/** The configured retention in days; anything unusable falls back to the default. */
export function retentionDays(configured: string | undefined): number {
  const value = Number(configured);
  if (configured === undefined || configured.trim() === "" || !Number.isFinite(value)) {
    return DEFAULT_RETENTION_DAYS;
  }
  return Math.max(MIN_RETENTION_DAYS, Math.floor(value));
}
