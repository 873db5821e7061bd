import { DurableObject } from "cloudflare:workers";
import {
  type EntitlementCounterClient,
  entitlementCounter,
} from "@edge-platform/shared/billing/entitlement-counter-client";
import {
  type CheckInput,
  type CheckResult,
  type ConsumeInput,
  type ConsumeResult,
  type CreditsInput,
  type CreditsResult,
  checkInput,
  consumeInput,
  creditsInput,
  type EntitlementCounterRpc,
  type FlushInput,
  type FlushResult,
  flushInput,
  type KeyedConsumeInput,
  type KeyedConsumeResult,
  keyedConsumeInput,
  type RecordInput,
  type RecordResult,
  type ReturnLeasesInput,
  recordInput,
  returnLeasesInput,
  type SettleGrantInput,
  type ShardReport,
  type ShardSyncInput,
  type ShardSyncResult,
  settleGrantInput,
  shardSyncInput,
} from "@edge-platform/shared/billing/entitlement-counter-protocol";
import {
  checkOutcome,
  deniedCheck,
  isCounted,
  lookupEntitlement,
  subscriptionAccess,
} from "@edge-platform/shared/billing/entitlement-decision";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import { database } from "@edge-platform/shared/db/client";
import {
  loadTenantEntitlementState,
  type TenantEntitlementState,
} from "@edge-platform/shared/db/entitlement-state";
import { SingleFlight } from "../../platform/index.ts";
import { applyCounterFlush, readTenantWindowUsage } from "../../usage/index.ts";
import {
  counterIdRetentionMs,
  flushIntervalMs,
  leaseIntervalMs,
} from "../domain/usage-counter-settings.ts";
import { ConsumeRequests } from "./consume-requests.ts";
import {
  type ConsumeAnswering,
  ConsumeStep,
  type CountedConsume,
  type SettledConsume,
} from "./consume-step.ts";
import { CreditBalance, creditTermsOf, withCreditBalance } from "./credit-balance.ts";
import {
  type ReleaseTakeBackInput,
  type ReserveTakeBackInput,
  releaseTakeBackInput,
  reserveTakeBackInput,
  type TakeBackAnswer,
} from "./credit-take-backs.ts";
import type { CounterEffects } from "./effects.ts";
import { CounterFlushes, flushTotals } from "./flush.ts";
import { contributionOf } from "./meter-contribution.ts";
import { CounterMeterGroups } from "./meter-groups.ts";
import { ProgressiveWatch } from "./progressive-watch.ts";
import { type RecordedBatch, sortRecordedBatch } from "./record-batch.ts";
import { RecordedDraws } from "./recorded-draws.ts";
import { RecordedEventIds } from "./recorded-ids.ts";
import { applyCounterSchema } from "./schema.ts";
import { ShardLeases } from "./shard-leases.ts";
import { ShardMember } from "./shard-member.ts";
import { ShardOwner } from "./shard-owner.ts";
import { ShardView } from "./shard-view.ts";
import { SubscriptionMeters } from "./subscription-meters.ts";
import { TenantEventOutbox } from "./tenant-event-outbox.ts";
import { CounterTenant } from "./tenant-state.ts";
import { UsageAlertWatch } from "./usage-alert-watch.ts";
import { UnflushedUsageHours } from "./usage-hours.ts";
import { UsageNotices } from "./usage-notices.ts";
import { WindowCounts } from "./window-counts.ts";
import {
  countedWindow,
  drawTarget,
  entryWindowKey,
  type WindowKey,
  windowId,
  windowKeyAt,
} from "./window-keys.ts";

/*
 * EntitlementCounter: a tenant's usage counters (README.md beside this file
 * tells the whole design: the single path into usage_aggregates, cold
 * start, the pipeline's records, counter shards and quota leases). This
 * class keeps the order of the steps (what is awaited before a synchronous
 * step, what happens inside it); the state and rules of each concern live
 * in the modules beside it.
 */

/** Counters are kept this long after their window ends. */
const WINDOW_RETENTION_MS = 35 * 86_400_000;
/**
 * Old counters and request records are swept at most this often: the
 * flush alarm comes every USAGE_FLUSH_INTERVAL_MS under traffic, and a
 * sweep on each would scan the tables several times a second for rows that
 * age by the day.
 */
const PRUNE_INTERVAL_MS = 60_000;

type PreparedConsume = { kind: "answered"; result: ConsumeResult } | CountedConsume;

export abstract class EntitlementCounterObject
  extends DurableObject<Env>
  implements EntitlementCounterRpc
{
  private readonly tenant: CounterTenant;
  private readonly windows: WindowCounts;
  private readonly flushes: CounterFlushes;
  private readonly recordedIds: RecordedEventIds;
  private readonly requests: ConsumeRequests;
  private readonly seeding = new Map<string, Promise<void>>();
  private readonly flushing = new SingleFlight<FlushResult>();
  private alarmPending = false;
  /** When `prune` last swept (epoch ms; 0: not yet in this instance). */
  private prunedAtMs = 0;
  /** usage.threshold_reached and quota.exhausted: decided here, sent from here (see its module). */
  private readonly tenantEvents: TenantEventOutbox;
  private readonly usageAlerts: UsageAlertWatch;
  private readonly notices: UsageNotices;
  /** The hour of each unflushed direct unit, for usage_hourly (see its module). */
  private readonly unflushedHours: UnflushedUsageHours;
  /** Keyed consumes being decided (request id -> fingerprint); a repeat meanwhile is told so. */
  private readonly keyedInFlight = new Map<string, string>();
  /** Prepaid credits: the balance and its grants, drawn in the count's step (see its module). */
  private readonly creditGrants: CreditBalance;
  private readonly recordedDraws: RecordedDraws;
  private readonly meterGroups: CounterMeterGroups;
  private readonly subscriptionMeters: SubscriptionMeters;
  /** Progressive billing: invoices issued when the period's priced usage passes a threshold. */
  private readonly progressive: ProgressiveWatch;
  /** USAGE_FLUSH_INTERVAL_MS: how long units gather before a flush writes them to D1. */
  private readonly flushDelayMs = flushIntervalMs(this.env.USAGE_FLUSH_INTERVAL_MS);
  /** USAGE_COUNTER_LEASE_INTERVAL_MS: half of it is another shard's pace of flushes and reports, when longer. */
  private readonly leaseIntervalMs = leaseIntervalMs(this.env.USAGE_COUNTER_LEASE_INTERVAL_MS);
  /** USAGE_COUNTER_ID_RETENTION_SECONDS: how long recorded event ids are remembered. */
  private readonly recordedIdRetentionMs = counterIdRetentionMs(
    this.env.USAGE_COUNTER_ID_RETENTION_SECONDS,
  );
  /** Shard 0: the other counter shards' reports and leases. */
  private readonly leases: ShardLeases;
  /** A shard other than 0: its running totals and leases, and its link to shard 0. */
  private readonly view: ShardView;
  private readonly member: ShardMember;
  private readonly consumeStep: ConsumeStep;
  private readonly owner: ShardOwner;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const sql = ctx.storage.sql;
    applyCounterSchema(sql);
    this.tenant = new CounterTenant(sql, (tenantId) =>
      loadTenantEntitlementState(database(this.env.DB), tenantId),
    );
    this.windows = new WindowCounts(sql);
    this.recordedIds = new RecordedEventIds(sql);
    this.requests = new ConsumeRequests(sql);
    this.tenantEvents = new TenantEventOutbox(sql, () => this.env.TENANT_EVENTS_QUEUE);
    this.usageAlerts = new UsageAlertWatch(env, this.tenantEvents);
    this.notices = new UsageNotices(
      this.usageAlerts,
      this.tenantEvents,
      this.tenant,
      (key) => this.windows.usedIn(key),
      () => this.scheduleFlush(),
    );
    this.progressive = new ProgressiveWatch(
      sql,
      (tenantId, request) => this.effects().issueProgressiveInvoice(tenantId, request),
      () => this.scheduleFlush(),
    );
    this.creditGrants = new CreditBalance(
      sql,
      () => this.env.DB,
      (tenantId, request) => this.effects().startAutoTopUp(tenantId, request),
      () => this.scheduleFlush(),
      (terms, cost, usageEventId) => this.progressive.counted(terms, cost, usageEventId),
      (event) => {
        if (this.tenantEvents.add([event], new Date().toISOString()) > 0) this.notices.send();
      },
    );
    this.recordedDraws = new RecordedDraws(
      this.creditGrants,
      this.tenant,
      this.windows,
      this.progressive,
    );
    this.unflushedHours = new UnflushedUsageHours(sql);
    this.meterGroups = new CounterMeterGroups(sql);
    this.subscriptionMeters = new SubscriptionMeters(() => this.env.DB, this.tenant);
    this.flushes = this.counterFlushes(sql);
    this.leases = new ShardLeases(sql);
    this.view = new ShardView(sql);
    this.consumeStep = new ConsumeStep({
      windows: this.windows,
      meterGroups: this.meterGroups,
      notices: this.notices,
      creditGrants: this.creditGrants,
      unflushedHours: this.unflushedHours,
      view: this.view,
      owns: () => this.tenant.owns(),
      scheduleFlush: () => this.scheduleFlush(),
    });
    this.owner = new ShardOwner({
      leases: this.leases,
      windows: this.windows,
      notices: this.notices,
      consumeStep: this.consumeStep,
      seed: (key) => this.seed(key),
      shardClient: (shard) => this.shardClient(shard),
    });
    this.member = new ShardMember(
      this.view,
      this.windows,
      this.creditGrants,
      this.consumeStep,
      () => this.shardClient(0),
      () => this.tenant.shard(),
      () => this.tenant.id() ?? "",
      this.leaseIntervalMs,
    );
  }

  /** The flushes (steps 2 and 3); what an unclaimed event drew and cost goes back with its units. */
  private counterFlushes(sql: SqlStorage): CounterFlushes {
    return new CounterFlushes(
      sql,
      this.unflushedHours,
      (flush) => applyCounterFlush(this.env, flush),
      {
        claimed: (usageEventIds) => this.recordedDraws.claimed(usageEventIds),
        // What an unclaimed event's units drew and cost goes back with them.
        unclaimed: (row) => {
          this.recordedDraws.returned(row.usage_event_id);
          this.windows.takeBack(row);
          this.view.takeBack(row.feature_key, row.period_key);
          this.meterGroups.forget(row, contributionOf(row.meter));
        },
      },
      this.meterGroups,
    );
  }

  /** The services that do what the counter records (a top-up, a progressive invoice). */
  protected abstract effects(): CounterEffects;

  /** The entitlement check: never changes a counter. */
  async check(raw: CheckInput): Promise<CheckResult> {
    const input = checkInput.parse(raw);
    this.tenant.bind(input.tenantId, input.shard);
    const now = new Date(input.nowMs ?? Date.now());
    const state = await this.tenant.entitlements();
    const found = lookupEntitlement(
      subscriptionAccess(state.subscription, now),
      state.snapshots,
      input.featureKey,
    );
    if (found.kind === "denied") return deniedCheck(input.featureKey, found.reason);
    if (!isCounted(found.snapshot) || !state.subscription) {
      return checkOutcome(found.snapshot, 0, null);
    }
    const key = windowKeyAt(state, found.snapshot, now);
    if (!this.tenant.owns()) {
      if (await this.member.needsShardZero(state, found.snapshot)) {
        return this.member.owner().check(input.featureKey, input.nowMs);
      }
      const view = await this.member.currentView(key);
      return checkOutcome(found.snapshot, view, key.window.end?.toISOString() ?? null);
    }
    const used = this.windows.usedIn(key) ?? (await this.seed(key));
    await this.creditGrants.ready(input.tenantId);
    const outcome = checkOutcome(found.snapshot, used, key.window.end?.toISOString() ?? null);
    const terms = creditTermsOf(state, this.tenant.id());
    const credit =
      terms &&
      this.creditGrants.checked(
        terms,
        found.snapshot,
        drawTarget(key),
        this.windows.attributedUsed(key),
        now,
      );
    return withCreditBalance(outcome, credit);
  }

  /** Check and take `amount` units in one step; refused units are not counted. */
  async consume(raw: ConsumeInput): Promise<ConsumeResult> {
    const input = consumeInput.parse(raw);
    this.tenant.bind(input.tenantId, input.shard);
    const answered = this.requests.answered(input.requestId);
    if (answered) return answered;
    const now = new Date(input.nowMs ?? Date.now());
    const prepared = await this.prepareConsume(input.tenantId, input.featureKey, now);
    if (prepared.kind === "answered") return prepared.result;
    return this.settle(input, prepared, now, {
      // Decided in the count's step: a repeat that came meanwhile gets the first answer.
      repeated: () => this.requests.answered(input.requestId),
      keep: (result) => {
        if (input.requestId === undefined) return;
        this.requests.remember(input.requestId, result);
        // Refusals schedule no flush; the alarm must still come to prune the ids.
        this.scheduleFlush();
      },
    });
  }

  /**
   * A consume with an Idempotency-Key (see keyedConsumeInput): the answer
   * and the key's record are stored in the same synchronous step as the
   * units, so there is no moment where units were taken and the answer not
   * kept, and no write anywhere else.
   */
  async consumeKeyed(raw: KeyedConsumeInput): Promise<KeyedConsumeResult> {
    const input = keyedConsumeInput.parse(raw);
    this.tenant.bind(input.tenantId, input.shard);
    const earlier = this.requests.keyedAnswer(input);
    if (earlier) return earlier;
    const running = this.keyedInFlight.get(input.requestId);
    if (running !== undefined) {
      return running === input.requestHash ? { kind: "in_flight" } : { kind: "key_reused" };
    }
    this.keyedInFlight.set(input.requestId, input.requestHash);
    try {
      const now = new Date();
      const prepared = await this.prepareConsume(input.tenantId, input.featureKey, now);
      const keep = (result: ConsumeResult) => {
        this.requests.rememberKeyed(input, result);
        // Refusals schedule no flush; the alarm must still come to prune the records.
        this.scheduleFlush();
      };
      let result: ConsumeResult;
      if (prepared.kind === "answered") {
        result = prepared.result;
        keep(result);
      } else result = await this.settle(input, prepared, now, { keep });
      return {
        kind: "answered",
        result,
        replayed: false,
        correlationId: input.correlationId,
        atMs: input.atMs,
      };
    } finally {
      this.keyedInFlight.delete(input.requestId);
    }
  }

  /** Decides a consume and takes its units (shard-owner.ts, shard-member.ts), keeping the answer in the same step. */
  private async settle(
    input: SettledConsume,
    prepared: CountedConsume,
    now: Date,
    answering: ConsumeAnswering,
  ): Promise<ConsumeResult> {
    if (this.tenant.owns()) return this.owner.settle(input, prepared, now, answering);
    return this.member.settle(input, prepared, now, answering);
  }

  /**
   * Everything a consume may wait for before its synchronous step: the
   * subscription state, the alert set, the window's total. Answers at once
   * when there is nothing to count.
   */
  private async prepareConsume(
    tenantId: string,
    feature: string,
    now: Date,
  ): Promise<PreparedConsume> {
    const state = await this.tenant.entitlements();
    const found = lookupEntitlement(
      subscriptionAccess(state.subscription, now),
      state.snapshots,
      feature,
    );
    if (found.kind === "denied") {
      return { kind: "answered", result: { status: "denied", feature, reason: found.reason } };
    }
    const snapshot = found.snapshot;
    if (!isCounted(snapshot) || !state.subscription) {
      return { kind: "answered", result: { status: "not_consumable", feature } };
    }
    const key = windowKeyAt(state, snapshot, now);
    if (this.tenant.owns()) {
      await this.usageAlerts.ready(tenantId);
      await this.creditGrants.ready(tenantId);
    }
    if (this.windows.usedIn(key) === undefined) await this.seed(key);
    const terms = creditTermsOf(state, this.tenant.id());
    return { kind: "counted", state, snapshot, key, terms };
  }

  /**
   * Counts usage the pipeline already accepted. Each event id counts once
   * for as long as it is remembered; a repeat is reported as a duplicate.
   */
  async record(raw: RecordInput): Promise<RecordResult> {
    const input = recordInput.parse(raw);
    this.tenant.bind(input.tenantId, input.shard);
    const owns = this.tenant.owns();
    if (!owns) {
      await this.subscriptionMeters.ready(input.entries);
      const needsShardZero = await this.member.batchNeedsShardZero(
        await this.tenant.entitlements(),
        input.entries,
        (entry) => this.subscriptionMeters.meterOf(entry),
      );
      if (needsShardZero) return this.member.owner().record(input.entries);
    }
    const entryKeys = input.entries.map(entryWindowKey);
    const distinct = new Map(entryKeys.map((key) => [windowId(key), key]));
    await Promise.all(
      [...distinct.values()]
        .filter((key) => this.windows.usedIn(key) === undefined)
        .map((key) => this.seed(key)),
    );
    // Usage alerts and credits are shard 0's (README.md, "Counter shards").
    const watchedTerms = owns
      ? await this.notices.watchedTerms(input.tenantId, distinct.values())
      : new Map<string, SnapshotTerms>();
    const creditState = owns ? await this.recordedDraws.ready(input.tenantId) : null;
    await this.subscriptionMeters.ready(input.entries);

    // One synchronous step for the whole batch: dedupe, count, remember.
    // The units are added once per attribution row and the event rows
    // queued by one statement: a statement per event cost more than the
    // rest of the pipeline's work on the event.
    const fresh = this.recordedIds.remember(
      input.entries.map((entry) => entry.eventId),
      Date.now(),
    );
    const placed = this.meterGroups.placeBatch(input.entries, entryKeys, fresh, (entry) =>
      this.subscriptionMeters.meterOf(entry),
    );
    const batch = sortRecordedBatch(placed.entries, entryKeys, fresh, placed.placements);
    this.countBatch(batch, creditState);
    this.notices.recorded(watchedTerms, distinct.values());
    // A repeat may be a re-drive of an event whose flush this object still
    // owes (its alarm lost in a restart): make sure a flush comes.
    if (batch.recorded > 0 || batch.duplicates > 0) this.scheduleFlush();
    return { recorded: batch.recorded, duplicates: batch.duplicates };
  }

  /** Synchronous: a sorted record batch's draws, units, hours and event rows. */
  private countBatch(batch: RecordedBatch, creditState: TenantEntitlementState | null): void {
    if (creditState) this.recordedDraws.payForLogged(creditState, batch.logged);
    for (const units of batch.counted.values()) {
      if (creditState && units.direct > 0) {
        this.recordedDraws.pay(creditState, units.key, units.claimed, units.direct);
      }
      // Claimed units wait in pending_events (queueEvents), not in `unflushed`.
      const amount = units.claimed + units.direct;
      if (amount > 0) this.windows.add(units.key, amount, units.lastAt, units.direct);
      if (amount > 0 && !this.tenant.owns()) this.view.count(units.key, amount);
    }
    this.unflushedHours.addAll(batch.directHours);
    this.flushes.queueEvents(batch.pendingRows);
  }

  /** Drops the cached subscription state; the subscription service calls it after every change. */
  async refreshEntitlements(): Promise<void> {
    this.tenant.refresh();
    await this.onOtherShards((shard) => shard.refresh());
  }

  /** Drops the cached alert set; the usage-alert routes call it after every change. */
  refreshUsageAlerts(): void {
    this.usageAlerts.refresh();
  }

  /** Writes everything counted so far to usage_aggregates now (the alarm does it a moment later anyway). */
  async flush(raw: FlushInput): Promise<FlushResult> {
    const input = flushInput.parse(raw);
    this.tenant.bind(input.tenantId, input.shard);
    const results = [await this.flushPending()];
    await this.onOtherShards(async (shard) => void results.push(await shard.flush()));
    await this.creditGrants.flush(input.tenantId);
    return flushTotals(results);
  }

  /** Drops the cached credit grants; the credits service calls it after every change in D1. */
  async refreshCredits(): Promise<void> {
    this.creditGrants.refresh();
    await this.onOtherShards((shard) => shard.refreshCredits());
  }

  /** The grants this object draws from, with what each has left. */
  async credits(raw: CreditsInput): Promise<CreditsResult> {
    const input = creditsInput.parse(raw);
    this.tenant.bind(input.tenantId);
    await this.creditGrants.ready(input.tenantId);
    return {
      grants: this.creditGrants
        .grants()
        .map(({ id, remaining, status }) => ({ id, remaining, status })),
    };
  }

  /** Ends a grant and answers what it held (see CreditBalance.settle). */
  async settleCreditGrant(raw: SettleGrantInput): Promise<number | null> {
    const input = settleGrantInput.parse(raw);
    this.tenant.bind(input.tenantId);
    await this.creditGrants.ready(input.tenantId);
    const held = this.creditGrants.settle(input.grantId, input.status);
    this.scheduleFlush();
    return held;
  }

  /**
   * Sets aside credits of a grant's unspent part for a take-back, all or
   * nothing, in one synchronous step (see credit-take-backs.ts). The draws
   * are flushed first: while draws returned here are not in D1, D1's
   * `drawn` is above this object's, and the caller's write-off could break
   * D1's check that drawn + written_off <= amount.
   */
  async reserveTakeBack(raw: ReserveTakeBackInput): Promise<TakeBackAnswer | null> {
    const input = reserveTakeBackInput.parse(raw);
    this.tenant.bind(input.tenantId);
    await this.creditGrants.ready(input.tenantId);
    await this.creditGrants.flush(input.tenantId);
    return this.creditGrants.reserveTakeBack(input.grantId, input.credits);
  }

  /** The caller's batch did not write the reservation: its credits go back (see CreditBalance.releaseTakeBack). */
  async releaseTakeBack(raw: ReleaseTakeBackInput): Promise<boolean> {
    const input = releaseTakeBackInput.parse(raw);
    this.tenant.bind(input.tenantId);
    const released = await this.creditGrants.releaseTakeBack(input.tenantId, input.reservationId);
    // Credits released to a grant that ended meanwhile wait for the flush to write them off.
    if (released) this.scheduleFlush();
    return released;
  }

  /** Shard 0: another shard's report, applied with any lease granted in one step (shard-owner.ts). */
  async syncShard(raw: ShardSyncInput): Promise<ShardSyncResult> {
    const input = shardSyncInput.parse(raw);
    this.tenant.bind(input.tenantId);
    if (!this.tenant.owns()) throw new Error("only counter shard 0 takes reports");
    return this.owner.sync(input, await this.tenant.entitlements());
  }

  /** A shard other than 0: gives back its unused lease units (shard 0 is about to refuse). */
  async returnLeases(raw: ReturnLeasesInput): Promise<ShardReport[]> {
    const input = returnLeasesInput.parse(raw);
    this.tenant.bind(input.tenantId, input.shard);
    return this.view.returnLeases(input.windows);
  }

  /** Shard 0: runs `call` on the other shards (they hold state only once they reported). */
  private async onOtherShards(
    call: (shard: EntitlementCounterClient) => Promise<void>,
  ): Promise<void> {
    if (this.tenant.owns() && this.tenant.id()) await this.owner.onOtherShards(call);
  }

  /** One of this tenant's counter shards. */
  private shardClient(shard: number) {
    const tenantId = this.tenant.id();
    if (!tenantId) throw new Error("EntitlementCounter has no tenant yet");
    return entitlementCounter(this.env.ENTITLEMENT_COUNTER, tenantId, shard);
  }

  override async alarm(): Promise<void> {
    this.alarmPending = false;
    await this.tenantEvents.send();
    try {
      await this.flushPending();
      const tenantId = this.tenant.id();
      if (tenantId) {
        await this.creditGrants.flush(tenantId);
        await this.creditGrants.runTopUp(tenantId);
        await this.progressive.run(tenantId);
      }
    } catch (error) {
      const delay = this.flushes.retryDelayMs();
      console.error(
        JSON.stringify({
          level: "error",
          msg: "usage flush failed; will retry",
          retryInMs: delay,
          error: String(error),
        }),
      );
      this.scheduleFlush(delay);
      return;
    }
    this.forgetRecordedIds(Date.now());
    if (Date.now() - this.prunedAtMs >= PRUNE_INTERVAL_MS && this.prune(Date.now())) {
      this.prunedAtMs = Date.now();
    }
    this.tenantEvents.prune(Date.now());
    if (
      this.flushes.hasPending() ||
      this.creditGrants.hasWork() ||
      this.progressive.hasWork() ||
      (!this.tenant.owns() && this.view.hasUnreported())
    ) {
      this.scheduleFlush();
    } else if (this.tenantEvents.hasUnsent()) this.scheduleFlush(this.tenantEvents.retryDelayMs());
  }

  // --- flushing and cold start -----------------------------------------

  private scheduleFlush(delayMs?: number): void {
    if (this.alarmPending) return;
    const shardPace = this.tenant.owns() ? 0 : this.leaseIntervalMs / 2;
    delayMs ??= Math.max(this.flushDelayMs, shardPace);
    this.alarmPending = true;
    void this.ctx.storage.setAlarm(Date.now() + delayMs);
  }

  /** Single-flight: a second caller waits for the running flush, then runs its own pass. */
  private flushPending(): Promise<FlushResult> {
    return this.flushing.run(async () => {
      // Another shard reports what it counted with each flush (README.md, "Counter shards").
      if (!this.tenant.owns()) await this.member.sync.sync();
      return this.flushes.run(this.tenant.id());
    });
  }

  /**
   * Creates the window's total (cold start) and resolves to it: inside the
   * flush single-flight after a flush (none half-applied), the tenant's
   * stored aggregates of the window plus the units this object still holds
   * (unflushed, pending events, a flush not applied yet). Callers share one
   * seed; a total that appeared meanwhile is kept. Another shard's view
   * comes from shard 0, never from D1.
   */
  private seed(key: WindowKey): Promise<number> {
    if (!this.tenant.owns()) return this.member.currentView(key);
    const id = windowId(key);
    let seeding = this.seeding.get(id);
    if (!seeding) {
      const tenantId = this.tenant.id();
      if (!tenantId) throw new Error("EntitlementCounter has no tenant yet");
      seeding = this.flushing
        .run(async () => {
          const flushed = await this.flushes.run(tenantId);
          const { windowStart, windowEnd } = countedWindow(key);
          const stored = await readTenantWindowUsage(database(this.env.DB), {
            tenantId,
            featureLookupKey: key.featureKey,
            periodKey: key.window.key,
            windowStart,
            windowEnd,
          });
          this.windows.seed(key, stored + this.flushes.heldUnits(key));
          return flushed;
        })
        .then(() => undefined)
        .finally(() => this.seeding.delete(id));
      this.seeding.set(id, seeding);
    }
    return seeding.then(() => {
      const used = this.windows.usedIn(key);
      if (used === undefined) throw new Error("counter missing after seeding");
      return used;
    });
  }

  // --- sweeps ------------------------------------------------------------

  /**
   * Forgets counters of windows that ended long ago, once nothing is
   * waiting to be flushed (a later use of such a window seeds again from
   * D1, which then holds every unit). Answers whether it swept.
   */
  private prune(nowMs: number): boolean {
    if (this.flushes.hasPending()) return false;
    const cutoff = new Date(nowMs - WINDOW_RETENTION_MS);
    // The view's `counted` is read from `counters`: before those rows go.
    this.view.forgetEnded(cutoff);
    this.leases.forgetEnded(cutoff);
    this.windows.forgetEnded(cutoff);
    this.meterGroups.sweep(cutoff.toISOString());
    this.requests.prune(nowMs);
    return true;
  }

  /** The alarm's sweep of remembered event ids (see RecordedEventIds.forgetExpired). */
  private forgetRecordedIds(nowMs: number): number {
    return this.recordedIds.forgetExpired(nowMs, this.recordedIdRetentionMs);
  }
}
