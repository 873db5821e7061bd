import { type EventIdHash, eventIdCheck, hashKeySql } from "./event-id-hash.ts";
import { IdFilter } from "./id-filter.ts";
import type { Decision, FileRef, FilesRead } from "./stored-events.ts";

/*
 * The shard's duplicate guard and id -> file index (schema.ts): hot events
 * by their eventId, archived ones by an 8-byte hash in segments (tables of
 * at most SEGMENT_IDS ids, each of one UTC day of receipt, each with a
 * filter that answers "not here" for almost every new id), the rare hash
 * collisions by their full eventId, and, in objects of earlier releases,
 * the former one-row-per-eventId index.
 *
 * Why segments: ids are random, so a file's 10,000 sorted ids land on as
 * many different pages of a table; in one table per day that rewrote most
 * of the day's index with every file, and each batch's lookups read pages
 * the cache no longer held, so a shard's cost per event grew with the ids
 * it kept. A bounded segment keeps the write small, and the filters keep
 * lookups off the tables (docs/capacity.md, "Cost as a shard's log grows").
 */

const DAY_TABLE_PREFIX = "event_ids_";
const DAY_MS = 86_400_000;
/** Ids a segment takes before the next one of its day starts. */
export const SEGMENT_IDS = 250_000;
/** A day's segments are merged into one table this long after the day ends (its last files have come by then). */
export const COMPACT_AFTER_MS = 2 * 3_600_000;
/** Ids one compaction step moves, about (one alarm run's share). */
const COMPACT_CHUNK_IDS = 50_000;
const COMPACTION_META = "id_compaction";

export interface IndexSizes {
  segmentIds?: number;
  compactChunkIds?: number;
}

/**
 * A past day's segments being merged into its one table, a range of the
 * hash space per step: the sealed segments (no new ids go to them), the
 * ranges and the next to move.
 */
interface Compaction {
  day: string;
  tables: string[];
  chunks: number;
  next: number;
}

/**
 * One table of the archived-id index. Segments are named
 * `event_ids_<yyyymmdd>_<nnnn>` and have a filter (id-filter.ts). A past
 * day's segments are merged into its one table, `event_ids_<yyyymmdd>_all`
 * (keyed by hash and file, so no row is lost to another with its hash),
 * which has none: its filters would hold the shard's memory for the whole
 * retention window. A day table of earlier releases
 * (`event_ids_<yyyymmdd>`) has none either. Tables without a filter are
 * read for every lookup.
 */
interface Segment {
  table: string;
  day: string;
  ids: number;
  filter: IdFilter | null;
}

/** The first segment table of a UTC day (`yyyy-mm-dd`), or its `ordinal`th. */
export function dayTableName(day: string, ordinal = 1): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new Error(`not a day: ${day}`);
  return `${DAY_TABLE_PREFIX}${day.replaceAll("-", "")}_${String(ordinal).padStart(4, "0")}`;
}

/** The one table a past day's segments are merged into. */
export function compactedTableName(day: string): string {
  return dayTableName(day).replace(/_0001$/, "_all");
}

const dayEndMs = (day: string) => Date.parse(`${day}T00:00:00.000Z`) + DAY_MS;

/** The signed 64-bit bounds of the `index`th of `count` equal ranges of the hash space, as decimal text. */
export function hashRange(index: number, count: number): [low: string, high: string] {
  const min = -(2n ** 63n);
  const span = 2n ** 64n;
  const low = min + (span * BigInt(index)) / BigInt(count);
  const high = min + (span * BigInt(index + 1)) / BigInt(count) - 1n;
  return [low.toString(), high.toString()];
}

function dayOfTable(table: string): string {
  const digits = table.slice(DAY_TABLE_PREFIX.length);
  return `${digits.slice(0, 4)}-${digits.slice(4, 6)}-${digits.slice(6, 8)}`;
}

interface KeyedEventId {
  eventId: string;
  hash: [number, number];
  /** The 4-byte check stored beside the hash (event-id-hash.ts). */
  check: number;
}

/**
 * The eventIds sorted as SQLite orders their 64-bit key (signed high half,
 * then the low half), so a file's index rows go in as one ordered batch.
 */
function inKeyOrder(eventIds: string[], hash: EventIdHash): KeyedEventId[] {
  const keyed = eventIds.map((eventId) => ({
    eventId,
    hash: hash(eventId),
    check: eventIdCheck(eventId),
  }));
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
  /** The segments, oldest first (read once, kept as they are created and dropped). */
  private segments: Segment[];
  /** Whether the former one-row-per-eventId index of earlier releases is still here. */
  private legacyIndex: boolean;

  private readonly segmentIds: number;
  private readonly compactChunkIds: number;

  /** Call once the schema exists. `sizes`: a segment's ids and a compaction step's (tests make them small). */
  constructor(
    private readonly sql: SqlStorage,
    private readonly hash: EventIdHash,
    sizes: IndexSizes = {},
  ) {
    this.segmentIds = sizes.segmentIds ?? SEGMENT_IDS;
    this.compactChunkIds = sizes.compactChunkIds ?? COMPACT_CHUNK_IDS;
    const filters = new Map(
      sql
        .exec<{ segment: string; ids: number; bits: ArrayBuffer }>(
          "SELECT segment, ids, bits FROM id_filters",
        )
        .toArray()
        .map((row) => [row.segment, row]),
    );
    const tables = sql
      .exec<{ name: string; sql: string }>(
        `SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name GLOB '${DAY_TABLE_PREFIX}[0-9]*'
          ORDER BY name`,
      )
      .toArray();
    // Tables of earlier releases get the check column; their rows have none.
    for (const table of tables) {
      if (!/\bc INTEGER\b/.test(table.sql))
        sql.exec(`ALTER TABLE ${table.name} ADD COLUMN c INTEGER`);
    }
    this.segments = tables.map(({ name }) => {
      const stored = filters.get(name);
      return {
        table: name,
        day: dayOfTable(name),
        ids: stored?.ids ?? 0,
        filter: stored ? new IdFilter({ bytes: new Uint8Array(stored.bits) }) : null,
      };
    });
    this.legacyIndex =
      sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event_ids'").toArray()
        .length > 0;
  }

  /**
   * The eventIds among `eventIds` held already (hot, or archived within
   * retention). Exact: an id known by its full value (hot, a collision row,
   * the former index) is held; an archived one found by its hash is held
   * when the row's check matches its own, and is not held by a row whose
   * check differs; a row with no check (written by an earlier release)
   * holds it only if its file, read from `filesRead`, has it. Files not
   * read yet come back as `unread`.
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
    if (rest.length === 0 || this.segments.length === 0) return { done: held };
    const unread = new Set<number>();
    for (const hit of this.hashHits(rest)) {
      const eventId = rest[hit.i] as string;
      if (hit.c !== null) {
        if (hit.c === eventIdCheck(eventId)) held.add(eventId);
        continue;
      }
      const file = filesRead.get(hit.file_id);
      if (!file) unread.add(hit.file_id);
      else if (file.has(eventId)) held.add(eventId);
    }
    if (unread.size === 0) return { done: held };
    const files = this.doneFiles(unread);
    if (files.length === 0) return { done: held };
    return { unread: files };
  }

  /**
   * Index rows whose hash one of `eventIds` has: its position and the row's
   * file. A segment is read only for the ids its filter may hold, which
   * for new ids is almost never.
   */
  private hashHits(eventIds: string[]): { i: number; file_id: number; c: number | null }[] {
    const hashes = eventIds.map((eventId) => this.hash(eventId));
    const hits: { i: number; file_id: number; c: number | null }[] = [];
    for (const segment of this.segments) {
      const { filter } = segment;
      const positions = filter
        ? hashes.flatMap(([hi, lo], i) => (filter.mayHold(hi, lo) ? [i] : []))
        : hashes.map((_, i) => i);
      if (positions.length === 0) continue;
      const rows = this.sql.exec<{ i: number; file_id: number; c: number | null }>(
        `WITH q(i, h) AS MATERIALIZED (SELECT key, ${hashKeySql("value")} FROM json_each(?1))
         SELECT q.i AS i, t.file_id AS file_id, t.c AS c FROM q JOIN ${segment.table} t ON t.h = q.h`,
        JSON.stringify(positions.map((i) => hashes[i])),
      );
      for (const row of rows) {
        hits.push({ i: positions[row.i] as number, file_id: row.file_id, c: row.c });
      }
    }
    return hits;
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

  /**
   * The archive files that may hold an eventId no hot event has, the
   * exactly indexed first (by full value, or by hash and a matching check);
   * a row whose check differs is another id's.
   */
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
    const [hi, lo] = this.hash(eventId);
    // Newest segment first: a hash hit there is the likeliest.
    const byHash = this.segments
      .filter((segment) => !segment.filter || segment.filter.mayHold(hi, lo))
      .toReversed()
      .map(
        (segment) =>
          `SELECT f.key AS key, t.c AS c FROM ${segment.table} t JOIN files f ON f.id = t.file_id
            WHERE t.h = ((?1 << 32) | ?2) AND (t.c IS NULL OR t.c = ?3) AND f.status = 'DONE'`,
      );
    if (byHash.length > 0) {
      const rows = this.sql.exec<{ key: string; c: number | null }>(
        byHash.join(" UNION ALL "),
        hi,
        lo,
        eventIdCheck(eventId),
      );
      const found = [...rows].map((row) => ({ key: row.key, exact: row.c !== null }));
      files.push(...found.filter((file) => file.exact), ...found.filter((file) => !file.exact));
    }
    return files;
  }

  /**
   * Indexes a file's events in its day's open segment (caller's
   * transaction), once per event in one sorted batch, not on the ingestion
   * path. An eventId whose hash is taken (by another event of the file or of
   * another file) goes to id_collisions by its full value instead.
   */
  addFile(fileId: number, day: string, eventIds: string[]): void {
    const segment = this.openSegment(day);
    const table = segment.table;
    const keyed = inKeyOrder(eventIds, this.hash);
    const collided = repeatedHashes(keyed);
    // A hash another file's event holds already keeps that row (nothing
    // written); only when some were not written is the segment searched
    // for them, which 64-bit hashes make rare.
    const unique = collided.size === 0 ? keyed : keyed.filter((e) => !collided.has(e.eventId));
    const pairs = JSON.stringify(unique.map((entry) => [...entry.hash, entry.check]));
    const written = this.sql.exec(
      `INSERT INTO ${table} (h, file_id, c)
       SELECT ${hashKeySql("value")}, ?, json_extract(value, '$[2]') FROM json_each(?)
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
    this.noteWritten(segment, unique, written);
  }

  /** The segment's count and filter after `written` of `entries` went in, stored with them. */
  private noteWritten(segment: Segment, entries: KeyedEventId[], written: number): void {
    segment.ids += written;
    let filter = segment.filter as IdFilter;
    if (segment.ids > filter.capacity) {
      // Grown past its size: rebuilt from the segment's rows at twice the size.
      filter = new IdFilter({
        ids: Math.max(segment.ids, Math.min(segment.ids * 2, this.segmentIds)),
      });
      for (const row of this.sql.exec<{ hi: number; lo: number }>(
        `SELECT h >> 32 AS hi, h & 4294967295 AS lo FROM ${segment.table}`,
      )) {
        filter.add(row.hi, row.lo);
      }
      segment.filter = filter;
    } else {
      for (const { hash } of entries) filter.add(hash[0], hash[1]);
    }
    this.sql.exec(
      "UPDATE id_filters SET ids = ?, bits = ? WHERE segment = ?",
      segment.ids,
      filter.bytes().slice().buffer,
      segment.table,
    );
  }

  /**
   * The day's segment that takes new ids: its latest, or a new one once
   * that holds `segmentIds` (so each write touches a bounded table).
   */
  private openSegment(day: string): Segment {
    const numbered = this.segments.filter(
      (segment) => segment.day === day && /_\d{4}$/.test(segment.table),
    );
    const latest = numbered.at(-1);
    if (latest?.filter && latest.ids < this.segmentIds && !this.sealed().has(latest.table)) {
      return latest;
    }
    const table = dayTableName(day, latest ? Number(latest.table.slice(-4)) + 1 : 1);
    const filter = new IdFilter({ ids: 0 });
    this.sql.exec(
      `CREATE TABLE IF NOT EXISTS ${table} (h INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, c INTEGER)`,
    );
    this.sql.exec(
      `INSERT INTO id_filters (segment, ids, bits) VALUES (?, 0, ?)
       ON CONFLICT (segment) DO UPDATE SET ids = 0, bits = excluded.bits`,
      table,
      filter.bytes().slice().buffer,
    );
    return this.keep({ table, day, ids: 0, filter });
  }

  private keep(segment: Segment): Segment {
    this.segments = [...this.segments, segment].sort((a, b) => (a.table < b.table ? -1 : 1));
    return segment;
  }

  // --- merging a past day's segments into one table --------------------------

  private storedCompaction(): Compaction | null {
    const row = this.sql
      .exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", COMPACTION_META)
      .toArray()[0];
    return row ? (JSON.parse(row.value) as Compaction) : null;
  }

  private saveCompaction(compaction: Compaction): void {
    this.sql.exec(
      `INSERT INTO meta (key, value) VALUES (?, ?)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      COMPACTION_META,
      JSON.stringify(compaction),
    );
  }

  /** The segments a compaction under way has sealed: new ids go elsewhere. */
  private sealed(): Set<string> {
    return new Set(this.storedCompaction()?.tables ?? []);
  }

  /** The compaction under way, or one started for the oldest day due at `nowMs`, or null. */
  private compaction(nowMs: number): Compaction | null {
    const stored = this.storedCompaction();
    if (stored) return stored;
    const due = this.segments.find(
      (segment) => segment.filter && dayEndMs(segment.day) + COMPACT_AFTER_MS <= nowMs,
    );
    if (!due) return null;
    const sealed = this.segments.filter((segment) => segment.filter && segment.day === due.day);
    const ids = sealed.reduce((sum, segment) => sum + segment.ids, 0);
    const table = compactedTableName(due.day);
    this.sql.exec(
      `CREATE TABLE IF NOT EXISTS ${table} (
         h INTEGER NOT NULL, file_id INTEGER NOT NULL, c INTEGER, PRIMARY KEY (h, file_id)
       ) WITHOUT ROWID`,
    );
    if (!this.segments.some((segment) => segment.table === table)) {
      this.keep({ table, day: due.day, ids: 0, filter: null });
    }
    const compaction: Compaction = {
      day: due.day,
      tables: sealed.map((segment) => segment.table),
      chunks: Math.max(1, Math.ceil(ids / this.compactChunkIds)),
      next: 0,
    };
    this.saveCompaction(compaction);
    return compaction;
  }

  /**
   * One step of merging a past day's segments into its one table (caller's
   * transaction): the ids of one range of the hash space, appended in key
   * order; after the last range the segments and their filters go. The
   * lookups read the table and the segments meanwhile, so every id is
   * found throughout. Returns whether more is due now.
   */
  compact(nowMs: number): boolean {
    const compaction = this.compaction(nowMs);
    if (!compaction) return false;
    const [low, high] = hashRange(compaction.next, compaction.chunks);
    const source = compaction.tables
      .map(
        (table) =>
          `SELECT h, file_id, c FROM ${table}
            WHERE h BETWEEN CAST(?1 AS INTEGER) AND CAST(?2 AS INTEGER)`,
      )
      .join(" UNION ALL ");
    this.sql.exec(
      `INSERT INTO ${compactedTableName(compaction.day)} (h, file_id, c)
       SELECT h, file_id, c FROM (${source}) WHERE true ORDER BY h
       ON CONFLICT DO NOTHING`,
      low,
      high,
    );
    compaction.next++;
    if (compaction.next < compaction.chunks) {
      this.saveCompaction(compaction);
      return true;
    }
    for (const table of compaction.tables) {
      this.sql.exec(`DROP TABLE IF EXISTS ${table}`);
      this.sql.exec("DELETE FROM id_filters WHERE segment = ?", table);
    }
    this.sql.exec("DELETE FROM meta WHERE key = ?", COMPACTION_META);
    const merged = new Set(compaction.tables);
    this.segments = this.segments.filter((segment) => !merged.has(segment.table));
    const next = this.nextCompactionAt();
    return next !== null && next <= nowMs;
  }

  /** When compaction has work: at once while one is under way, else when the oldest segments' day falls due. */
  nextCompactionAt(): number | null {
    if (this.storedCompaction()) return 0;
    const due = this.segments
      .filter((segment) => segment.filter)
      .map((segment) => dayEndMs(segment.day) + COMPACT_AFTER_MS);
    return due.length > 0 ? Math.min(...due) : null;
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
    for (const segment of this.segments.filter((entry) => entry.day < cutoff)) {
      forgotten += this.idsOf(segment);
      this.sql.exec(`DROP TABLE ${segment.table}`);
      this.sql.exec("DELETE FROM id_filters WHERE segment = ?", segment.table);
    }
    this.segments = this.segments.filter((entry) => entry.day >= cutoff);
    // A compaction of a day gone with it has nothing left to do.
    const compaction = this.storedCompaction();
    if (compaction && compaction.day < cutoff) {
      this.sql.exec("DELETE FROM meta WHERE key = ?", COMPACTION_META);
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
    const oldestDay = this.segments[0]?.day;
    if (oldestDay) times.push(Date.parse(`${oldestDay}T00:00:00.000Z`) + DAY_MS);
    if (this.legacyIndex) {
      const at = this.sql
        .exec<{ at: number | null }>("SELECT min(received_ms) AS at FROM event_ids")
        .one().at;
      if (at !== null) times.push(at);
    }
    return times.length > 0 ? Math.min(...times) : null;
  }

  /** Ids in the archived-id index (every segment, collision rows and the former index). */
  indexedIds(): number {
    const tables = ["id_collisions", ...(this.legacyIndex ? ["event_ids"] : [])];
    return (
      this.segments.reduce((sum, segment) => sum + this.idsOf(segment), 0) +
      tables.reduce(
        (sum, table) =>
          sum + this.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).one().n,
        0,
      )
    );
  }

  /** A segment's ids: kept with its filter, counted in a day table of earlier releases. */
  private idsOf(segment: Segment): number {
    if (segment.filter) return segment.ids;
    return this.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${segment.table}`).one().n;
  }
}
