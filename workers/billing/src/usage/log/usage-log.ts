import { DurableObject } from "cloudflare:workers";
import {
  counterShardOfLogShard,
  tenantCounterShards,
} from "@edge-platform/shared/billing/counter-shards";
import {
  deadLetterIdFor,
  propertiesField,
  type RawUsageMessage,
  USAGE_QUEUES,
  type ValidatedUsageMessage,
} from "@edge-platform/shared/queues/usage";
import type {
  FlushClaim,
  RejectedUpdate,
  UsageLogRow,
  UsageLogRpc,
  ValidatedUpdate,
} from "@edge-platform/shared/usage-log/client";
import { redriveAfterSeconds, redriveOf } from "../domain/usage-redrive.ts";
import { archiveFileKey, archiveSettings, fileTarget, hourStartMs } from "./archive-layout.ts";
import type { ListFilter } from "./listing.ts";
import { decodeUsageEventsParquet, encodeUsageEventsParquet } from "./parquet.ts";
import { sendInChunks } from "./publishing.ts";
import { usageRawQueue } from "./raw-queues.ts";
import { UsageLogStore } from "./storage.ts";
import type {
  Decision,
  FileRecord,
  FilesRead,
  ImportedEvent,
  Location,
  NewEvent,
  StoredEvent,
} from "./stored-events.ts";

/*
 * UsageLog: one object per tenant shard (see shared/src/usage-log/client.ts
 * for the addressing), holding that shard's raw usage-event log in its own
 * SQLite storage (storage.ts). Nothing of it is written to D1.
 *
 * Ingestion stores each batch's new events with their outbox entries in one
 * storage transaction and sends them to usage-raw right after the commit;
 * the object's alarm is the safety net, as the single outbox publisher and
 * reconciler were before: it sends what is still in the outbox (backoff 2,
 * 4, 8, 16 s; the fifth failure dead-letters the event at the PUBLISHING
 * stage), re-drives events that stayed PENDING or VALIDATED longer than
 * USAGE_REDRIVE_AFTER_SECONDS, streams finished events to R2 as Parquet
 * (archiveDue: a failure there backs off by itself, and a file that cannot
 * be encoded is set aside with its events kept here), merges each past day's archived-id segments into one table
 * (their filters would otherwise hold memory for the whole retention
 * window) and forgets ids past the retention window.
 *
 * Statuses move here: VALIDATED and REJECTED from the validation stage, and
 * AGGREGATED from the tenant's EntitlementCounter, whose flush first claims
 * its events here (claim), then adds their units to usage_aggregates in D1,
 * then finishes them (finishClaim); a retried flush finds the same claim.
 */

const FIRST_SEND_DELAY_MS = 2_000;
const OUTBOX_BATCH = 1_000;
const OUTBOX_MAX_ROUNDS = 10;
export const OUTBOX_MAX_ATTEMPTS = 5;
const REDRIVE_BATCH = 500;
const REDRIVE_MAX_ROUNDS = 5;
const PRUNE_INTERVAL_MS = 3_600_000;
/** Ids forgotten per alarm, so that one alarm stays short. */
const PRUNE_BATCH = 20_000;
const DAY_MS = 86_400_000;
/** Rounds of reading archive files for one decision (each round reads every file it named). */
const MAX_DECISION_ROUNDS = 4;
/** The archive's retry after a failure: this long, doubled per failure in a row, up to the cap. */
const ARCHIVE_RETRY_BASE_MS = 5_000;
const ARCHIVE_RETRY_MAX_MS = 300_000;
/** Meta keys of the archive's back-off (kept in storage, so a restarted object keeps backing off). */
const ARCHIVE_FAILURES = "archive_failures";
const ARCHIVE_RETRY_AT = "archive_retry_at";

export interface ArchiveRunOptions {
  nowMs?: number;
  /** New files written at most (the alarm writes one at a time, so ingestion is never held long). */
  maxFiles?: number;
  /** Tests: stop after this step, as a crash there would. */
  crashAfter?: "intent" | "put";
}

export interface ArchiveRunReport {
  /** Files written, and files dead-lettered (which move no events). */
  files: number;
  events: number;
  /** Whether a full file was written, so more may be due at once. */
  more: boolean;
}

export class UsageLog extends DurableObject<Env> implements UsageLogRpc {
  private readonly store: UsageLogStore;
  private sending: Promise<void> | null = null;
  private sendAgain = false;
  private lastRedriveMs = 0;
  private lastPruneMs = 0;
  private archiveBacklog = false;
  /** The tenant and shard this object serves (read once, then kept). */
  private binding: { tenantId: string; shard: number } | undefined;
  /** When the alarm is set (null: none), as this instance last set or saw it; undefined: not read yet. */
  private alarmAt: number | null | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new UsageLogStore(ctx.storage.sql);
  }

  // --- ingestion ----------------------------------------------------------

  /**
   * Stores the new events of a batch (skipping eventIds this shard holds)
   * with their outbox entries in one transaction; returns the eventIds
   * stored. The send to usage-raw starts right after the commit.
   */
  async ingest(input: {
    tenantId: string;
    shard: number;
    receivedAt: string;
    events: NewEvent[];
  }): Promise<string[]> {
    this.bind(input.tenantId, input.shard);
    const nowMs = Date.now();
    const stored = await this.decide((filesRead) =>
      this.store.insert(input.events, input.receivedAt, nowMs, nowMs, filesRead),
    );
    if (stored.length > 0) {
      await this.ensureAlarm(nowMs + FIRST_SEND_DELAY_MS);
      void this.publish().catch(() => undefined);
    }
    return stored;
  }

  /** eventIds among these that this shard holds (the previous shard count's object, after a change). */
  async seen(eventIds: string[]): Promise<string[]> {
    return [...(await this.decide((filesRead) => this.store.held(eventIds, filesRead)))];
  }

  /** Events moved in from the D1 log of earlier releases (idempotent). */
  async import(input: { tenantId: string; shard: number; events: ImportedEvent[] }) {
    this.bind(input.tenantId, input.shard);
    const nowMs = Date.now();
    const stored = await this.decide((filesRead) =>
      this.store.import(input.events, nowMs, filesRead),
    );
    if (stored > 0) {
      const bound = redriveAfterSeconds(this.env.USAGE_REDRIVE_AFTER_SECONDS) * 1000;
      await this.ensureAlarm(nowMs + bound);
    }
    return stored;
  }

  // --- statuses -------------------------------------------------------------

  rows(ids: string[]): UsageLogRow[] {
    return this.store.rows(this.tenantId(), ids);
  }

  markValidated(updates: ValidatedUpdate[], at: string): number {
    return this.store.markValidated(updates, at, Date.now());
  }

  markRejected(updates: RejectedUpdate[], _at: string): number {
    const changed = this.store.markRejected(updates, Date.now());
    if (changed > 0) void this.ensureAlarm(Date.now() + 60_000);
    return changed;
  }

  claim(flushId: string, claims: FlushClaim[]) {
    return this.ctx.storage.transactionSync(() => this.store.claim(flushId, claims));
  }

  async finishClaim(flushId: string, ids: string[], at: string): Promise<number> {
    const changed = this.store.finishClaim(flushId, ids, at, Date.now());
    if (changed > 0) await this.ensureAlarm(Date.now() + archiveSettings(this.env).settleMs);
    return changed;
  }

  /**
   * REJECTED -> PENDING with an outbox entry due after `sendAfterMs` (an
   * administrator's dead-letter retry sends the event itself first; the
   * entry covers a failed send). False when the event is not here.
   */
  async reopen(id: string, sendAfterMs: number): Promise<boolean> {
    const nowMs = Date.now();
    const reopened = this.ctx.storage.transactionSync(() =>
      this.store.reopen(id, nowMs, nowMs + sendAfterMs),
    );
    if (reopened) await this.ensureAlarm(nowMs + sendAfterMs);
    return reopened;
  }

  /** The caller sent these events itself: their outbox entries go. */
  markSent(ids: string[]): void {
    this.store.deleteOutbox(ids);
  }

  // --- reads --------------------------------------------------------------

  find(eventId: string): Location | undefined {
    return this.store.find(this.tenantId(), eventId);
  }

  /** A page of the listing: its first `limit` hot events, and the archive files that may hold more. */
  listPage(filter: ListFilter, limit: number): { hot: StoredEvent[]; files: FileRecord[] } {
    return this.store.listPage(this.tenantId(), filter, limit);
  }

  /** The range of event times of a file finished before it was kept, as the listing read it. */
  noteFileTimes(fileId: number, times: { first: string; last: string }): void {
    this.store.noteFileTimes(fileId, times);
  }

  /** Forgets what is past the retention window now (`nowMs` places it in time: tests). */
  prune(nowMs: number = Date.now()): number {
    const retention = archiveSettings(this.env).retentionDays * DAY_MS;
    return this.store.prune(nowMs - retention, PRUNE_BATCH);
  }

  /** One step of merging a past day's archived-id segments into its one table (`nowMs`: tests); whether more is due. */
  compactIds(nowMs: number = Date.now()): boolean {
    return this.ctx.storage.transactionSync(() => this.store.compactIds(nowMs));
  }

  /** Sizes for monitoring and tests. */
  stats() {
    const count = (table: string) =>
      this.ctx.storage.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).one().n;
    return {
      events: count("events"),
      outbox: count("outbox"),
      indexedIds: this.store.indexedIds(),
      files: count("files"),
      unfinished: this.store.unfinishedCount(),
      deadLetteredFiles: count("archive_dead_letters"),
    };
  }

  // --- the alarm: outbox, re-drive, archive, compaction, prune ---------------

  override async alarm(): Promise<void> {
    const nowMs = Date.now();
    this.alarmAt = null;
    try {
      await this.publish(nowMs);
      if (nowMs - this.lastRedriveMs >= 5_000) {
        this.lastRedriveMs = nowMs;
        await this.redrive(nowMs);
      }
      await this.archiveStep(nowMs);
      this.compactIds(nowMs);
      if (nowMs - this.lastPruneMs >= PRUNE_INTERVAL_MS) {
        const forgotten = this.prune(nowMs);
        // A full batch: more are due, so the next alarm prunes again.
        this.lastPruneMs = forgotten < PRUNE_BATCH ? nowMs : 0;
      }
    } catch (error) {
      console.error(
        JSON.stringify({ level: "error", msg: "usage log alarm failed", error: String(error) }),
      );
      await this.setAlarm(Date.now() + 5_000);
      return;
    }
    const next = this.nextWorkAt(Date.now());
    if (next !== null) await this.setAlarm(next);
  }

  /**
   * The alarm's archive step. One file per alarm (encoding holds the object
   * for a moment); the next alarm comes at once while full files are
   * waiting. A failure (R2 refusing the put, say) is the archive's alone:
   * the rest of the alarm goes on, and the archive is tried again after a
   * back-off that doubles per failure in a row.
   */
  private async archiveStep(nowMs: number): Promise<void> {
    if (nowMs < Number(this.store.meta(ARCHIVE_RETRY_AT) ?? 0)) return;
    try {
      this.archiveBacklog = (await this.archiveDue({ nowMs, maxFiles: 1 })).more;
      if (this.store.meta(ARCHIVE_FAILURES) !== undefined) {
        this.store.deleteMeta(ARCHIVE_FAILURES);
        this.store.deleteMeta(ARCHIVE_RETRY_AT);
      }
    } catch (error) {
      const failures = Number(this.store.meta(ARCHIVE_FAILURES) ?? 0) + 1;
      const retryInMs = Math.min(ARCHIVE_RETRY_MAX_MS, ARCHIVE_RETRY_BASE_MS * 2 ** (failures - 1));
      this.store.setMeta(ARCHIVE_FAILURES, String(failures));
      this.store.setMeta(ARCHIVE_RETRY_AT, String(nowMs + retryInMs));
      this.archiveBacklog = false;
      console.error(
        JSON.stringify({
          level: "error",
          msg: "usage archive failed; the usage log retries",
          failures,
          retryInMs,
          error: String(error).slice(0, 1000),
        }),
      );
    }
  }

  /**
   * Sends every due outbox entry now. One send runs at a time; a call
   * during a send makes it go round once more, so entries committed
   * meanwhile leave without waiting for the alarm.
   */
  publish(nowMs?: number): Promise<void> {
    if (this.sending) {
      this.sendAgain = true;
      return this.sending;
    }
    this.sending = (async () => {
      do {
        this.sendAgain = false;
        await this.runPublish(nowMs ?? Date.now());
      } while (this.sendAgain);
    })().finally(() => {
      this.sending = null;
    });
    return this.sending;
  }

  /** Re-drives events unfinished for longer than the bound; returns how many were sent. */
  async redrive(
    nowMs: number = Date.now(),
  ): Promise<{ raw: number; validated: number; failed: number }> {
    const result = { raw: 0, validated: 0, failed: 0 };
    const tenantId = this.boundTenant();
    if (!tenantId) return result;
    const before = nowMs - redriveAfterSeconds(this.env.USAGE_REDRIVE_AFTER_SECONDS) * 1000;
    for (let round = 0; round < REDRIVE_MAX_ROUNDS; round++) {
      const events = this.store.takeStranded(tenantId, before, nowMs, REDRIVE_BATCH);
      if (events.length === 0) break;
      const raw: RawUsageMessage[] = [];
      const validated: ValidatedUsageMessage[] = [];
      for (const event of events) {
        const redrive = redriveOf({
          id: event.id,
          tenantId,
          eventId: event.eventId,
          feature: event.feature,
          amount: event.amount,
          timestamp: event.timestamp,
          receivedAt: event.receivedAt,
          status: event.status as "PENDING" | "VALIDATED",
          subscriptionId: event.subscriptionId,
          periodKey: event.periodKey,
          periodStart: event.periodStart,
          periodEnd: event.periodEnd,
          validatedAt: event.validatedAt,
          properties: event.properties,
        });
        if (redrive.queue === "raw") raw.push(redrive.message);
        else validated.push(redrive.message);
      }
      const [rawReport, validatedReport] = await Promise.all([
        sendInChunks(usageRawQueue(this.env, tenantId, this.shard()), raw, this.counterShard()),
        sendInChunks(this.env.USAGE_VALIDATED_QUEUE, validated, this.counterShard()),
      ]);
      result.raw += rawReport.sent.length;
      result.validated += validatedReport.sent.length;
      // A failed send is tried again by the sweep after the next bound.
      for (const failure of [...rawReport.failed, ...validatedReport.failed]) {
        result.failed += failure.ids.length;
      }
      if (events.length < REDRIVE_BATCH) break;
    }
    if (result.raw + result.validated + result.failed > 0) {
      console.log(JSON.stringify({ level: "info", msg: "usage events re-driven", ...result }));
    }
    return result;
  }

  /**
   * Streams finished events to R2 as Parquet: every ARCHIVE_FILE_EVENTS
   * finished events, and whatever is finished of a closed hour. Each file:
   *   1. intent: a WRITING `files` row with its key, and its events marked
   *      with the file, in one transaction;
   *   2. put: the Parquet object under that key (a repeat overwrites the
   *      same object with the same events);
   *   3. finish: the eventIds indexed to the file, the events deleted here,
   *      the file DONE, in one transaction.
   * A crash before 3 leaves the file WRITING, and the next run writes it
   * again from the same events before anything else: nothing is lost, and
   * no event lands in two files.
   */
  async archiveDue(options: ArchiveRunOptions = {}): Promise<ArchiveRunReport> {
    const report: ArchiveRunReport = { files: 0, events: 0, more: false };
    const tenantId = this.boundTenant();
    if (!tenantId) return report;
    const nowMs = options.nowMs ?? Date.now();
    const settings = archiveSettings(this.env);
    for (const file of this.store.writingFiles()) {
      report.events += await this.writeFile(tenantId, file, options);
      report.files++;
    }
    for (let round = 0; round < (options.maxFiles ?? Number.POSITIVE_INFINITY); round++) {
      const settledBefore = nowMs - settings.settleMs;
      const candidates = this.store.archivable(settledBefore, settings.fileEvents);
      const first = candidates[0];
      if (!first) break;
      const day = first.received_at.slice(0, 10);
      const closedBefore = new Date(hourStartMs(nowMs)).toISOString();
      const target = fileTarget(settings, first.id);
      const full = candidates.length >= target;
      const chosen = candidates
        .slice(0, target)
        .filter(
          (row) => row.received_at.slice(0, 10) === day && (full || row.received_at < closedBefore),
        );
      if (chosen.length === 0) break;
      const last = chosen.at(-1) ?? first;
      const receivedTimes = chosen.map((row) => row.received_at).sort();
      const record = {
        key: archiveFileKey(tenantId, day, this.shard(), first.id),
        day,
        first_id: first.id,
        last_id: last.id,
        first_received: receivedTimes[0] ?? first.received_at,
        last_received: receivedTimes.at(-1) ?? first.received_at,
        events: chosen.length,
      };
      const fileId = this.ctx.storage.transactionSync(() =>
        this.store.startFile(record, { settledBefore, closedBefore, full }, nowMs),
      );
      if (options.crashAfter === "intent") throw new Error("injected crash after the intent");
      report.events += await this.writeFile(tenantId, { ...record, id: fileId }, options);
      report.files++;
      report.more = full;
      if (!full) break;
    }
    return report;
  }

  private async writeFile(
    tenantId: string,
    file: Pick<FileRecord, "id" | "key" | "first_id" | "last_id">,
    options: ArchiveRunOptions,
  ): Promise<number> {
    const events = this.store.fileEvents(tenantId, file);
    let body: ArrayBuffer;
    try {
      body = encodeUsageEventsParquet(events);
    } catch (error) {
      // Encoding the same events fails every time: retrying would hold back every later file.
      this.deadLetterFile(file, events.length, error);
      return 0;
    }
    await this.env.USAGE_ARCHIVE.put(file.key, body, {
      httpMetadata: { contentType: "application/vnd.apache.parquet" },
      customMetadata: {
        tenantId,
        shard: String(this.shard()),
        events: String(events.length),
        firstId: file.first_id,
        lastId: file.last_id,
      },
    });
    if (options.crashAfter === "put") throw new Error("injected crash after the put");
    return this.ctx.storage.transactionSync(() => this.store.finishFile(file.id, body.byteLength));
  }

  /** Sets a file that cannot be encoded aside with its reason (its events stay here: archive-files.ts). */
  private deadLetterFile(
    file: Pick<FileRecord, "id" | "key" | "first_id" | "last_id">,
    events: number,
    error: unknown,
  ): void {
    const reason = (error instanceof Error ? error.message : String(error)).slice(0, 1000);
    this.ctx.storage.transactionSync(() =>
      this.store.deadLetterFile(file, { events, reason, nowMs: Date.now() }),
    );
    console.error(
      JSON.stringify({
        level: "error",
        msg: "usage archive file cannot be encoded; its events stay in the usage log",
        key: file.key,
        firstId: file.first_id,
        lastId: file.last_id,
        events,
        reason,
      }),
    );
  }

  private async runPublish(nowMs: number): Promise<void> {
    const tenantId = this.boundTenant();
    if (!tenantId) return;
    for (let round = 0; round < OUTBOX_MAX_ROUNDS; round++) {
      const due = this.store.dueOutbox(tenantId, nowMs, OUTBOX_BATCH);
      if (due.length === 0) break;
      // No lease while the send is out: one publish runs at a time (publish()),
      // and after a crash mid-send the entries are due again (a resent
      // message changes nothing downstream).
      const report = await sendInChunks(
        usageRawQueue(this.env, tenantId, this.shard()),
        due,
        this.counterShard(),
      );
      this.store.deleteOutbox(report.sent);
      for (const failure of report.failed) {
        const exhausted = this.store.failOutbox(
          failure.ids,
          failure.error,
          nowMs,
          OUTBOX_MAX_ATTEMPTS,
        );
        console.error(
          JSON.stringify({
            level: "warn",
            msg: "usage-raw send failed; the usage log retries",
            events: failure.ids.length,
            error: failure.error,
          }),
        );
        if (exhausted.length > 0) await this.deadLetterUnpublished(exhausted, failure.error);
      }
      if (due.length < OUTBOX_BATCH) break;
    }
  }

  /** An event whose send failed OUTBOX_MAX_ATTEMPTS times goes to the dead letters (PUBLISHING). */
  private async deadLetterUnpublished(ids: string[], error: string): Promise<void> {
    const tenantId = this.tenantId();
    const rows = this.store.rows(tenantId, ids);
    const at = new Date().toISOString();
    const records = await Promise.all(
      rows.map(async (row) => ({
        id: await deadLetterIdFor(`PUBLISHING:${row.id}`),
        sourceEventId: row.eventId,
        tenantId,
        payload: JSON.stringify({
          id: row.id,
          tenantId,
          eventId: row.eventId,
          feature: row.feature,
          amount: row.amount,
          timestamp: row.timestamp,
          receivedAt: row.receivedAt,
          ...propertiesField(row.properties),
        }),
      })),
    );
    await this.env.DB.prepare(
      `INSERT INTO dead_letter_events
         (id, source_event_id, tenant_id, topic, failure_stage, failure_reason, original_payload,
          error_details, retry_count, first_failed_at, last_attempted_at)
       SELECT json_extract(d.value, '$.id'), json_extract(d.value, '$.sourceEventId'),
              json_extract(d.value, '$.tenantId'), '${USAGE_QUEUES.raw}', 'PUBLISHING',
              'Outbox publish failed after ${OUTBOX_MAX_ATTEMPTS} attempts: ' || ?2,
              json_extract(d.value, '$.payload'), ?2, ${OUTBOX_MAX_ATTEMPTS}, ?3, ?3
         FROM json_each(?1) AS d WHERE true
       ON CONFLICT (id) DO UPDATE SET
         status = 'FAILED', failure_reason = excluded.failure_reason,
         error_details = excluded.error_details, last_attempted_at = excluded.last_attempted_at,
         updated_at = excluded.last_attempted_at`,
    )
      .bind(JSON.stringify(records), error.slice(0, 1000), at)
      .run();
    this.store.deleteOutbox(ids);
  }

  /** When the alarm must come next, or null when nothing is waiting. */
  private nextWorkAt(nowMs: number): number | null {
    const candidates: number[] = [];
    const outbox = this.store.nextOutboxAt();
    if (outbox !== null) candidates.push(Math.max(nowMs + 500, outbox));
    const touched = this.store.oldestUnfinishedTouch();
    if (touched !== null) {
      const bound = redriveAfterSeconds(this.env.USAGE_REDRIVE_AFTER_SECONDS) * 1000;
      candidates.push(Math.max(nowMs + 5_000, touched + bound));
    }
    const archiveRetryAt = Number(this.store.meta(ARCHIVE_RETRY_AT) ?? 0);
    if (archiveRetryAt > nowMs) {
      candidates.push(archiveRetryAt);
    } else if (this.archiveBacklog) {
      candidates.push(nowMs + 1_000);
    } else if (this.store.hasArchivable()) {
      const settings = archiveSettings(this.env);
      candidates.push(Math.min(nowMs + settings.settleMs, hourStartMs(nowMs) + 3_600_000));
    }
    // 0 while a compaction is under way: the next alarm comes at once.
    const compactAt = this.store.nextCompactionAt();
    if (compactAt !== null) candidates.push(Math.max(nowMs + 1_000, compactAt));
    const oldest = this.store.oldestIdMs();
    if (oldest !== null) {
      // Sooner while a full prune batch left more to forget.
      const pause = this.lastPruneMs === 0 ? 1_000 : PRUNE_INTERVAL_MS;
      candidates.push(
        Math.max(nowMs + pause, oldest + archiveSettings(this.env).retentionDays * DAY_MS),
      );
    }
    return candidates.length === 0 ? null : Math.min(...candidates);
  }

  /**
   * Runs a storage decision in one transaction; when it needs archive files
   * (a hash hit on an index row of an earlier release, which has no check),
   * reads them from R2 outside the
   * transaction and runs it again, so that the decision and its writes are
   * one transaction with nothing awaited between them.
   */
  private async decide<T>(attempt: (filesRead: FilesRead) => Decision<T>): Promise<T> {
    const filesRead = new Map<number, ReadonlySet<string>>();
    for (let round = 0; round < MAX_DECISION_ROUNDS; round++) {
      const decision = this.ctx.storage.transactionSync(() => attempt(filesRead));
      if ("done" in decision) return decision.done;
      for (const file of decision.unread) {
        filesRead.set(file.id, await this.archivedEventIds(file.key));
      }
    }
    throw new Error("the usage log's index kept pointing at unread archive files");
  }

  /** The eventIds in one archive file (read from R2: a hash hit is confirmed against them). */
  private async archivedEventIds(key: string): Promise<Set<string>> {
    const object = await this.env.USAGE_ARCHIVE.get(key);
    if (!object) throw new Error(`the usage archive file ${key} cannot be read`);
    const events = await decodeUsageEventsParquet(await object.arrayBuffer());
    return new Set(events.map((event) => event.eventId));
  }

  /** Sets the alarm no later than `at` (the storage is read once per instance, then kept here). */
  private async ensureAlarm(at: number): Promise<void> {
    if (this.alarmAt === undefined) this.alarmAt = await this.ctx.storage.getAlarm();
    if (this.alarmAt === null || this.alarmAt > at) await this.setAlarm(at);
  }

  private async setAlarm(at: number): Promise<void> {
    await this.ctx.storage.setAlarm(at);
    this.alarmAt = at;
  }

  private bind(tenantId: string, shard: number): void {
    const bound = this.bound();
    if (bound === undefined) {
      this.store.setMeta("tenant_id", tenantId);
      this.store.setMeta("shard", String(shard));
      this.binding = { tenantId, shard };
    } else if (bound.tenantId !== tenantId) {
      throw new Error("this usage log belongs to another tenant");
    }
  }

  private bound(): { tenantId: string; shard: number } | undefined {
    if (this.binding === undefined) {
      const tenantId = this.store.meta("tenant_id");
      if (tenantId !== undefined) {
        this.binding = { tenantId, shard: Number(this.store.meta("shard") ?? "0") };
      }
    }
    return this.binding;
  }

  private boundTenant(): string | undefined {
    return this.bound()?.tenantId;
  }

  private tenantId(): string {
    return this.boundTenant() ?? "";
  }

  private shard(): number {
    return this.bound()?.shard ?? 0;
  }

  /** The counter shard that counts this shard's events, under the tenant's count now. */
  private counterShard(): number {
    const tenantId = this.boundTenant();
    if (!tenantId) return 0;
    return counterShardOfLogShard(this.shard(), tenantCounterShards(this.env, tenantId));
  }
}
