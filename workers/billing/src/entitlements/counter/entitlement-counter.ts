import { DurableObject } from "cloudflare:workers";
import { type ResetWindow, resetWindowAt } from "@edge-platform/shared/billing/billing-period";
import {
  type CheckInput,
  type CheckResult,
  CONSUME_REQUEST_RETENTION_MS,
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
  KEYED_CONSUME_TTL_MS,
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
import { database } from "@edge-platform/shared/db/client";
import {
  loadTenantEntitlementState,
  type TenantEntitlementState,
} from "@edge-platform/shared/db/entitlement-state";
import { startAutoTopUp } from "../../credits/index.ts";
import { issueProgressiveInvoice } from "../../invoicing/index.ts";
import type { CountedWindow } from "../../notifications/index.ts";
import { SingleFlight } from "../../platform/index.ts";
import {
  applyCounterFlush,
  readTenantWindowUsage,
  type UsageFlushEventClaim,
  type UsageFlushWindowDelta,
} from "../../usage/index.ts";
import { counterIdRetentionMs, flushIntervalMs } from "../domain/usage-counter-settings.ts";
import {
  CREDITS_EXHAUSTED,
  CreditBalance,
  type CreditTerms,
  creditTermsOf,
} from "./credit-balance.ts";
import { ProgressiveWatch } from "./progressive-watch.ts";
import { TenantEventOutbox } from "./tenant-event-outbox.ts";
import { UsageAlertWatch } from "./usage-alert-watch.ts";
import { UnflushedUsageHours } from "./usage-hours.ts";

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
 */

const FLUSH_MAX_WINDOWS = 40;
/**
 * Event rows claimed by one flush (one JSON parameter of the D1 batch, about
 * 40 B per id). While ingestion keeps D1 busy, each flush round waits its
 * turn at the single writer, so the rounds, not the rows, bound the flush.
 */
const FLUSH_MAX_EVENTS = 5000;
const FLUSH_MAX_ROUNDS = 20;
const FLUSH_RETRY_MAX_MS = 60_000;
/** Subscription state is re-read at least this often even without a refresh call. */
const ENTITLEMENTS_TTL_MS = 30_000;
/** Counters are kept this long after their window ends. */
const WINDOW_RETENTION_MS = 35 * 86_400_000;
/**
 * Old counters and request records are swept at most this often: the
 * flush alarm comes every USAGE_FLUSH_INTERVAL_MS under traffic, and a
 * sweep on each would scan the tables several times a second for rows that
 * age by the day.
 */
const PRUNE_INTERVAL_MS = 60_000;
/**
 * Remembered event ids forgotten per alarm at most: every alarm forgets
 * what expired since the last one (one id per recorded event), so the
 * memory stays at its window however busy the tenant, and no alarm holds
 * the object long.
 */
const RECORDED_PRUNE_BATCH = 20_000;

interface CounterRow extends Record<string, SqlStorageValue> {
  used: number;
}

interface FlushRow extends Record<string, SqlStorageValue> {
  id: string;
  deltas: string;
  claims: string | null;
  attempts: number;
}

interface PendingEventRow extends Record<string, SqlStorageValue> {
  usage_event_id: string;
  subscription_id: string;
  feature_key: string;
  period_key: string;
  period_start: string;
  period_end: string | null;
  amount: number;
  occurred_at: string;
}

/** A batch's units for one attribution row (subscription, feature, window). */
interface CountedUnits {
  key: WindowKey;
  /** Units of logged events (claimed by a flush). */
  claimed: number;
  /** Units with no row (added to `unflushed`). */
  direct: number;
  lastAt: string;
}

interface PendingEventInsert {
  id: string;
  subscriptionId: string;
  featureKey: string;
  periodKey: string;
  periodStart: string;
  periodEnd: string | null;
  amount: number;
  occurredAt: string;
}

interface CachedEntitlements {
  state: TenantEntitlementState;
  loadedAt: number;
}

interface WindowKey {
  subscriptionId: string;
  featureKey: string;
  window: ResetWindow;
}

export class EntitlementCounter extends DurableObject<Env> implements EntitlementCounterRpc {
  private readonly sql: SqlStorage;
  private cached: CachedEntitlements | null = null;
  private loading: Promise<TenantEntitlementState> | null = null;
  /** Bumped by `refreshEntitlements`, so a load that started earlier is not cached. */
  private generation = 0;
  private readonly seeding = new Map<string, Promise<void>>();
  private readonly flushing = new SingleFlight<FlushResult>();
  private alarmPending = false;
  /** When `prune` last swept (epoch ms; 0: not yet in this instance). */
  private prunedAtMs = 0;
  private tenantId: string | undefined;
  /** usage.threshold_reached and quota.exhausted: decided here, sent from here (see its module). */
  private readonly tenantEvents: TenantEventOutbox;
  private readonly usageAlerts: UsageAlertWatch;
  /** The hour of each unflushed direct unit, for usage_hourly (see its module). */
  private readonly unflushedHours: UnflushedUsageHours;
  /** Keyed consumes being decided (request id -> fingerprint); a repeat meanwhile is told so. */
  private readonly keyedInFlight = new Map<string, string>();
  /** Prepaid credits: the balance and its grants, drawn in the count's step (see its module). */
  private readonly creditGrants: CreditBalance;
  /** Progressive billing: invoices issued when the period's priced usage passes a threshold. */
  private readonly progressive: ProgressiveWatch;
  /**
   * `window_totals.used` and `counters.used` as the last statement on each
   * row read or wrote them: every consume reads both, and only this
   * object's statements change them (each one updates or drops its entry).
   */
  private readonly totalsRead = new Map<string, number>();
  private readonly attributedRead = new Map<string, number>();
  /** USAGE_FLUSH_INTERVAL_MS: how long units gather before a flush writes them to D1. */
  private readonly flushDelayMs = flushIntervalMs(this.env.USAGE_FLUSH_INTERVAL_MS);
  /** USAGE_COUNTER_ID_RETENTION_SECONDS: how long recorded event ids are remembered. */
  private readonly recordedIdRetentionMs = counterIdRetentionMs(
    this.env.USAGE_COUNTER_ID_RETENTION_SECONDS,
  );

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS counters (
        subscription_id TEXT NOT NULL,
        feature_key TEXT NOT NULL,
        period_key TEXT NOT NULL,
        period_start TEXT NOT NULL,
        period_end TEXT,
        used INTEGER NOT NULL,
        unflushed INTEGER NOT NULL DEFAULT 0,
        last_event_at TEXT,
        PRIMARY KEY (subscription_id, feature_key, period_key)
      );
      CREATE INDEX IF NOT EXISTS counters_unflushed_idx ON counters (unflushed) WHERE unflushed > 0;
      CREATE TABLE IF NOT EXISTS window_totals (
        feature_key TEXT NOT NULL,
        period_key TEXT NOT NULL,
        period_end TEXT,
        used INTEGER NOT NULL,
        PRIMARY KEY (feature_key, period_key)
      );
      CREATE TABLE IF NOT EXISTS flushes (
        id TEXT PRIMARY KEY,
        deltas TEXT NOT NULL,
        claimed_at INTEGER NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_error TEXT
      );
      CREATE TABLE IF NOT EXISTS recorded_events (
        event_id TEXT PRIMARY KEY,
        recorded_at INTEGER NOT NULL
      );
      CREATE TABLE IF NOT EXISTS pending_events (
        usage_event_id TEXT PRIMARY KEY,
        subscription_id TEXT NOT NULL,
        feature_key TEXT NOT NULL,
        period_key TEXT NOT NULL,
        period_start TEXT NOT NULL,
        period_end TEXT,
        amount INTEGER NOT NULL,
        occurred_at TEXT NOT NULL,
        flush_id TEXT
      );
      CREATE INDEX IF NOT EXISTS pending_events_flush_idx ON pending_events (flush_id);
      CREATE TABLE IF NOT EXISTS consume_requests (
        request_id TEXT PRIMARY KEY,
        result TEXT NOT NULL,
        recorded_at INTEGER NOT NULL
      );
    `);
    // Objects created before the pipeline have a flushes table without claims.
    const flushColumns = this.sql
      .exec<{ name: string }>("SELECT name FROM pragma_table_info('flushes')")
      .toArray();
    if (!flushColumns.some((column) => column.name === "claims")) {
      this.sql.exec("ALTER TABLE flushes ADD COLUMN claims TEXT");
    }
    // Objects created before keyed consumes kept only the result of a request id.
    const requestColumns = this.sql
      .exec<{ name: string }>("SELECT name FROM pragma_table_info('consume_requests')")
      .toArray();
    if (!requestColumns.some((column) => column.name === "request_hash")) {
      this.sql.exec(`
        ALTER TABLE consume_requests ADD COLUMN request_hash TEXT;
        ALTER TABLE consume_requests ADD COLUMN correlation_id TEXT;
      `);
    }
    this.tenantEvents = new TenantEventOutbox(this.sql, () => this.env.TENANT_EVENTS_QUEUE);
    this.usageAlerts = new UsageAlertWatch(env, this.tenantEvents);
    this.progressive = new ProgressiveWatch(
      this.sql,
      (tenantId, request) => issueProgressiveInvoice(this.env, tenantId, request),
      () => this.scheduleFlush(),
    );
    this.creditGrants = new CreditBalance(
      this.sql,
      () => this.env.DB,
      (tenantId, request) => startAutoTopUp(this.env, tenantId, request),
      () => this.scheduleFlush(),
      (terms, cost) => this.progressive.counted(terms, cost),
      (event) => {
        if (this.tenantEvents.add([event], new Date().toISOString()) > 0) this.sendTenantEvents();
      },
    );
    this.unflushedHours = new UnflushedUsageHours(this.sql);
  }

  /** The entitlement check: never changes a counter. */
  async check(raw: CheckInput): Promise<CheckResult> {
    const input = checkInput.parse(raw);
    this.bindTenant(input.tenantId);
    const now = new Date(input.nowMs ?? Date.now());
    const state = await this.entitlements();
    const found = lookupEntitlement(
      subscriptionAccess(state.subscription, now),
      state.snapshots,
      input.featureKey,
    );
    if (found.kind === "denied") return deniedCheck(input.featureKey, found.reason);
    if (!isCounted(found.snapshot) || !state.subscription) {
      return checkOutcome(found.snapshot, 0, null);
    }
    const key = this.windowKey(state, found.snapshot, now);
    const used = this.usedIn(key) ?? (await this.seed(key));
    await this.creditGrants.ready(input.tenantId);
    const outcome = checkOutcome(found.snapshot, used, key.window.end?.toISOString() ?? null);
    const terms = creditTermsOf(state, this.boundTenant());
    const credit =
      terms &&
      this.creditGrants.checked(
        terms,
        found.snapshot,
        drawTarget(key),
        this.attributedUsed(key),
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
    this.bindTenant(input.tenantId);
    const answered = this.rememberedConsume(input.requestId);
    if (answered) return answered;
    const now = new Date(input.nowMs ?? Date.now());
    const prepared = await this.prepareConsume(input.tenantId, input.featureKey, now);
    if (prepared.kind === "answered") return prepared.result;

    // From here to the return: no await. Read, decide and write are one step.
    const repeated = this.rememberedConsume(input.requestId);
    if (repeated) return repeated;
    const result = this.decideConsume(input, prepared, now);
    this.rememberConsume(input.requestId, result);
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
    this.bindTenant(input.tenantId);
    const earlier = this.keyedAnswer(input);
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
      this.rememberKeyed(input, result);
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
  ): Promise<
    | { kind: "answered"; result: ConsumeResult }
    | { kind: "counted"; snapshot: SnapshotTerms; key: WindowKey; terms: CreditTerms | null }
  > {
    const state = await this.entitlements();
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
    const key = this.windowKey(state, snapshot, now);
    await this.usageAlerts.ready(tenantId);
    await this.creditGrants.ready(tenantId);
    if (this.usedIn(key) === undefined) await this.seed(key);
    return { kind: "counted", snapshot, key, terms: creditTermsOf(state, this.boundTenant()) };
  }

  /** The synchronous part of `consume`: decide on the counter and take the units. */
  private decideConsume(
    input: { featureKey: string; amount: number },
    {
      snapshot,
      key,
      terms,
    }: { snapshot: SnapshotTerms; key: WindowKey; terms: CreditTerms | null },
    now: Date,
  ): ConsumeResult {
    const feature = input.featureKey;
    const used = this.usedIn(key);
    if (used === undefined) throw new Error("counter missing after seeding");
    const decision = consumeDecision(snapshot, used, input.amount);
    switch (decision.kind) {
      case "not_consumable":
        return { status: "not_consumable", feature };
      case "quota_exceeded":
        this.noticeRefusal(key, { ...decision, requested: input.amount }, now);
        return {
          status: "quota_exceeded",
          feature,
          limit: decision.limit,
          used: decision.used,
          requested: input.amount,
        };
      case "counter_overflow":
        return { status: "counter_overflow", feature, used: decision.used };
      case "consumed": {
        const refused =
          terms &&
          this.creditGrants.payForConsume(
            terms,
            snapshot,
            drawTarget(key),
            this.attributedUsed(key),
            input.amount,
            now,
          );
        if (refused) return refused;
        this.addUnits(key, input.amount, now.toISOString(), input.amount);
        this.unflushedHours.add(key, input.amount, now.toISOString());
        this.noticeCount(snapshot, key, decision.used, now);
        this.scheduleFlush();
        return {
          status: "consumed",
          feature,
          type: snapshot.featureType,
          consumed: input.amount,
          used: decision.used,
          limit: decision.limit,
          remaining: decision.remaining,
          overage: decision.overage,
          resetAt: key.window.end?.toISOString() ?? null,
        };
      }
    }
  }

  /** The stored result of an earlier consume with this request id, if any. */
  private rememberedConsume(requestId: string | undefined): ConsumeResult | undefined {
    if (requestId === undefined) return undefined;
    const row = this.sql
      .exec<{ result: string }>(
        "SELECT result FROM consume_requests WHERE request_id = ?",
        requestId,
      )
      .toArray()[0];
    return row ? (JSON.parse(row.result) as ConsumeResult) : undefined;
  }

  private rememberConsume(requestId: string | undefined, result: ConsumeResult): void {
    if (requestId === undefined) return;
    this.sql.exec(
      "INSERT INTO consume_requests (request_id, result, recorded_at) VALUES (?, ?, ?)",
      requestId,
      JSON.stringify(result),
      Date.now(),
    );
    // Refusals schedule no flush; the alarm must still come to prune the ids.
    this.scheduleFlush();
  }

  /** The stored answer of a keyed consume, or the conflict; undefined when the key is new or expired. */
  private keyedAnswer(input: {
    requestId: string;
    requestHash: string;
    atMs: number;
  }): KeyedConsumeResult | undefined {
    const row = this.sql
      .exec<{
        result: string;
        request_hash: string | null;
        correlation_id: string | null;
        recorded_at: number;
      }>(
        "SELECT result, request_hash, correlation_id, recorded_at FROM consume_requests WHERE request_id = ?",
        input.requestId,
      )
      .toArray()[0];
    if (!row || input.atMs - row.recorded_at >= KEYED_CONSUME_TTL_MS) return undefined;
    if (row.request_hash !== input.requestHash) return { kind: "key_reused" };
    return {
      kind: "answered",
      result: JSON.parse(row.result) as ConsumeResult,
      replayed: true,
      correlationId: row.correlation_id ?? "unknown",
      atMs: row.recorded_at,
    };
  }

  /** The key's record, replacing one that expired. */
  private rememberKeyed(
    input: { requestId: string; requestHash: string; correlationId: string; atMs: number },
    result: ConsumeResult,
  ): void {
    this.sql.exec(
      `INSERT INTO consume_requests (request_id, result, recorded_at, request_hash, correlation_id)
       VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (request_id) DO UPDATE SET
         result = excluded.result, recorded_at = excluded.recorded_at,
         request_hash = excluded.request_hash, correlation_id = excluded.correlation_id`,
      input.requestId,
      JSON.stringify(result),
      input.atMs,
      input.requestHash,
      input.correlationId,
    );
    // Refusals schedule no flush; the alarm must still come to prune the records.
    this.scheduleFlush();
  }

  /**
   * Counts usage the pipeline already accepted. Each event id counts once
   * for as long as it is remembered; a repeat is reported as a duplicate.
   */
  async record(raw: RecordInput): Promise<RecordResult> {
    const input = recordInput.parse(raw);
    this.bindTenant(input.tenantId);
    const entryKeys = input.entries.map(
      (entry): WindowKey => ({
        subscriptionId: entry.subscriptionId,
        featureKey: entry.featureKey,
        window: {
          key: entry.periodKey,
          start: new Date(entry.periodStart),
          end: entry.periodEnd ? new Date(entry.periodEnd) : null,
        },
      }),
    );
    const distinct = new Map(entryKeys.map((key) => [windowId(key), key]));
    await Promise.all(
      [...distinct.values()]
        .filter((key) => this.usedIn(key) === undefined)
        .map((key) => this.seed(key)),
    );
    const watchedTerms = await this.watchedTerms(input.tenantId, distinct.values());
    const creditState = await this.creditState(input.tenantId);

    // One synchronous step for the whole batch: dedupe, count, remember.
    // The ids are remembered by one statement (the ids it inserted are the
    // new ones), the units added once per attribution row and the event
    // rows queued by one statement: a statement per event cost more than
    // the rest of the pipeline's work on the event.
    const nowMs = Date.now();
    const fresh = new Set(
      this.sql
        .exec<{ event_id: string }>(
          `INSERT INTO recorded_events (event_id, recorded_at)
           SELECT value, ? FROM json_each(?) WHERE true
           ON CONFLICT (event_id) DO NOTHING
           RETURNING event_id`,
          nowMs,
          JSON.stringify(input.entries.map((entry) => entry.eventId)),
        )
        .toArray()
        .map((row) => row.event_id),
    );
    let recorded = 0;
    let duplicates = 0;
    const counted = new Map<string, CountedUnits>();
    const pendingRows: PendingEventInsert[] = [];
    const directHours: { key: WindowKey; units: number; at: string }[] = [];
    input.entries.forEach((entry, index) => {
      // The first entry of an id takes it; a repeat inside the batch is a duplicate too.
      if (!fresh.delete(entry.eventId)) {
        duplicates++;
        return;
      }
      const key = entryKeys[index] as WindowKey;
      const id = attributionId(key);
      const units = counted.get(id) ?? { key, claimed: 0, direct: 0, lastAt: "" };
      if (entry.usageEventId) {
        // Each logged event draws on its own: its units may be taken back, and its draws with them.
        if (creditState) {
          const draws = this.payForRecorded(creditState, key, units.claimed, entry.amount);
          if (draws.length > 0) {
            this.creditGrants.rememberEventDraws(entry.usageEventId, drawTarget(key), draws);
          }
        }
        units.claimed += entry.amount;
        pendingRows.push({
          id: entry.usageEventId,
          subscriptionId: key.subscriptionId,
          featureKey: key.featureKey,
          periodKey: key.window.key,
          periodStart: key.window.start.toISOString(),
          periodEnd: key.window.end?.toISOString() ?? null,
          amount: entry.amount,
          occurredAt: entry.occurredAt,
        });
      } else {
        units.direct += entry.amount;
        directHours.push({ key, units: entry.amount, at: entry.occurredAt });
      }
      if (entry.occurredAt > units.lastAt) units.lastAt = entry.occurredAt;
      counted.set(id, units);
      recorded++;
    });
    for (const units of counted.values()) {
      if (creditState && units.direct > 0) {
        this.payForRecorded(creditState, units.key, units.claimed, units.direct);
      }
      // Claimed units wait in pending_events (queuePendingEvents), not in `unflushed`.
      const amount = units.claimed + units.direct;
      if (amount > 0) this.addUnits(units.key, amount, units.lastAt, units.direct);
    }
    this.unflushedHours.addAll(directHours);
    this.queuePendingEvents(pendingRows);
    this.noticeRecorded(watchedTerms, distinct.values());
    // A repeat may be a re-drive of an event whose flush this object still
    // owes (its alarm lost in a restart): make sure a flush comes.
    if (recorded > 0 || duplicates > 0) this.scheduleFlush();
    return { recorded, duplicates };
  }

  /** Drops the cached subscription state; the subscription service calls it after every change. */
  refreshEntitlements(): void {
    this.generation++;
    this.cached = null;
    this.loading = null;
  }

  /** Drops the cached alert set; the usage-alert routes call it after every change. */
  refreshUsageAlerts(): void {
    this.usageAlerts.refresh();
  }

  /** Writes everything counted so far to usage_aggregates now (the alarm does it a moment later anyway). */
  async flush(raw: FlushInput): Promise<FlushResult> {
    const input = flushInput.parse(raw);
    this.bindTenant(input.tenantId);
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
    this.bindTenant(input.tenantId);
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
    this.bindTenant(input.tenantId);
    await this.creditGrants.ready(input.tenantId);
    const held = this.creditGrants.settle(input.grantId, input.status);
    this.scheduleFlush();
    return held;
  }

  override async alarm(): Promise<void> {
    this.alarmPending = false;
    await this.tenantEvents.send();
    try {
      await this.flushPending();
      const tenantId = this.boundTenant();
      if (tenantId) {
        await this.creditGrants.flush(tenantId);
        await this.creditGrants.runTopUp(tenantId);
        await this.progressive.run(tenantId);
      }
    } catch (error) {
      const attempts =
        this.sql.exec<{ attempts: number }>("SELECT max(attempts) AS attempts FROM flushes").one()
          .attempts ?? 1;
      const delay = Math.min(FLUSH_RETRY_MAX_MS, 1000 * 2 ** Math.min(attempts, 16));
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
    if (this.hasPendingUnits() || this.creditGrants.hasWork() || this.progressive.hasWork()) {
      this.scheduleFlush();
    } else if (this.tenantEvents.hasUnsent()) this.scheduleFlush(this.tenantEvents.retryDelayMs());
  }

  // --- prepaid credits (rules in credits/domain/credits.ts) ----------------------

  /** Units the window's subscription used in it (what its invoice prices). */
  private attributedUsed(key: WindowKey): number {
    const id = attributionId(key);
    const read = this.attributedRead.get(id);
    if (read !== undefined) return read;
    const used = this.sql
      .exec<CounterRow>(
        "SELECT used FROM counters WHERE subscription_id = ? AND feature_key = ? AND period_key = ?",
        key.subscriptionId,
        key.featureKey,
        key.window.key,
      )
      .toArray()[0]?.used;
    if (used !== undefined) this.attributedRead.set(id, used);
    return used ?? 0;
  }

  /**
   * Before a record batch's synchronous step: the grants and the
   * subscription's terms (cached), or null when they cannot be read:
   * pipeline usage is never refused, the invoice bills it in full.
   */
  private async creditState(tenantId: string): Promise<TenantEntitlementState | null> {
    try {
      await this.creditGrants.ready(tenantId);
      return await this.entitlements();
    } catch (error) {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "credits skipped for a record batch",
          error: String(error),
        }),
      );
      return null;
    }
  }

  /**
   * Synchronous, before the units are added: the current subscription's
   * priced usage draws the balance. `counted` units of the batch come
   * before these in the window. Answers the draws.
   */
  private payForRecorded(
    state: TenantEntitlementState,
    key: WindowKey,
    counted: number,
    amount: number,
  ): { grantId: string; amount: number }[] {
    const terms = creditTermsOf(state, this.boundTenant());
    const snapshot = state.snapshots.get(key.featureKey);
    if (!terms || !snapshot || state.subscription?.id !== key.subscriptionId) return [];
    return this.creditGrants.payForRecorded(
      terms,
      snapshot,
      drawTarget(key),
      this.attributedUsed(key) + counted,
      amount,
      new Date(),
    );
  }

  // --- tenant events (usage alerts, quota.exhausted) --------------------

  /** Synchronous, after a consume counted: store what the new total reaches, then send it. */
  private noticeCount(snapshot: SnapshotTerms, key: WindowKey, used: number, now: Date): void {
    const tenantId = this.boundTenant();
    if (!tenantId) return;
    if (this.usageAlerts.counted(tenantId, snapshot, countedWindow(key), used, now) > 0) {
      this.sendTenantEvents();
    }
  }

  /** Synchronous, after a HARD limit refused a consume: quota.exhausted, once per window. */
  private noticeRefusal(
    key: WindowKey,
    refusal: { limit: number; used: number; requested: number },
    now: Date,
  ): void {
    const tenantId = this.boundTenant();
    if (!tenantId) return;
    if (this.usageAlerts.refused(tenantId, countedWindow(key), refusal, now) > 0) {
      this.sendTenantEvents();
    }
  }

  /**
   * Before a record batch's synchronous step: the alert set, and the plan
   * terms of the watched features among the batch's windows (percent
   * thresholds need them); empty when no alert watches them.
   */
  private async watchedTerms(
    tenantId: string,
    keys: Iterable<WindowKey>,
  ): Promise<Map<string, SnapshotTerms>> {
    await this.usageAlerts.ready(tenantId);
    const watched = [...keys].filter((key) => this.usageAlerts.watches(key.featureKey));
    if (watched.length === 0) return new Map();
    let state: TenantEntitlementState;
    try {
      state = await this.entitlements();
    } catch (error) {
      // Pipeline usage is never refused: the alerts are checked again at the next count.
      console.error(
        JSON.stringify({
          level: "error",
          msg: "alerts skipped for a record batch",
          error: String(error),
        }),
      );
      return new Map();
    }
    return new Map(
      watched.flatMap((key) => {
        const snapshot = state.snapshots.get(key.featureKey);
        return snapshot ? [[key.featureKey, snapshot] as const] : [];
      }),
    );
  }

  /** Synchronous, after a record batch counted: each watched window's new total. */
  private noticeRecorded(terms: Map<string, SnapshotTerms>, keys: Iterable<WindowKey>): void {
    if (terms.size === 0) return;
    const now = new Date();
    for (const key of keys) {
      const snapshot = terms.get(key.featureKey);
      const used = this.usedIn(key);
      if (snapshot && used !== undefined) this.noticeCount(snapshot, key, used, now);
    }
  }

  /** Sends now (the runtime releases it once the count is stored); the alarm retries what fails. */
  private sendTenantEvents(): void {
    this.scheduleFlush();
    void this.tenantEvents.send();
  }

  // --- internals -------------------------------------------------------

  /** Remembers which tenant this object serves and refuses calls for any other. */
  private bindTenant(tenantId: string): void {
    const stored = this.boundTenant();
    if (stored === undefined) {
      this.sql.exec("INSERT INTO meta (key, value) VALUES ('tenant_id', ?)", tenantId);
      this.tenantId = tenantId;
    } else if (stored !== tenantId) {
      throw new Error("EntitlementCounter called for a tenant it does not serve");
    }
  }

  private boundTenant(): string | undefined {
    this.tenantId ??= this.sql
      .exec<{ value: string }>("SELECT value FROM meta WHERE key = 'tenant_id'")
      .toArray()[0]?.value;
    return this.tenantId;
  }

  /** The tenant's subscription and snapshots: cached, re-read after a refresh or the TTL. */
  private entitlements(): TenantEntitlementState | Promise<TenantEntitlementState> {
    const cached = this.cached;
    if (cached && Date.now() - cached.loadedAt < ENTITLEMENTS_TTL_MS) return cached.state;
    if (this.loading) return this.loading;
    const tenantId = this.boundTenant();
    if (!tenantId) throw new Error("EntitlementCounter has no tenant yet");
    const generation = this.generation;
    const loading = loadTenantEntitlementState(database(this.env.DB), tenantId)
      .then((state) => {
        if (generation === this.generation) this.cached = { state, loadedAt: Date.now() };
        return state;
      })
      .finally(() => {
        if (this.loading === loading) this.loading = null;
      });
    this.loading = loading;
    return loading;
  }

  private windowKey(state: TenantEntitlementState, snapshot: SnapshotTerms, now: Date): WindowKey {
    const subscription = state.subscription;
    if (!subscription) throw new Error("windowKey needs a subscription");
    return {
      subscriptionId: subscription.id,
      featureKey: snapshot.featureLookupKey,
      window: resetWindowAt(subscription, snapshot.resetPeriod ?? "NEVER", now),
    };
  }

  /** The tenant's units counted in the window, or undefined when the object has no total for it yet. */
  private usedIn(key: WindowKey): number | undefined {
    const id = windowId(key);
    const read = this.totalsRead.get(id);
    if (read !== undefined) return read;
    const used = this.sql
      .exec<CounterRow>(
        "SELECT used FROM window_totals WHERE feature_key = ? AND period_key = ?",
        key.featureKey,
        key.window.key,
      )
      .toArray()[0]?.used;
    if (used !== undefined) this.totalsRead.set(id, used);
    return used;
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
      const tenantId = this.boundTenant();
      if (!tenantId) throw new Error("EntitlementCounter has no tenant yet");
      seeding = this.flushing
        .run(async () => {
          const flushed = await this.runFlush();
          const stored = await readTenantWindowUsage(database(this.env.DB), {
            tenantId,
            featureLookupKey: key.featureKey,
            periodKey: key.window.key,
            // A cycle window's key is its whole start (the subscription's part may start later).
            windowStart: key.window.end ? key.window.key : key.window.start.toISOString(),
            windowEnd: key.window.end?.toISOString() ?? null,
          });
          this.sql.exec(
            `INSERT INTO window_totals (feature_key, period_key, period_end, used)
             VALUES (?, ?, ?, ?)
             ON CONFLICT DO NOTHING`,
            key.featureKey,
            key.window.key,
            key.window.end?.toISOString() ?? null,
            stored + this.heldUnits(key),
          );
          this.totalsRead.delete(id);
          return flushed;
        })
        .then(() => undefined)
        .finally(() => this.seeding.delete(id));
      this.seeding.set(id, seeding);
    }
    return seeding.then(() => {
      const used = this.usedIn(key);
      if (used === undefined) throw new Error("counter missing after seeding");
      return used;
    });
  }

  /** Units of the window this object holds that D1 does not have yet. */
  private heldUnits(key: WindowKey): number {
    const unflushed =
      this.sql
        .exec<{ units: number | null }>(
          "SELECT sum(unflushed) AS units FROM counters WHERE feature_key = ? AND period_key = ?",
          key.featureKey,
          key.window.key,
        )
        .one().units ?? 0;
    const events =
      this.sql
        .exec<{ units: number | null }>(
          "SELECT sum(amount) AS units FROM pending_events WHERE feature_key = ? AND period_key = ?",
          key.featureKey,
          key.window.key,
        )
        .one().units ?? 0;
    let inFlushes = 0;
    for (const row of this.sql.exec<{ deltas: string }>("SELECT deltas FROM flushes").toArray()) {
      for (const delta of JSON.parse(row.deltas) as UsageFlushWindowDelta[]) {
        if (delta.featureLookupKey === key.featureKey && delta.periodKey === key.window.key) {
          inFlushes += delta.amount;
        }
      }
    }
    return unflushed + events + inFlushes;
  }

  /** The window's total and the subscription's attribution row (created on first use). */
  private countInWindow(key: WindowKey, amount: number): void {
    keepReturnedUsed(
      this.totalsRead,
      windowId(key),
      this.sql.exec<CounterRow>(
        "UPDATE window_totals SET used = used + ? WHERE feature_key = ? AND period_key = ? RETURNING used",
        amount,
        key.featureKey,
        key.window.key,
      ),
    );
    // A row read or written before exists (prune, the only delete, forgets them all).
    if (this.attributedRead.has(attributionId(key))) return;
    this.sql.exec(
      `INSERT INTO counters (subscription_id, feature_key, period_key, period_start, period_end, used, unflushed)
       VALUES (?, ?, ?, ?, ?, 0, 0)
       ON CONFLICT DO NOTHING`,
      key.subscriptionId,
      key.featureKey,
      key.window.key,
      key.window.start.toISOString(),
      key.window.end?.toISOString() ?? null,
    );
  }

  /** `amount` more units in the window, `unflushed` of them for the next flush to take. */
  private addUnits(key: WindowKey, amount: number, at: string, unflushed: number): void {
    this.countInWindow(key, amount);
    keepReturnedUsed(
      this.attributedRead,
      attributionId(key),
      this.sql.exec<CounterRow>(
        `UPDATE counters
           SET used = used + ?1,
               unflushed = unflushed + ?2,
               last_event_at = max(coalesce(last_event_at, ''), ?3)
         WHERE subscription_id = ?4 AND feature_key = ?5 AND period_key = ?6
         RETURNING used`,
        amount,
        unflushed,
        at,
        key.subscriptionId,
        key.featureKey,
        key.window.key,
      ),
    );
  }

  /** The event rows a flush will claim, with the window each was counted in. */
  private queuePendingEvents(rows: PendingEventInsert[]): void {
    if (rows.length === 0) return;
    this.sql.exec(
      `INSERT INTO pending_events
         (usage_event_id, subscription_id, feature_key, period_key, period_start, period_end, amount, occurred_at)
       SELECT json_extract(value, '$.id'), json_extract(value, '$.subscriptionId'),
              json_extract(value, '$.featureKey'), json_extract(value, '$.periodKey'),
              json_extract(value, '$.periodStart'), json_extract(value, '$.periodEnd'),
              json_extract(value, '$.amount'), json_extract(value, '$.occurredAt')
         FROM json_each(?) WHERE true
       ON CONFLICT DO NOTHING`,
      JSON.stringify(rows),
    );
  }

  private hasPendingUnits(): boolean {
    return (
      this.sql.exec("SELECT 1 FROM counters WHERE unflushed > 0 LIMIT 1").toArray().length > 0 ||
      this.sql.exec("SELECT 1 FROM flushes LIMIT 1").toArray().length > 0 ||
      this.sql.exec("SELECT 1 FROM pending_events LIMIT 1").toArray().length > 0
    );
  }

  private scheduleFlush(delayMs: number = this.flushDelayMs): void {
    if (this.alarmPending) return;
    this.alarmPending = true;
    void this.ctx.storage.setAlarm(Date.now() + delayMs);
  }

  /** Single-flight: a second caller waits for the running flush, then runs its own pass. */
  private flushPending(): Promise<FlushResult> {
    return this.flushing.run(() => this.runFlush());
  }

  private async runFlush(): Promise<FlushResult> {
    const tenantId = this.boundTenant();
    let flushes = 0;
    let units = 0;
    if (tenantId) {
      for (let round = 0; round < FLUSH_MAX_ROUNDS; round++) {
        this.claimUnflushed();
        const next = this.sql
          .exec<FlushRow>(
            "SELECT id, deltas, claims, attempts FROM flushes ORDER BY claimed_at, id LIMIT 1",
          )
          .toArray()[0];
        if (!next) break;
        const deltas = JSON.parse(next.deltas) as UsageFlushWindowDelta[];
        const claims = next.claims ? (JSON.parse(next.claims) as UsageFlushEventClaim[]) : [];
        let claimed: string[];
        try {
          ({ claimedEventIds: claimed } = await applyCounterFlush(this.env, {
            id: next.id,
            tenantId,
            deltas,
            claims,
            hours: this.unflushedHours.ofFlush(next.id),
          }));
        } catch (error) {
          this.sql.exec(
            "UPDATE flushes SET attempts = attempts + 1, last_error = ? WHERE id = ?",
            String(error).slice(0, 500),
            next.id,
          );
          throw error;
        }
        // Synchronous from here: settle the claims, then drop the flush.
        const claimedIds = JSON.stringify(claimed);
        const eventUnits =
          this.sql
            .exec<{ units: number | null }>(
              `SELECT sum(amount) AS units FROM pending_events
                WHERE flush_id = ? AND usage_event_id IN (SELECT value FROM json_each(?))`,
              next.id,
              claimedIds,
            )
            .one().units ?? 0;
        this.creditGrants.forgetEventDraws(claimed);
        for (const row of this.sql
          .exec<PendingEventRow>(
            `SELECT * FROM pending_events
              WHERE flush_id = ? AND usage_event_id NOT IN (SELECT value FROM json_each(?))`,
            next.id,
            claimedIds,
          )
          .toArray()) {
          // Not claimed: D1 did not count it, so neither may the counter,
          // and what its units drew goes back to the grants.
          this.creditGrants.returnEventDraws(row.usage_event_id);
          keepReturnedUsed(
            this.attributedRead,
            attributionIdOf(row.subscription_id, row.feature_key, row.period_key),
            this.sql.exec<CounterRow>(
              `UPDATE counters SET used = max(0, used - ?)
                WHERE subscription_id = ? AND feature_key = ? AND period_key = ?
                RETURNING used`,
              row.amount,
              row.subscription_id,
              row.feature_key,
              row.period_key,
            ),
          );
          keepReturnedUsed(
            this.totalsRead,
            windowIdOf(row.feature_key, row.period_key),
            this.sql.exec<CounterRow>(
              "UPDATE window_totals SET used = max(0, used - ?) WHERE feature_key = ? AND period_key = ? RETURNING used",
              row.amount,
              row.feature_key,
              row.period_key,
            ),
          );
        }
        this.sql.exec("DELETE FROM pending_events WHERE flush_id = ?", next.id);
        this.sql.exec("DELETE FROM flushes WHERE id = ?", next.id);
        this.unflushedHours.settle(next.id);
        flushes++;
        units += deltas.reduce((sum, delta) => sum + delta.amount, 0) + eventUnits;
      }
    }
    const pending = this.sql
      .exec<{ pending: number | null }>("SELECT sum(unflushed) AS pending FROM counters")
      .one().pending;
    const pendingEvents = this.sql
      .exec<{ pending: number | null }>(
        "SELECT sum(amount) AS pending FROM pending_events WHERE flush_id IS NULL",
      )
      .one().pending;
    return { flushes, units, pendingUnits: (pending ?? 0) + (pendingEvents ?? 0) };
  }

  /**
   * Moves unflushed units, and event rows not yet in a flush, into a new
   * flush row (synchronously, so no unit is both waiting and claimed). Does
   * nothing while an older flush is still waiting: flushes apply in order.
   */
  private claimUnflushed(): void {
    if (this.sql.exec("SELECT 1 FROM flushes LIMIT 1").toArray().length > 0) return;
    const windows = new Map<string, UsageFlushWindowDelta>();
    const windowOf = (row: {
      subscription_id: string;
      feature_key: string;
      period_key: string;
      period_start: string;
      period_end: string | null;
    }) => {
      const id = attributionIdOf(row.subscription_id, row.feature_key, row.period_key);
      let delta = windows.get(id);
      if (!delta && windows.size < FLUSH_MAX_WINDOWS) {
        delta = {
          subscriptionId: row.subscription_id,
          featureLookupKey: row.feature_key,
          periodKey: row.period_key,
          periodStart: row.period_start,
          periodEnd: row.period_end,
          amount: 0,
          lastEventAt: "",
        };
        windows.set(id, delta);
      }
      return delta;
    };

    const claims: UsageFlushEventClaim[] = [];
    const events = this.sql
      .exec<PendingEventRow>(
        "SELECT * FROM pending_events WHERE flush_id IS NULL ORDER BY rowid LIMIT ?",
        FLUSH_MAX_EVENTS,
      )
      .toArray();
    for (const event of events) {
      const delta = windowOf(event);
      if (!delta) continue;
      claims.push({
        id: event.usage_event_id,
        subscriptionId: event.subscription_id,
        featureLookupKey: event.feature_key,
        periodKey: event.period_key,
      });
      if (event.occurred_at > delta.lastEventAt) delta.lastEventAt = event.occurred_at;
    }

    const direct = this.sql
      .exec<{
        subscription_id: string;
        feature_key: string;
        period_key: string;
        period_start: string;
        period_end: string | null;
        unflushed: number;
        last_event_at: string | null;
      }>(
        `SELECT subscription_id, feature_key, period_key, period_start, period_end, unflushed, last_event_at
           FROM counters WHERE unflushed > 0 LIMIT ?`,
        FLUSH_MAX_WINDOWS * 2,
      )
      .toArray();
    const directTaken: typeof direct = [];
    for (const row of direct) {
      const delta = windowOf(row);
      if (!delta) continue;
      delta.amount += row.unflushed;
      const at = row.last_event_at ?? new Date().toISOString();
      if (at > delta.lastEventAt) delta.lastEventAt = at;
      directTaken.push(row);
    }
    if (windows.size === 0) return;
    for (const delta of windows.values()) {
      if (!delta.lastEventAt) delta.lastEventAt = new Date().toISOString();
    }

    const flushId = crypto.randomUUID();
    this.sql.exec(
      "INSERT INTO flushes (id, deltas, claims, claimed_at) VALUES (?, ?, ?, ?)",
      flushId,
      JSON.stringify([...windows.values()]),
      claims.length > 0 ? JSON.stringify(claims) : null,
      Date.now(),
    );
    for (const row of directTaken) {
      this.sql.exec(
        "UPDATE counters SET unflushed = unflushed - ? WHERE subscription_id = ? AND feature_key = ? AND period_key = ?",
        row.unflushed,
        row.subscription_id,
        row.feature_key,
        row.period_key,
      );
    }
    this.unflushedHours.claim(flushId, directTaken);
    if (claims.length > 0) {
      this.sql.exec(
        "UPDATE pending_events SET flush_id = ? WHERE usage_event_id IN (SELECT value FROM json_each(?))",
        flushId,
        JSON.stringify(claims.map((claim) => claim.id)),
      );
    }
  }

  /**
   * Forgets counters of windows that ended long ago, once nothing is
   * waiting to be flushed (a later use of such a window seeds again from
   * D1, which then holds every unit). Answers whether it swept.
   */
  private prune(nowMs: number): boolean {
    if (this.hasPendingUnits()) return false;
    const cutoff = nowMs - WINDOW_RETENTION_MS;
    this.sql.exec(
      "DELETE FROM counters WHERE period_end IS NOT NULL AND period_end < ?",
      new Date(cutoff).toISOString(),
    );
    this.sql.exec(
      "DELETE FROM window_totals WHERE period_end IS NOT NULL AND period_end < ?",
      new Date(cutoff).toISOString(),
    );
    this.totalsRead.clear();
    this.attributedRead.clear();
    this.sql.exec(
      "DELETE FROM consume_requests WHERE recorded_at < ?",
      nowMs - CONSUME_REQUEST_RETENTION_MS,
    );
    return true;
  }

  /**
   * Forgets event ids recorded longer ago than the memory lasts, except
   * those of events a flush has not settled yet (forgetting one of those
   * would let a repeat add its units to `used` a second time while its
   * pending row stays single). Ids are inserted in time order, so their
   * rowids are too: the sweep walks only the expired ones, from the oldest,
   * whatever the size of the memory. Answers how many it forgot.
   */
  private forgetRecordedIds(nowMs: number): number {
    return this.sql.exec(
      `DELETE FROM recorded_events WHERE rowid IN (
         SELECT rowid FROM recorded_events
          WHERE rowid < coalesce(
                  (SELECT rowid FROM recorded_events WHERE recorded_at >= ?1 ORDER BY rowid LIMIT 1),
                  9223372036854775807)
            AND event_id NOT IN (SELECT usage_event_id FROM pending_events)
          ORDER BY rowid LIMIT ?2)`,
      nowMs - this.recordedIdRetentionMs,
      RECORDED_PRUNE_BATCH,
    ).rowsWritten;
  }
}

/** The subscription's attribution row of a window (a `counters` row). */
function attributionId(key: WindowKey): string {
  return attributionIdOf(key.subscriptionId, key.featureKey, key.window.key);
}

function attributionIdOf(subscriptionId: string, featureKey: string, periodKey: string): string {
  return `${subscriptionId}\u0000${featureKey}\u0000${periodKey}`;
}

/** What a statement's `RETURNING used` answered becomes the row's read value (no row: forgotten). */
function keepReturnedUsed(
  read: Map<string, number>,
  id: string,
  cursor: SqlStorageCursor<CounterRow>,
): void {
  const used = cursor.toArray()[0]?.used;
  if (used === undefined) read.delete(id);
  else read.set(id, used);
}

/** The window as tenant events describe it: its whole start for a cycle window (as seed reads it). */
function countedWindow(key: WindowKey): CountedWindow {
  return {
    featureKey: key.featureKey,
    windowKey: key.window.key,
    windowStart: key.window.end ? key.window.key : key.window.start.toISOString(),
    windowEnd: key.window.end?.toISOString() ?? null,
  };
}

/** Where a draw for the window's usage is recorded. */
function drawTarget(key: WindowKey) {
  return {
    subscriptionId: key.subscriptionId,
    featureKey: key.featureKey,
    periodKey: key.window.key,
    periodStart: key.window.start.toISOString(),
    periodEnd: key.window.end?.toISOString() ?? null,
  };
}

/** A window of the tenant's usage of a feature (what limits are decided on). */
function windowId(key: WindowKey): string {
  return windowIdOf(key.featureKey, key.window.key);
}

function windowIdOf(featureKey: string, periodKey: string): string {
  return `${featureKey}\u0000${periodKey}`;
}
