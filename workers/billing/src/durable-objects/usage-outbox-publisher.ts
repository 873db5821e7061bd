import { DurableObject } from "cloudflare:workers";
import type { RawUsageMessage } from "@edge-platform/shared/queues/usage";
import {
  dueOutboxRows,
  hasPendingOutbox,
  leaseOutboxRows,
  markOutboxPublished,
  purgePublishedOutbox,
  recordOutboxFailure,
} from "../db/usage-outbox.ts";
import { hasUnfinishedEvents } from "../db/usage-redrive.ts";
import { sendInChunks } from "../services/usage-publishing.ts";
import { type RedriveResult, redriveStrandedEvents } from "../services/usage-redrive.ts";
import { SingleFlight } from "./single-flight.ts";

/*
 * UsageOutboxPublisher: one object for the whole outbox (usage_outbox).
 *
 * Ingestion sends each batch to the raw queue right after its commit and
 * marks the rows published; this object is the safety net for the rows
 * that path leaves behind (a failed send, an isolate that died between the
 * commit and the send). Its alarm runs about every second while any row is
 * PENDING, and for a while after the last `arm()` (ingestion arms it on
 * every batch, before its commit, so a crash after the commit is covered);
 * with nothing to do it stops. A sweep takes the due rows, leases them (so
 * a slow send is not picked up twice), sends them and settles each chunk:
 * published, or one more failed attempt with exponential backoff (2, 4, 8,
 * 16 s), the fifth failure dead-lettering the event (db/usage-outbox.ts).
 * Rows are fresh for ingestion's own send for FIRST_SWEEP_DELAY_MS.
 *
 * It is also the usage pipeline's reconciler: every REDRIVE_INTERVAL_MS it
 * re-drives events that stayed PENDING or VALIDATED longer than the bound
 * (services/usage-redrive.ts), and its alarm keeps running while any event
 * is unfinished. The Cron Trigger and the first request of each billing
 * isolate arm it, so a restart or a lost alarm does not strand anything.
 */

export const SWEEP_INTERVAL_MS = 1_000;
/** How long after an arm() the alarm keeps running with nothing pending. */
const KEEP_ALIVE_MS = 15_000;
const SWEEP_MAX_ROWS = 500;
const SWEEP_MAX_ROUNDS = 10;
/** How long a row being sent is kept from other sweeps. */
const LEASE_MS = 30_000;
/** Published rows are kept this long, then purged. */
const PUBLISHED_RETENTION_MS = 86_400_000;
const PURGE_INTERVAL_MS = 60_000;
/** How often the alarm looks for stranded events. */
export const REDRIVE_INTERVAL_MS = 5_000;

export interface SweepResult {
  published: number;
  failed: number;
}

export class UsageOutboxPublisher extends DurableObject<Env> {
  private keepAliveUntil = 0;
  private alarmAt: number | null = null;
  private lastPurge = 0;
  private lastRedrive = 0;
  private readonly sweeping = new SingleFlight<SweepResult>();

  /** Makes sure a sweep runs within about a second, and keeps sweeping for a while. */
  async arm(): Promise<void> {
    const now = Date.now();
    this.keepAliveUntil = now + KEEP_ALIVE_MS;
    if (this.alarmAt !== null && this.alarmAt > now - SWEEP_INTERVAL_MS) return;
    this.alarmAt = (await this.ctx.storage.getAlarm()) ?? null;
    if (this.alarmAt === null) {
      this.alarmAt = now + SWEEP_INTERVAL_MS;
      await this.ctx.storage.setAlarm(this.alarmAt);
    }
  }

  /**
   * Starts the alarm if there is work for it (an unpublished outbox row or
   * an unfinished event) and it is not already set; unlike arm(), no
   * keep-alive. The Cron Trigger and each isolate's first request call it.
   */
  async ensureRunning(): Promise<boolean> {
    if (this.alarmAt !== null && this.alarmAt > Date.now() - SWEEP_INTERVAL_MS) return true;
    this.alarmAt = (await this.ctx.storage.getAlarm()) ?? null;
    if (this.alarmAt !== null) return true;
    const work =
      (await hasPendingOutbox(this.env.DB).catch(() => true)) ||
      (await hasUnfinishedEvents(this.env.DB).catch(() => true));
    if (!work) return false;
    this.alarmAt = Date.now() + SWEEP_INTERVAL_MS;
    await this.ctx.storage.setAlarm(this.alarmAt);
    return true;
  }

  /** Publishes every due row now; `nowMs` places the sweep in time (tests). */
  sweep(options: { nowMs?: number } = {}): Promise<SweepResult> {
    return this.sweeping.run(() => this.runSweep(options.nowMs ?? Date.now()));
  }

  /** Re-drives stranded events now; `nowMs` places the sweep in time (tests). */
  redrive(options: { nowMs?: number } = {}): Promise<RedriveResult> {
    return redriveStrandedEvents(this.env, options.nowMs ?? Date.now());
  }

  override async alarm(): Promise<void> {
    this.alarmAt = null;
    const now = Date.now();
    try {
      await this.sweep();
      if (now - this.lastRedrive >= REDRIVE_INTERVAL_MS) {
        this.lastRedrive = now;
        await this.redrive({ nowMs: now });
      }
      if (now - this.lastPurge > PURGE_INTERVAL_MS) {
        this.lastPurge = now;
        await purgePublishedOutbox(
          this.env.DB,
          new Date(now - PUBLISHED_RETENTION_MS).toISOString(),
        );
      }
    } catch (error) {
      console.error(
        JSON.stringify({ level: "error", msg: "outbox sweep failed", error: String(error) }),
      );
    }
    if (
      now < this.keepAliveUntil ||
      (await hasPendingOutbox(this.env.DB).catch(() => true)) ||
      (await hasUnfinishedEvents(this.env.DB).catch(() => true))
    ) {
      this.alarmAt = Date.now() + SWEEP_INTERVAL_MS;
      await this.ctx.storage.setAlarm(this.alarmAt);
    }
  }

  private async runSweep(nowMs: number): Promise<SweepResult> {
    const result: SweepResult = { published: 0, failed: 0 };
    for (let round = 0; round < SWEEP_MAX_ROUNDS; round++) {
      const now = new Date(nowMs).toISOString();
      const due = await dueOutboxRows(this.env.DB, now, SWEEP_MAX_ROWS);
      if (due.length === 0) break;
      const ids = due.map((row) => row.message.id);
      await leaseOutboxRows(this.env.DB, ids, new Date(nowMs + LEASE_MS).toISOString());
      const messages: RawUsageMessage[] = due.map((row) => row.message);
      const report = await sendInChunks(this.env.USAGE_RAW_QUEUE, messages);
      await markOutboxPublished(this.env.DB, report.sent, new Date().toISOString());
      result.published += report.sent.length;
      for (const failure of report.failed) {
        await recordOutboxFailure(this.env.DB, failure.ids, failure.error, now);
        result.failed += failure.ids.length;
        console.error(
          JSON.stringify({
            level: "warn",
            msg: "outbox send failed",
            events: failure.ids.length,
            error: failure.error,
          }),
        );
      }
      if (due.length < SWEEP_MAX_ROWS) break;
    }
    return result;
  }
}
