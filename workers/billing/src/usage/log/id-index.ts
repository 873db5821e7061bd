import { type EventIdHash, hashKeySql } from "./event-id-hash.ts";
import type { Decision, FileRef, FilesRead } from "./stored-events.ts";

/*
 * The shard's duplicate guard and id -> file index (schema.ts): hot events
 * by their eventId, archived ones by an 8-byte hash in one table per UTC day
 * of receipt, the rare hash collisions by their full eventId, and, in
 * objects of earlier releases, the former one-row-per-eventId index.
 */

const DAY_TABLE_PREFIX = "event_ids_";
const DAY_MS = 86_400_000;

/** The index table of a UTC day (`yyyy-mm-dd`). */
export function dayTableName(day: string): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new Error(`not a day: ${day}`);
  return `${DAY_TABLE_PREFIX}${day.replaceAll("-", "")}`;
}

function dayOfTable(table: string): string {
  const digits = table.slice(DAY_TABLE_PREFIX.length);
  return `${digits.slice(0, 4)}-${digits.slice(4, 6)}-${digits.slice(6, 8)}`;
}

interface KeyedEventId {
  eventId: string;
  hash: [number, number];
}

/**
 * The eventIds sorted as SQLite orders their 64-bit key (signed high half,
 * then the low half), so a file's index rows go in as one ordered batch.
 */
function inKeyOrder(eventIds: string[], hash: EventIdHash): KeyedEventId[] {
  const keyed = eventIds.map((eventId) => ({ eventId, hash: hash(eventId) }));
  keyed.sort((a, b) => a.hash[0] - b.hash[0] || a.hash[1] - b.hash[1]);
  return keyed;
}

/** The eventIds (after the first) whose hash the one before them in key order has too. */
function repeatedHashes(keyed: KeyedEventId[]): Set<string> {
  const collided = new Set<string>();
  for (let index = 1; index < keyed.length; index++) {
    const previous = keyed[index - 1]?.hash;
    const current = keyed[index];
    if (previous && current && previous[0] === current.hash[0] && previous[1] === current.hash[1]) {
      collided.add(current.eventId);
    }
  }
  return collided;
}

export class EventIdIndex {
  /** The day tables, oldest first (read once, kept as they are created and dropped). */
  private days: string[];
  /** Whether the former one-row-per-eventId index of earlier releases is still here. */
  private legacyIndex: boolean;

  /** Call once the schema exists. */
  constructor(
    private readonly sql: SqlStorage,
    private readonly hash: EventIdHash,
  ) {
    this.days = sql
      .exec<{ name: string }>(
        `SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB '${DAY_TABLE_PREFIX}[0-9]*'
          ORDER BY name`,
      )
      .toArray()
      .map((row) => row.name);
    this.legacyIndex =
      sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event_ids'").toArray()
        .length > 0;
  }

  /**
   * The eventIds among `eventIds` held already (hot, or archived within
   * retention). Exact: an id known by its full value (hot, a collision row,
   * the former index) is held; an archived one found by its hash is held
   * only if its file, read from `filesRead`, has it. Files not read yet come
   * back as `unread`.
   */
  held(eventIds: string[], filesRead: FilesRead): Decision<Set<string>> {
    const held = new Set<string>();
    if (eventIds.length === 0) return { done: held };
    const list = JSON.stringify(eventIds);
    const exact = [
      "SELECT event_id FROM events WHERE event_id IN (SELECT value FROM json_each(?1))",
      "SELECT event_id FROM id_collisions WHERE event_id IN (SELECT value FROM json_each(?1))",
      ...(this.legacyIndex
        ? ["SELECT event_id FROM event_ids WHERE event_id IN (SELECT value FROM json_each(?1))"]
        : []),
    ].join(" UNION ALL ");
    for (const row of this.sql.exec<{ event_id: string }>(exact, list)) held.add(row.event_id);
    const rest = eventIds.filter((eventId) => !held.has(eventId));
    if (rest.length === 0 || this.days.length === 0) return { done: held };
    const unread = new Set<number>();
    for (const hit of this.hashHits(rest)) {
      const eventId = rest[hit.i] as string;
      const file = filesRead.get(hit.file_id);
      if (!file) unread.add(hit.file_id);
      else if (file.has(eventId)) held.add(eventId);
    }
    if (unread.size === 0) return { done: held };
    const files = this.doneFiles(unread);
    if (files.length === 0) return { done: held };
    return { unread: files };
  }

  /** Index rows of any day whose hash one of `eventIds` has: its position and the row's file. */
  private hashHits(eventIds: string[]): { i: number; file_id: number }[] {
    return this.sql
      .exec<{ i: number; file_id: number }>(
        `WITH q(i, h) AS MATERIALIZED (SELECT key, ${hashKeySql("value")} FROM json_each(?1))
         ${this.days
           .map(
             (table) => `SELECT q.i AS i, t.file_id AS file_id FROM q JOIN ${table} t ON t.h = q.h`,
           )
           .join(" UNION ALL ")}`,
        JSON.stringify(eventIds.map((eventId) => this.hash(eventId))),
      )
      .toArray();
  }

  /** The files among `fileIds` still kept. */
  private doneFiles(fileIds: Set<number>): FileRef[] {
    // A file past retention (its row gone, its day table going) holds nothing any more.
    return this.sql
      .exec<{ id: number; key: string }>(
        "SELECT id, key FROM files WHERE status = 'DONE' AND id IN (SELECT value FROM json_each(?))",
        JSON.stringify([...fileIds]),
      )
      .toArray()
      .map((file) => ({ id: file.id, key: file.key }));
  }

  /** The archive files that may hold an eventId no hot event has, the exactly indexed first. */
  filesHolding(eventId: string): { key: string; exact: boolean }[] {
    const exact = [
      `SELECT f.key AS key FROM id_collisions c JOIN files f ON f.id = c.file_id
        WHERE c.event_id = ?1 AND f.status = 'DONE'`,
      ...(this.legacyIndex
        ? [
            `SELECT f.key AS key FROM event_ids e JOIN files f ON f.id = e.file_id
              WHERE e.event_id = ?1 AND f.status = 'DONE'`,
          ]
        : []),
    ].join(" UNION ALL ");
    const files = this.sql
      .exec<{ key: string }>(exact, eventId)
      .toArray()
      .map((row) => ({ key: row.key, exact: true }));
    if (this.days.length > 0) {
      const [hi, lo] = this.hash(eventId);
      // Newest day first: a hash hit there is the likeliest.
      const byHash = this.days
        .toReversed()
        .map(
          (table) =>
            `SELECT f.key AS key FROM ${table} t JOIN files f ON f.id = t.file_id
              WHERE t.h = ((?1 << 32) | ?2) AND f.status = 'DONE'`,
        )
        .join(" UNION ALL ");
      for (const row of this.sql.exec<{ key: string }>(byHash, hi, lo)) {
        files.push({ key: row.key, exact: false });
      }
    }
    return files;
  }

  /**
   * Indexes a file's events in its day's table (caller's transaction), once
   * per event in one sorted batch, not on the ingestion path. An eventId
   * whose hash is taken (by another event of the file or of another file)
   * goes to id_collisions by its full value instead.
   */
  addFile(fileId: number, day: string, eventIds: string[]): void {
    const table = this.dayTable(day);
    const keyed = inKeyOrder(eventIds, this.hash);
    const collided = repeatedHashes(keyed);
    // A hash another file's event holds already keeps that row (nothing
    // written); only when some were not written is the day's table searched
    // for them, which 64-bit hashes make rare.
    const unique = collided.size === 0 ? keyed : keyed.filter((e) => !collided.has(e.eventId));
    const pairs = JSON.stringify(unique.map((entry) => entry.hash));
    const written = this.sql.exec(
      `INSERT INTO ${table} (h, file_id) SELECT ${hashKeySql("value")}, ? FROM json_each(?)
       WHERE true ON CONFLICT (h) DO NOTHING`,
      fileId,
      pairs,
    ).rowsWritten;
    if (written < unique.length) {
      for (const row of this.sql.exec<{ i: number }>(
        `WITH q(i, h) AS MATERIALIZED (SELECT key, ${hashKeySql("value")} FROM json_each(?))
         SELECT q.i AS i FROM q JOIN ${table} t ON t.h = q.h WHERE t.file_id <> ?`,
        pairs,
        fileId,
      )) {
        collided.add((unique[row.i] as { eventId: string }).eventId);
      }
    }
    if (collided.size > 0) {
      this.sql.exec(
        `INSERT INTO id_collisions (event_id, day, file_id) SELECT value, ?, ? FROM json_each(?)
         WHERE true ON CONFLICT (event_id) DO UPDATE SET day = excluded.day, file_id = excluded.file_id`,
        day,
        fileId,
        JSON.stringify([...collided]),
      );
    }
  }

  /** The index table of `day`, created on its first file. */
  private dayTable(day: string): string {
    const table = dayTableName(day);
    if (!this.days.includes(table)) {
      this.sql.exec(
        `CREATE TABLE IF NOT EXISTS ${table} (h INTEGER PRIMARY KEY, file_id INTEGER NOT NULL)`,
      );
      this.days = [...this.days, table].sort();
    }
    return table;
  }

  /**
   * Forgets what was received before `before`: each whole day before its
   * day goes as one DROP TABLE, with that day's collision rows and file
   * rows (so an id is kept between the retention window and a day more);
   * the former index of earlier releases loses up to `limit` rows (the
   * oldest) whose events are no longer hot, and goes once empty. Returns
   * how many ids were forgotten.
   */
  prune(before: number, limit: number): number {
    const cutoff = new Date(before).toISOString().slice(0, 10);
    let forgotten = 0;
    for (const table of this.days.filter((name) => dayOfTable(name) < cutoff)) {
      forgotten += this.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).one().n;
      this.sql.exec(`DROP TABLE ${table}`);
      this.days = this.days.filter((name) => name !== table);
    }
    forgotten += this.sql.exec("DELETE FROM id_collisions WHERE day < ?", cutoff).rowsWritten;
    this.sql.exec("DELETE FROM files WHERE status = 'DONE' AND day < ?", cutoff);
    if (this.legacyIndex) forgotten += this.pruneLegacy(before, limit);
    return forgotten;
  }

  /** The former index's part of `prune`; it is dropped once empty. */
  private pruneLegacy(before: number, limit: number): number {
    const forgotten = this.sql.exec(
      `DELETE FROM event_ids
        WHERE event_id IN (SELECT event_id FROM event_ids WHERE received_ms < ?
                            ORDER BY received_ms LIMIT ?)
          AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = event_ids.id)`,
      before,
      limit,
    ).rowsWritten;
    if (this.sql.exec("SELECT 1 FROM event_ids LIMIT 1").toArray().length === 0) {
      this.sql.exec("DROP TABLE event_ids");
      this.legacyIndex = false;
    }
    return forgotten;
  }

  /**
   * The receipt time whose retention end is the next prune: the end of the
   * oldest indexed day, or the oldest id of the former index.
   */
  oldestIdMs(): number | null {
    const times: number[] = [];
    const oldestDay = this.days[0];
    if (oldestDay) times.push(Date.parse(`${dayOfTable(oldestDay)}T00:00:00.000Z`) + DAY_MS);
    if (this.legacyIndex) {
      const at = this.sql
        .exec<{ at: number | null }>("SELECT min(received_ms) AS at FROM event_ids")
        .one().at;
      if (at !== null) times.push(at);
    }
    return times.length > 0 ? Math.min(...times) : null;
  }

  /** Ids in the archived-id index (every day table, collision rows and the former index). */
  indexedIds(): number {
    const tables = [...this.days, "id_collisions", ...(this.legacyIndex ? ["event_ids"] : [])];
    return tables.reduce(
      (sum, table) =>
        sum + this.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).one().n,
      0,
    );
  }
}
