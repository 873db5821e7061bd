import type {
  FlushClaim,
  RejectedUpdate,
  UsageLogRow,
  ValidatedUpdate,
} from "@edge-platform/shared/usage-log/client";
import * as archive from "./archive-files.ts";
import { type EventIdHash, eventIdHash } from "./event-id-hash.ts";
import * as lifecycle from "./event-lifecycle.ts";
import { EventIdIndex, type IndexSizes } from "./id-index.ts";
import * as listing from "./listing.ts";
import * as outbox from "./outbox.ts";
import { applyLogSchema, SCHEMA } from "./schema.ts";
import type {
  Decision,
  FileRecord,
  FilesRead,
  ImportedEvent,
  Location,
  NewEvent,
  NewFile,
  StoredEvent,
} from "./stored-events.ts";

// The capacity measurement runs the store over node:sqlite and creates its schema from here.
export { SCHEMA };

/**
 * Storage statements of one tenant shard; synchronous, the caller owns
 * transactions. One object, so the UsageLog (and a test giving it another
 * eventId hash) swaps all of it at once; the statements live by concern in
 * the modules named below.
 */
export class UsageLogStore {
  private loadedIndex: EventIdIndex | null = null;

  /** `sizes`: the archived-id index's segment and compaction step sizes (tests make them small). */
  constructor(
    private readonly sql: SqlStorage,
    private readonly hash: EventIdHash = eventIdHash,
    private readonly sizes: IndexSizes = {},
  ) {
    applyLogSchema(sql);
  }

  /**
   * The archived-id index, read from storage when first used and again
   * after a write to it failed (its transaction rolled back what it holds
   * in memory).
   */
  private get index(): EventIdIndex {
    this.loadedIndex ??= new EventIdIndex(this.sql, this.hash, this.sizes);
    return this.loadedIndex;
  }

  private writingIndex<T>(write: (index: EventIdIndex) => T): T {
    try {
      return write(this.index);
    } catch (error) {
      this.loadedIndex = null;
      throw error;
    }
  }

  meta(key: string): string | undefined {
    return this.sql
      .exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key)
      .toArray()[0]?.value;
  }

  deleteMeta(key: string): void {
    this.sql.exec("DELETE FROM meta WHERE key = ?", key);
  }

  setMeta(key: string, value: string): void {
    this.sql.exec(
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      key,
      value,
    );
  }

  // --- the duplicate guard and the archived-id index (id-index.ts) ----------

  held(eventIds: string[], filesRead: FilesRead): Decision<Set<string>> {
    return this.index.held(eventIds, filesRead);
  }

  prune(before: number, limit: number): number {
    return this.writingIndex((index) => index.prune(before, limit));
  }

  /** One step of merging a past day's segments into its one table; whether more is due now. */
  compactIds(nowMs: number): boolean {
    return this.writingIndex((index) => index.compact(nowMs));
  }

  nextCompactionAt(): number | null {
    return this.index.nextCompactionAt();
  }

  oldestIdMs(): number | null {
    return this.index.oldestIdMs();
  }

  indexedIds(): number {
    return this.index.indexedIds();
  }

  // --- events from ingestion to their end (event-lifecycle.ts) -------------

  insert(
    events: NewEvent[],
    receivedAt: string,
    nowMs: number,
    firstSendAt: number,
    filesRead: FilesRead = new Map(),
  ): Decision<string[]> {
    const at = { receivedAt, nowMs, firstSendAt };
    return lifecycle.insertEvents(this.sql, this.index, events, at, filesRead);
  }

  import(
    events: ImportedEvent[],
    nowMs: number,
    filesRead: FilesRead = new Map(),
  ): Decision<number> {
    return lifecycle.importEvents(this.sql, this.index, events, nowMs, filesRead);
  }

  rows(tenantId: string, ids: string[]): UsageLogRow[] {
    return lifecycle.logRows(this.sql, tenantId, ids);
  }

  markValidated(updates: ValidatedUpdate[], at: string, nowMs: number): number {
    return lifecycle.markValidated(this.sql, updates, at, nowMs);
  }

  markRejected(updates: RejectedUpdate[], nowMs: number): number {
    return lifecycle.markRejected(this.sql, updates, nowMs);
  }

  claim(flushId: string, claims: FlushClaim[]) {
    return lifecycle.claimEvents(this.sql, flushId, claims);
  }

  finishClaim(flushId: string, ids: string[], at: string, nowMs: number): number {
    return lifecycle.finishClaim(this.sql, flushId, ids, at, nowMs);
  }

  reopen(id: string, nowMs: number, sendAt: number): boolean {
    return lifecycle.reopenEvent(this.sql, id, nowMs, sendAt);
  }

  // --- reading events back (listing.ts) -------------------------------------

  find(tenantId: string, eventId: string): Location | undefined {
    return listing.findEvent(this.sql, this.index, tenantId, eventId);
  }

  /**
   * The first `limit` hot events of a page and the files that may hold
   * more, read together so that a file finished in between can neither
   * hide its events nor show them twice.
   */
  listPage(
    tenantId: string,
    filter: listing.ListFilter,
    limit: number,
  ): { hot: StoredEvent[]; files: FileRecord[] } {
    return {
      hot: listing.hotEvents(this.sql, tenantId, filter, limit),
      files: listing.filesFor(this.sql, filter),
    };
  }

  noteFileTimes(fileId: number, times: { first: string; last: string }): void {
    listing.noteFileTimes(this.sql, fileId, times);
  }

  // --- outbox and re-drive (outbox.ts) --------------------------------------

  dueOutbox(tenantId: string, nowMs: number, limit: number) {
    return outbox.dueOutbox(this.sql, tenantId, nowMs, limit);
  }

  deleteOutbox(ids: string[]): void {
    outbox.deleteOutbox(this.sql, ids);
  }

  failOutbox(ids: string[], error: string, nowMs: number, maxAttempts: number): string[] {
    return outbox.failOutbox(this.sql, ids, error, nowMs, maxAttempts);
  }

  nextOutboxAt(): number | null {
    return outbox.nextOutboxAt(this.sql);
  }

  takeStranded(tenantId: string, before: number, nowMs: number, limit: number) {
    return outbox.takeStranded(this.sql, tenantId, { before, nowMs, limit });
  }

  oldestUnfinishedTouch(): number | null {
    return outbox.oldestUnfinishedTouch(this.sql);
  }

  unfinishedCount(): number {
    return outbox.unfinishedCount(this.sql);
  }

  // --- archive files (archive-files.ts) -------------------------------------

  archivable(settledBefore: number, limit: number): { id: string; received_at: string }[] {
    return archive.archivable(this.sql, settledBefore, limit);
  }

  hasArchivable(): boolean {
    return archive.hasArchivable(this.sql);
  }

  startFile(
    file: NewFile,
    choice: { settledBefore: number; closedBefore: string; full: boolean },
    nowMs: number,
  ): number {
    return archive.startFile(this.sql, file, choice, nowMs);
  }

  writingFiles(): FileRecord[] {
    return archive.writingFiles(this.sql);
  }

  fileEvents(tenantId: string, file: Pick<FileRecord, "id" | "first_id" | "last_id">) {
    return archive.fileEvents(this.sql, tenantId, file);
  }

  finishFile(fileId: number, bytes: number): number {
    return this.writingIndex((index) => archive.finishFile(this.sql, index, fileId, bytes));
  }

  deadLetterFile(
    file: Pick<FileRecord, "id" | "key" | "first_id" | "last_id">,
    failure: { events: number; reason: string; nowMs: number },
  ): void {
    archive.deadLetterFile(this.sql, file, failure);
  }

  archiveDeadLetters(): archive.ArchiveDeadLetter[] {
    return archive.archiveDeadLetters(this.sql);
  }
}
