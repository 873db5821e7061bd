import { DurableObject } from "cloudflare:workers";
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
  recordInput,
  type SettleGrantInput,
  settleGrantInput,
} from "@edge-platform/shared/billing/entitlement-counter-protocol";
import {
  checkOutcome,
  consumeDecision,
  deniedCheck,
  isCounted,
  lookupEntitlement,
  subscriptionAccess,
} from "@edge-platform/shared/billing/entitlement-decision";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import type { EventProperties } from "@edge-platform/shared/billing/meter";
import { database } from "@edge-platform/shared/db/client";
import {
  loadTenantEntitlementState,
  type TenantEntitlementState,
} from "@edge-platform/shared/db/entitlement-state";
import { CREDITS_EXHAUSTED } from "../../credits/index.ts";
import { SingleFlight } from "../../platform/index.ts";
import { applyCounterFlush, readTenantWindowUsage } from "../../usage/index.ts";
import { counterIdRetentionMs, flushIntervalMs } from "../domain/usage-counter-settings.ts";
import { ConsumeRequests } from "./consume-requests.ts";
import { CreditBalance, type CreditTerms, creditTermsOf } from "./credit-balance.ts";
import {
  type ReleaseTakeBackInput,
  type ReserveTakeBackInput,
  releaseTakeBackInput,
  reserveTakeBackInput,
  type TakeBackAnswer,
} from "./credit-take-backs.ts";
import type { CounterEffects } from "./effects.ts";
import { CounterFlushes } from "./flush.ts";
import { contributionOf } from "./meter-contribution.ts";
import { CounterMeterGroups } from "./meter-groups.ts";
import { meteredConsume } from "./metered-consume.ts";
import { ProgressiveWatch } from "./progressive-watch.ts";
import { type RecordedBatch, sortRecordedBatch } from "./record-batch.ts";
import { RecordedDraws } from "./recorded-draws.ts";
import { RecordedEventIds } from "./recorded-ids.ts";
import { applyCounterSchema } from "./schema.ts";
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
 * EntitlementCounter: one object per tenant, the single owner of the
 * tenant's usage counters.
 *
 * Usage belongs to the tenant and the feature. `window_totals` holds one
 * row per (feature, reset window key): every unit of the tenant counted in
 * the window, whichever subscription was current, so a plan change (A -> B
 * -> A) never resets a limit (the window key survives a change that keeps
 * the billing cycle, and NEVER-reset features have one `lifetime` window).
 * Limits are decided on it. `counters` keeps, per (subscription, feature,
 * window), the units not yet handed to D1 (`unflushed`): usage_aggregates
 * rows stay attributed to the subscription that was current when the units
 * were used, which is what each plan's invoice bills. A consume reads the
 * total, decides (domain/entitlement-decision.ts) and writes it with no
 * `await` in between, so requests cannot interleave inside that step and a
 * HARD limit can never be passed, however many arrive at once. The write is
 * durable before the caller hears back (the runtime holds the response
 * until storage has committed).
 *
 * Cold start. A window with no total yet (first use, an object whose rows
 * were pruned, or usage stored before the object existed) is seeded before
 * the first decision on it: inside the flush single-flight (so no flush is
 * being applied meanwhile), from the tenant's usage_aggregates of every
 * subscription in the window plus the units still held here; concurrent
 * callers share the one seed.
 *
 * The single path into usage_aggregates. Every unit of a tenant's usage,
 * whether it arrives by `consume` (HTTP, checked against the limit) or by
 * `record` (events the usage pipeline validated; never refused, each event
 * id counted once), goes through this object and only this object writes
 * the tenant's aggregates:
 *   1. count: the units are added to `used` and `unflushed` of the window's
 *      row in one synchronous storage step;
 *   2. claim: the flush (an alarm a moment later, batching many calls) moves
 *      the unflushed units of up to FLUSH_MAX_WINDOWS rows into a `flushes`
 *      row with a fresh id, again in one synchronous step;
 *   3. apply: one D1 batch adds each window's units to usage_aggregates,
 *      every increment conditional on the flush id being absent from
 *      `usage_flushes`, and records the id in the same batch
 *      (usage/aggregates-storage.ts, through usage/log/flush-claims.ts). Then
 *      the `flushes` row is deleted.
 * A failure at 3 leaves the `flushes` row, which is retried with the same id
 * (backoff, forever), so units are never lost; a retry after a commit whose
 * answer was lost changes nothing, so units are never added twice. Units
 * are either unflushed, in exactly one pending flush, or in D1.
 *
 * The usage pipeline: its aggregation stage (usage-consumer worker, with a
 * Durable Object binding to this class, `script_name = "billing"`) calls
 * `record` with entries that name their logged event (`usageEventId`),
 * the event's subscription and the window computed with `resetWindowAt`
 * (domain/billing-period.ts) from the snapshot's reset period and the
 * event's timestamp, and acks the message once `record` returns: the units
 * are durable here, and the event id is remembered for
 * USAGE_COUNTER_ID_RETENTION_SECONDS (an hour) so a redelivery is counted as
 * a duplicate. That memory is a fast path, not the guarantee of counting
 * once: a repeat that arrives after it (a dead letter retried days later)
 * is refused by the claim below.
 * Such units wait in `pending_events` rather than in `unflushed`: the flush
 * carries the events as claims, and step 3 claims them in the tenant's
 * usage log before the D1 batch (usage/log/flush-claims.ts), adding to each
 * window only the units of the events it claimed, then marks them
 * AGGREGATED. An event that could not be claimed (already AGGREGATED, e.g.
 * counted before this object forgot its id, or REJECTED meanwhile) has its
 * units taken back out of `used`, so the counter and the aggregates agree. Nothing else may write
 * usage_aggregates, or the counters and the aggregates would drift apart.
 *
 * Parts. This class keeps the order of the steps (what is awaited before
 * a synchronous step, what happens inside it); the state and the rules of
 * each concern live beside it: schema.ts (tables and migrations),
 * tenant-state.ts (the tenant and its subscription state), window-keys.ts
 * and window-counts.ts (the windows and their totals), record-batch.ts and
 * recorded-ids.ts (a record batch, the ids it remembers), consume-requests.ts
 * (answers of request ids and Idempotency-Keys), flush.ts (steps 2 and 3),
 * credit-balance.ts and recorded-draws.ts (prepaid credits, with
 * credit-tables.ts, credit-flush.ts, credit-take-backs.ts, credit-top-up.ts),
 * progressive-watch.ts, usage-notices.ts over usage-alert-watch.ts and
 * tenant-event-outbox.ts (tenant events), usage-hours.ts (usage_hourly).
 * Work the counter only records and a service does (an automatic top-up,
 * a progressive invoice) goes through CounterEffects (effects.ts), which
 * the worker's root supplies by extending this class.
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

type PreparedConsume =
  | { kind: "answered"; result: ConsumeResult }
  | { kind: "counted"; snapshot: SnapshotTerms; key: WindowKey; terms: CreditTerms | null };

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
  /** USAGE_COUNTER_ID_RETENTION_SECONDS: how long recorded event ids are remembered. */
  private readonly recordedIdRetentionMs = counterIdRetentionMs(
    this.env.USAGE_COUNTER_ID_RETENTION_SECONDS,
  );

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
    this.flushes = new CounterFlushes(
      sql,
      this.unflushedHours,
      (flush) => applyCounterFlush(this.env, flush),
      {
        claimed: (usageEventIds) => this.recordedDraws.claimed(usageEventIds),
        // What an unclaimed event's units drew and cost goes back with them.
        unclaimed: (row) => {
          this.recordedDraws.returned(row.usage_event_id);
          this.windows.takeBack(row);
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
    this.tenant.bind(input.tenantId);
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
    if (!credit) return outcome;
    if (!credit.exhausted || !outcome.allowed)
      return { ...outcome, creditBalance: credit.creditBalance };
    return {
      ...outcome,
      allowed: false,
      reason: "Credit balance exhausted",
      code: CREDITS_EXHAUSTED,
      creditBalance: credit.creditBalance,
    };
  }

  /** Check and take `amount` units in one step; refused units are not counted. */
  async consume(raw: ConsumeInput): Promise<ConsumeResult> {
    const input = consumeInput.parse(raw);
    this.tenant.bind(input.tenantId);
    const answered = this.requests.answered(input.requestId);
    if (answered) return answered;
    const now = new Date(input.nowMs ?? Date.now());
    const prepared = await this.prepareConsume(input.tenantId, input.featureKey, now);
    if (prepared.kind === "answered") return prepared.result;

    // From here to the return: no await. Read, decide and write are one step.
    const repeated = this.requests.answered(input.requestId);
    if (repeated) return repeated;
    const result = this.decideConsume(input, prepared, now);
    if (input.requestId !== undefined) {
      this.requests.remember(input.requestId, result);
      // Refusals schedule no flush; the alarm must still come to prune the ids.
      this.scheduleFlush();
    }
    return result;
  }

  /**
   * A consume with an Idempotency-Key (see keyedConsumeInput): the answer
   * and the key's record are stored in the same synchronous step as the
   * units, so there is no moment where units were taken and the answer not
   * kept, and no write anywhere else.
   */
  async consumeKeyed(raw: KeyedConsumeInput): Promise<KeyedConsumeResult> {
    const input = keyedConsumeInput.parse(raw);
    this.tenant.bind(input.tenantId);
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
      // From here to the return: no await.
      const result =
        prepared.kind === "answered" ? prepared.result : this.decideConsume(input, prepared, now);
      this.requests.rememberKeyed(input, result);
      // Refusals schedule no flush; the alarm must still come to prune the records.
      this.scheduleFlush();
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
    await this.usageAlerts.ready(tenantId);
    await this.creditGrants.ready(tenantId);
    if (this.windows.usedIn(key) === undefined) await this.seed(key);
    return { kind: "counted", snapshot, key, terms: creditTermsOf(state, this.tenant.id()) };
  }

  /** The synchronous part of `consume`: decide on the counter and take the units. */
  private decideConsume(
    input: { featureKey: string; amount: number; properties?: EventProperties | undefined },
    { snapshot, key, terms }: Extract<PreparedConsume, { kind: "counted" }>,
    now: Date,
  ): ConsumeResult {
    const feature = input.featureKey;
    const used = this.windows.usedIn(key);
    if (used === undefined) throw new Error("counter missing after seeding");
    const metered = meteredConsume(this.meterGroups, snapshot, key, input, used);
    if (metered.kind === "answered") return metered.result;
    const amount = metered.kind === "metered" ? metered.units : input.amount;
    const decision = consumeDecision(snapshot, used, amount);
    switch (decision.kind) {
      case "not_consumable":
        return { status: "not_consumable", feature };
      case "quota_exceeded":
        this.notices.refused(key, { ...decision, requested: amount }, now);
        return {
          status: "quota_exceeded",
          feature,
          limit: decision.limit,
          used: decision.used,
          requested: amount,
        };
      case "counter_overflow":
        return { status: "counter_overflow", feature, used: decision.used };
      case "consumed": {
        const reading = metered.kind === "metered" ? metered.reading : null;
        const priced = reading
          ? this.meterGroups.pricedAs(key, snapshot, reading)
          : { snapshot, usedBefore: this.windows.attributedUsed(key) };
        const refused =
          terms &&
          this.creditGrants.payForConsume(
            terms,
            priced.snapshot,
            drawTarget(key),
            priced.usedBefore,
            amount,
            now,
          );
        if (refused) return refused;
        if (reading) {
          const placed = this.meterGroups.place(key, reading);
          this.meterGroups.addUnits(key, placed.groupKey, amount);
          this.meterGroups.addDirect(key, placed, now.toISOString());
        }
        this.windows.add(key, amount, now.toISOString(), amount);
        this.unflushedHours.add(key, amount, now.toISOString());
        this.notices.counted(snapshot, key, decision.used, now);
        this.scheduleFlush();
        return {
          status: "consumed",
          feature,
          type: snapshot.featureType,
          consumed: amount,
          used: decision.used,
          limit: decision.limit,
          remaining: decision.remaining,
          overage: decision.overage,
          resetAt: key.window.end?.toISOString() ?? null,
        };
      }
    }
  }

  /**
   * Counts usage the pipeline already accepted. Each event id counts once
   * for as long as it is remembered; a repeat is reported as a duplicate.
   */
  async record(raw: RecordInput): Promise<RecordResult> {
    const input = recordInput.parse(raw);
    this.tenant.bind(input.tenantId);
    const entryKeys = input.entries.map(entryWindowKey);
    const distinct = new Map(entryKeys.map((key) => [windowId(key), key]));
    await Promise.all(
      [...distinct.values()]
        .filter((key) => this.windows.usedIn(key) === undefined)
        .map((key) => this.seed(key)),
    );
    const watchedTerms = await this.notices.watchedTerms(input.tenantId, distinct.values());
    const creditState = await this.recordedDraws.ready(input.tenantId);
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
    }
    this.unflushedHours.addAll(batch.directHours);
    this.flushes.queueEvents(batch.pendingRows);
  }

  /** Drops the cached subscription state; the subscription service calls it after every change. */
  refreshEntitlements(): void {
    this.tenant.refresh();
  }

  /** Drops the cached alert set; the usage-alert routes call it after every change. */
  refreshUsageAlerts(): void {
    this.usageAlerts.refresh();
  }

  /** Writes everything counted so far to usage_aggregates now (the alarm does it a moment later anyway). */
  async flush(raw: FlushInput): Promise<FlushResult> {
    const input = flushInput.parse(raw);
    this.tenant.bind(input.tenantId);
    const result = await this.flushPending();
    await this.creditGrants.flush(input.tenantId);
    return result;
  }

  /** Drops the cached credit grants; the credits service calls it after every change in D1. */
  refreshCredits(): void {
    this.creditGrants.refresh();
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
    if (this.flushes.hasPending() || this.creditGrants.hasWork() || this.progressive.hasWork()) {
      this.scheduleFlush();
    } else if (this.tenantEvents.hasUnsent()) this.scheduleFlush(this.tenantEvents.retryDelayMs());
  }

  // --- flushing and cold start -----------------------------------------

  private scheduleFlush(delayMs: number = this.flushDelayMs): void {
    if (this.alarmPending) return;
    this.alarmPending = true;
    void this.ctx.storage.setAlarm(Date.now() + delayMs);
  }

  /** Single-flight: a second caller waits for the running flush, then runs its own pass. */
  private flushPending(): Promise<FlushResult> {
    return this.flushing.run(() => this.flushes.run(this.tenant.id()));
  }

  /**
   * Creates the window's total (cold start) and resolves to it. Runs inside
   * the flush single-flight after a flush, so no flush is half-applied: the
   * total is the tenant's stored aggregates of the window plus the units
   * this object still holds for it (unflushed, in pending events, in a
   * flush not applied yet). Concurrent callers share one seed; if a total
   * appeared meanwhile, it is kept.
   */
  private seed(key: WindowKey): Promise<number> {
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
    this.windows.forgetEnded(new Date(nowMs - WINDOW_RETENTION_MS));
    this.meterGroups.sweep(new Date(nowMs - WINDOW_RETENTION_MS).toISOString());
    this.requests.prune(nowMs);
    return true;
  }

  /** The alarm's sweep of remembered event ids (see RecordedEventIds.forgetExpired). */
  private forgetRecordedIds(nowMs: number): number {
    return this.recordedIds.forgetExpired(nowMs, this.recordedIdRetentionMs);
  }
}
