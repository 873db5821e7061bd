/*
 * The event ids the counter has recorded (`recorded_events`), remembered
 * for USAGE_COUNTER_ID_RETENTION_SECONDS so that a redelivered event is
 * told apart as a duplicate without a round trip. A fast path only: the
 * flush's claim in the usage log is what counts an event once.
 */

/**
 * Remembered event ids forgotten per alarm at most: every alarm forgets
 * what expired since the last one (one id per recorded event), so the
 * memory stays at its window however busy the tenant, and no alarm holds
 * the object long.
 */
export const RECORDED_PRUNE_BATCH = 20_000;

export class RecordedEventIds {
  constructor(private readonly sql: SqlStorage) {}

  /**
   * Remembers the ids and answers those that were new, in one statement:
   * a statement per event cost more than the rest of the pipeline's work
   * on the event.
   */
  remember(eventIds: readonly string[], nowMs: number): Set<string> {
    return new Set(
      this.sql
        .exec<{ event_id: string }>(
          `INSERT INTO recorded_events (event_id, recorded_at)
           SELECT value, ? FROM json_each(?) WHERE true
           ON CONFLICT (event_id) DO NOTHING
           RETURNING event_id`,
          nowMs,
          JSON.stringify(eventIds),
        )
        .toArray()
        .map((row) => row.event_id),
    );
  }

  /**
   * Forgets event ids recorded `retentionMs` or longer before `nowMs`,
   * except those of events a flush has not settled yet (forgetting one of
   * those would let a repeat add its units to `used` a second time while
   * its pending row stays single). Ids are inserted in time order, so their
   * rowids are too: the sweep walks only the expired ones, from the oldest,
   * whatever the size of the memory. Answers how many it forgot.
   */
  forgetExpired(nowMs: number, retentionMs: number): number {
    return this.sql.exec(
      `DELETE FROM recorded_events WHERE rowid IN (
         SELECT rowid FROM recorded_events
          WHERE rowid < coalesce(
                  (SELECT rowid FROM recorded_events WHERE recorded_at >= ?1 ORDER BY rowid LIMIT 1),
                  9223372036854775807)
            AND event_id NOT IN (SELECT usage_event_id FROM pending_events)
          ORDER BY rowid LIMIT ?2)`,
      nowMs - retentionMs,
      RECORDED_PRUNE_BATCH,
    ).rowsWritten;
  }
}
