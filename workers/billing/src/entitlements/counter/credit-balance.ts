import type { CheckOutcome } from "@edge-platform/shared/billing/entitlement-decision";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import type { TenantEntitlementState } from "@edge-platform/shared/db/entitlement-state";
import type { UsageThreshold } from "@edge-platform/shared/db/schema/catalog";
import {
  applicableBalance,
  type CostWindow,
  CREDITS_EXHAUSTED,
  type DrawContext,
  type GrantBalance,
  isPricedUsage,
  planDraw,
  type StoredGrantStatus,
  type TopUpRequest,
  usageCostCents,
} from "../../credits/index.ts";
import type { NewTenantEvent } from "../../notifications/index.ts";
import { CreditFlush } from "./credit-flush.ts";
import { applyCreditSchema } from "./credit-tables.ts";
import {
  CreditTakeBacks,
  type TakeBackAnswer,
  writtenReservations,
  writtenTakeBacksStatement,
} from "./credit-take-backs.ts";
import { AutoTopUp, type StoredRule } from "./credit-top-up.ts";

/*
 * The tenant's credit balance, inside its EntitlementCounter (one object per
 * tenant), so that a consume is decided against the balance in the same
 * synchronous step as the count: no extra round trip, and no overdraw
 * however many consumes race. The rules (cost, burn-down order) are
 * credits/domain/credits.ts; this keeps the state.
 *
 * D1 is the record. `credit_grants` rows are written by the credits service
 * (create, activation on payment, void, expiry); this object loads them
 * (like the subscription state: cached, reloaded after `refresh` or
 * GRANTS_TTL_MS) into its own `credit_grants` table, keeping its own
 * `drawn` and `written_off` (it is the only one that draws, and the one
 * that decides a take-back: credit-take-backs.ts). A grant this object
 * ended (void, expiry, the last credit taken back) stays ended whatever a
 * load reads: a load may have read D1 before the end was written there.
 * Draws wait in `credit_draws` until a flush moves them to D1 exactly once
 * (credit-flush.ts).
 *
 * Returned draws. A logged event's draws may go back to their grants when
 * its flush cannot claim it, so until the flush settles the event they
 * count as unspent for what a low balance starts, and what they cost the
 * progressive watch is taken back with them. Cents that come back to a
 * grant that ended meanwhile are written off in D1, as settling it did
 * with the rest.
 *
 * Automatic top-up. The tenant's rule (credit_auto_top_ups) is loaded with
 * the grants. When a draw leaves the balance below its threshold, the same
 * synchronous step records a pending top-up with a fresh grant id, unless
 * one is already pending: so however many consumes cross the threshold
 * together, one top-up starts. The counter's alarm then creates that paid
 * grant (`startTopUp`, idempotent on the id). The pending top-up ends when
 * its grant is no longer PENDING (paid, or voided with its invoice) or the
 * rule is turned off (a declined charge does that). A logged event's draws
 * are weighed when its flush claims it, after the returns of that flush.
 */

const GRANTS_TTL_MS = 30_000;
/** Settled grants are still loaded this long, so a void or expiry reaches the object. */
const SETTLED_VISIBLE_MS = 2 * 86_400_000;

interface GrantRow extends Record<string, SqlStorageValue> {
  id: string;
  currency: string;
  priority: number;
  expires_at: string | null;
  created_at: string;
  features: string | null;
  status: string;
  amount: number;
  drawn: number;
  written_off: number;
}

const ENDED = "('VOIDED', 'EXPIRED')";

/** Where a draw belongs: the subscription's usage window of a feature (what its invoice bills). */
export interface DrawTarget {
  subscriptionId: string;
  featureKey: string;
  periodKey: string;
  periodStart: string;
  /** The window's end (ISO-8601); null: the lifetime window. */
  periodEnd: string | null;
}

/** The subscription terms a draw depends on. */
export interface CreditTerms {
  prepaid: boolean;
  currency: string;
  tenantId?: string;
  /** The current subscription and its period's end: what progressive billing counts by. */
  subscriptionId?: string;
  periodEnd?: string;
  usageThresholds?: UsageThreshold[] | null;
  /** When the subscription became billable (ISO-8601): its included share of a window starts there. */
  billableFrom?: string;
}

export interface CreditRefusal {
  status: "credits_exhausted";
  feature: string;
  requested: number;
  cost: number;
  creditBalance: number;
}

export class CreditBalance {
  private loadedAt = 0;
  private loading: Promise<void> | null = null;
  /**
   * The grants as `grants()` reads them, kept between statements: every
   * priced consume reads them, and only this object's own statements
   * change them: a draw updates this copy, a load or settling drops it.
   */
  private grantsRead: readonly GrantBalance[] | null = null;
  /** Cents of logged events' draws not settled yet, by grant (null: not read since they changed). */
  private outstandingRead: Map<string, number> | null = null;
  private generation = 0;
  private readonly flushes: CreditFlush;
  private readonly takeBacks: CreditTakeBacks;
  private readonly autoTopUp: AutoTopUp;

  constructor(
    private readonly sql: SqlStorage,
    private readonly d1: () => D1Database,
    /** Creates the paid grant of an automatic top-up (idempotent on its id). */
    startTopUp: (tenantId: string, request: TopUpRequest) => Promise<void>,
    /** Asks for the alarm, which starts a pending top-up or flushes. */
    private readonly wake: () => void,
    /**
     * Told the cost of priced units that were counted (progressive billing),
     * with the logged event they belong to, whose cost may be taken back.
     */
    private readonly onPricedUsage: (
      terms: CreditTerms,
      cost: number,
      usageEventId?: string,
    ) => void = () => {},
    /** Stores a tenant event in the counter's outbox (credits.depleted), in the same step. */
    private readonly emit: (event: NewTenantEvent & { id: string }) => void = () => {},
  ) {
    applyCreditSchema(sql);
    this.flushes = new CreditFlush(sql, d1);
    this.autoTopUp = new AutoTopUp(sql, startTopUp, wake);
    this.takeBacks = new CreditTakeBacks(
      sql,
      (grantId, amount) => this.flushes.writeOff(grantId, amount),
      () => {
        this.grantsRead = null;
      },
    );
  }

  /** Loads the grants from D1 when stale; resolves at once (no await needed) when fresh. */
  ready(tenantId: string): void | Promise<void> {
    if (Date.now() - this.loadedAt < GRANTS_TTL_MS) return;
    if (this.loading) return this.loading;
    const generation = this.generation;
    const loading = this.load(tenantId, generation).finally(() => {
      if (this.loading === loading) this.loading = null;
    });
    this.loading = loading;
    return loading;
  }

  /** The grants changed in D1 (created, paid, voided, expired): reload before the next decision. */
  refresh(): void {
    this.generation++;
    this.loadedAt = 0;
    this.loading = null;
  }

  private async load(tenantId: string, generation: number): Promise<void> {
    const readAt = Date.now();
    const since = new Date(readAt - SETTLED_VISIBLE_MS).toISOString();
    const reservations = this.takeBacks.open();
    const d1 = this.d1();
    const marks =
      reservations.length > 0
        ? writtenTakeBacksStatement(
            d1,
            tenantId,
            reservations.map((reservation) => reservation.id),
          )
        : null;
    const [grants, rules, written] = await d1.batch<Record<string, unknown>>([
      d1
        .prepare(
          `SELECT id, currency, priority, expires_at, created_at, features, status, amount, drawn, written_off
             FROM credit_grants
            WHERE tenant_id = ?1 AND (status IN ('PENDING', 'ACTIVE') OR ended_at > ?2)`,
        )
        .bind(tenantId, since),
      d1
        .prepare("SELECT enabled, threshold, amount FROM credit_auto_top_ups WHERE tenant_id = ?1")
        .bind(tenantId),
      ...(marks ? [marks.statement] : []),
    ]);
    // Synchronous from here.
    const results = (grants?.results ?? []) as GrantRow[];
    this.storeGrants(results);
    const undone = marks
      ? this.takeBacks.reconcile(
          reservations,
          writtenReservations(written?.results ?? [], marks.reservationOf),
          readAt,
        )
      : 0;
    // What went back to a grant that ended since waits for a flush to be written off.
    if (undone > 0) this.wake();
    this.autoTopUp.store(rules?.results[0] as StoredRule | undefined, results);
    if (generation === this.generation) this.loadedAt = Date.now();
  }

  /**
   * The definitions and status follow D1, except that a grant this object
   * ended stays ended (D1 may not have it yet); `drawn` and `written_off`
   * are this object's own once it knows the grant.
   */
  private storeGrants(results: readonly GrantRow[]): void {
    this.sql.exec(
      `INSERT INTO credit_grants (id, currency, priority, expires_at, created_at, features, status, amount, drawn, written_off)
       SELECT json_extract(value, '$.id'), json_extract(value, '$.currency'),
              json_extract(value, '$.priority'), json_extract(value, '$.expires_at'),
              json_extract(value, '$.created_at'), json_extract(value, '$.features'),
              json_extract(value, '$.status'), json_extract(value, '$.amount'),
              json_extract(value, '$.drawn'), coalesce(json_extract(value, '$.written_off'), 0)
         FROM json_each(?) WHERE true
       ON CONFLICT (id) DO UPDATE SET
         currency = excluded.currency, priority = excluded.priority,
         expires_at = excluded.expires_at, features = excluded.features,
         status = CASE WHEN credit_grants.status IN ${ENDED} THEN credit_grants.status
                       ELSE excluded.status END,
         amount = excluded.amount`,
      JSON.stringify(results),
    );
    this.grantsRead = null;
  }

  /**
   * Synchronous, after settled draws: when the balance in the currency
   * (every ACTIVE, unexpired grant, with the draws a flush may still return
   * counted as unspent) is below the rule's threshold and no top-up is
   * pending, one becomes pending and the alarm is asked for.
   */
  private noticeBalance(
    tenantId: string | undefined,
    currency: string,
    draws: readonly { grantId: string }[],
    now: Date,
  ): void {
    if (draws.length === 0) return;
    const outstanding = this.outstanding();
    const balance = this.grants()
      .filter(
        (grant) =>
          grant.status === "ACTIVE" &&
          grant.currency === currency &&
          (grant.expiresAt === null || Date.parse(grant.expiresAt) > now.getTime()),
      )
      .reduce((sum, grant) => sum + grant.remaining + (outstanding.get(grant.id) ?? 0), 0);
    const last = draws.at(-1)?.grantId;
    if (balance === 0 && tenantId && last) {
      // The grant that drew the balance to 0 can do so once: its id names the occurrence.
      this.emit({
        id: `evt_credits_depleted_${last}`,
        type: "credits.depleted",
        tenantId,
        data: { currency, lastGrantId: last, balance: 0 },
      });
    }
    this.autoTopUp.notice(balance, currency);
  }

  /** Cents of logged events' draws that their flush may still return, by grant. */
  private outstanding(): Map<string, number> {
    this.outstandingRead ??= new Map(
      this.sql
        .exec<{ grant_id: string; amount: number }>(
          "SELECT grant_id, sum(amount) AS amount FROM credit_event_draws GROUP BY grant_id",
        )
        .toArray()
        .map((row) => [row.grant_id, row.amount]),
    );
    return this.outstandingRead;
  }

  /** From the alarm: creates the pending top-up's grant, once (a failure is retried by the next alarm). */
  runTopUp(tenantId: string): Promise<void> {
    return this.autoTopUp.run(tenantId);
  }

  /** Whether the alarm still has work here: draws or write-offs to flush, a top-up to start. */
  hasWork(): boolean {
    return this.hasUnflushed() || this.autoTopUp.hasWork();
  }

  grants(): readonly GrantBalance[] {
    this.grantsRead ??= this.sql
      .exec<GrantRow>("SELECT * FROM credit_grants")
      .toArray()
      .map((row) => ({
        id: row.id,
        currency: row.currency,
        priority: row.priority,
        expiresAt: row.expires_at,
        createdAt: row.created_at,
        features: row.features ? (JSON.parse(row.features) as string[]) : null,
        status: row.status as StoredGrantStatus,
        remaining: Math.max(0, row.amount - row.drawn - row.written_off),
      }));
    return this.grantsRead;
  }

  /** Whether any grant could pay for anything (the pipeline skips the work otherwise). */
  hasActiveGrants(): boolean {
    return (
      this.sql
        .exec(
          "SELECT 1 FROM credit_grants WHERE status = 'ACTIVE' AND drawn + written_off < amount LIMIT 1",
        )
        .toArray().length > 0
    );
  }

  balance(context: DrawContext): number {
    return applicableBalance(this.grants(), context);
  }

  /**
   * Synchronous, inside a consume's step, before its units are added: pays
   * for them. On a prepaid subscription a cost the balance does not cover
   * refuses the consume whole (nothing drawn); otherwise the balance pays
   * what it can and the rest is billed on the invoice.
   */
  payForConsume(
    terms: CreditTerms,
    snapshot: SnapshotTerms,
    target: DrawTarget,
    usedBefore: number,
    amount: number,
    now: Date,
  ): CreditRefusal | undefined {
    if (!isPricedUsage(snapshot)) return undefined;
    const cost = usageCostCents(snapshot, usedBefore, amount, costWindow(terms, target));
    const context = { featureKey: target.featureKey, currency: terms.currency, now };
    if (cost === 0) return undefined;
    const plan = planDraw(this.grants(), cost, context);
    if (terms.prepaid && plan.shortfall > 0) {
      return {
        status: "credits_exhausted",
        feature: target.featureKey,
        requested: amount,
        cost,
        creditBalance: plan.covered,
      };
    }
    this.apply(target, plan.draws);
    this.noticeBalance(terms.tenantId, terms.currency, plan.draws, now);
    this.onPricedUsage(terms, cost);
    return undefined;
  }

  /**
   * Synchronous, after the pipeline counted units: the balance pays what it
   * can (never refused). Answers the draws, in burn-down order. The draws
   * of a logged event (`usageEventId`) are kept until its flush settles it
   * (the counter may take its units back, and then they go back to their
   * grants), and weighed against the threshold then.
   */
  payForRecorded(
    terms: CreditTerms,
    snapshot: SnapshotTerms,
    target: DrawTarget,
    usedBefore: number,
    amount: number,
    now: Date,
    usageEventId?: string,
  ): { grantId: string; amount: number }[] {
    if (!isPricedUsage(snapshot)) return [];
    const cost = usageCostCents(snapshot, usedBefore, amount, costWindow(terms, target));
    if (cost === 0) return [];
    const context = { featureKey: target.featureKey, currency: terms.currency, now };
    const { draws } = planDraw(this.grants(), cost, context);
    this.apply(target, draws);
    if (usageEventId === undefined) {
      this.noticeBalance(terms.tenantId, terms.currency, draws, now);
    } else {
      this.rememberEventDraws(usageEventId, target, draws);
    }
    this.onPricedUsage(terms, cost, usageEventId);
    return draws;
  }

  private rememberEventDraws(
    usageEventId: string,
    target: DrawTarget,
    draws: readonly { grantId: string; amount: number }[],
  ): void {
    for (const draw of draws) {
      this.sql.exec(
        `INSERT INTO credit_event_draws (usage_event_id, grant_id, subscription_id, feature_key, period_key, period_start, amount)
         VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT DO UPDATE SET amount = amount + excluded.amount`,
        usageEventId,
        draw.grantId,
        target.subscriptionId,
        target.featureKey,
        target.periodKey,
        target.periodStart,
        draw.amount,
      );
    }
    if (draws.length > 0) this.outstandingRead = null;
  }

  /**
   * Synchronous, once a flush claimed the events (billed: their draws stay),
   * after it returned the draws of the events it could not claim: the
   * balance they leave is weighed for a top-up and credits.depleted.
   */
  claimEventDraws(usageEventIds: readonly string[], tenantId: string | undefined, now: Date): void {
    // Most flushes carry events that drew nothing: then there is nothing to settle.
    if (this.sql.exec("SELECT 1 FROM credit_event_draws LIMIT 1").toArray().length === 0) return;
    const ids = JSON.stringify(usageEventIds);
    const claimed = this.sql
      .exec<{ grant_id: string; currency: string | null }>(
        `SELECT d.grant_id, g.currency FROM credit_event_draws d
           LEFT JOIN credit_grants g ON g.id = d.grant_id
          WHERE d.usage_event_id IN (SELECT value FROM json_each(?)) ORDER BY d.rowid`,
        ids,
      )
      .toArray();
    if (claimed.length === 0) return;
    this.sql.exec(
      "DELETE FROM credit_event_draws WHERE usage_event_id IN (SELECT value FROM json_each(?))",
      ids,
    );
    this.outstandingRead = null;
    const byCurrency = new Map<string, { grantId: string }[]>();
    for (const row of claimed) {
      if (!row.currency) continue;
      byCurrency.set(row.currency, [
        ...(byCurrency.get(row.currency) ?? []),
        { grantId: row.grant_id },
      ]);
    }
    for (const [currency, draws] of byCurrency) {
      this.noticeBalance(tenantId, currency, draws, now);
    }
  }

  /**
   * Synchronous, in the step that takes an event's units back: its draws
   * go back to the grants they came from, in reverse burn-down order, as
   * negative draws (flushed to D1 like any draw), and are forgotten, so
   * they are returned once. Cents that come back to a grant that ended
   * meanwhile are written off. Answers the cents returned.
   */
  returnEventDraws(usageEventId: string): number {
    const rows = this.sql
      .exec<{
        grant_id: string;
        subscription_id: string;
        feature_key: string;
        period_key: string;
        period_start: string;
        amount: number;
        status: string | null;
      }>(
        `SELECT d.*, g.status FROM credit_event_draws d LEFT JOIN credit_grants g ON g.id = d.grant_id
          WHERE d.usage_event_id = ? ORDER BY d.rowid DESC`,
        usageEventId,
      )
      .toArray();
    let returned = 0;
    for (const row of rows) {
      this.apply(
        {
          subscriptionId: row.subscription_id,
          featureKey: row.feature_key,
          periodKey: row.period_key,
          periodStart: row.period_start,
          periodEnd: null,
        },
        [{ grantId: row.grant_id, amount: -row.amount }],
      );
      if (row.status === "VOIDED" || row.status === "EXPIRED") {
        this.sql.exec(
          "UPDATE credit_grants SET written_off = written_off + ? WHERE id = ?",
          row.amount,
          row.grant_id,
        );
        this.grantsRead = null;
        this.flushes.writeOff(row.grant_id, row.amount);
      }
      returned += row.amount;
    }
    if (rows.length > 0) {
      this.sql.exec("DELETE FROM credit_event_draws WHERE usage_event_id = ?", usageEventId);
      this.outstandingRead = null;
    }
    return returned;
  }

  /**
   * What `check` adds for a priced feature while credits are in play: the
   * balance that applies, and on a prepaid subscription a refusal when it
   * cannot pay for one more unit.
   */
  checked(
    terms: CreditTerms,
    snapshot: SnapshotTerms,
    target: DrawTarget,
    usedBefore: number,
    now: Date,
  ): { creditBalance: number; exhausted: boolean } | undefined {
    if (!isPricedUsage(snapshot)) return undefined;
    const creditBalance = this.balance({
      featureKey: snapshot.featureLookupKey,
      currency: terms.currency,
      now,
    });
    if (!terms.prepaid && creditBalance === 0 && !this.hasActiveGrants()) return undefined;
    const cost = usageCostCents(snapshot, usedBefore, 1, costWindow(terms, target));
    return { creditBalance, exhausted: terms.prepaid && cost > creditBalance };
  }

  private apply(target: DrawTarget, draws: { grantId: string; amount: number }[]): void {
    for (const draw of draws) {
      const drawn = this.sql
        .exec<{ amount: number; drawn: number; written_off: number }>(
          "UPDATE credit_grants SET drawn = drawn + ? WHERE id = ? RETURNING amount, drawn, written_off",
          draw.amount,
          draw.grantId,
        )
        .toArray()[0];
      // The copy read before follows the statement (a priced consume draws every time).
      this.grantsRead =
        drawn && this.grantsRead
          ? this.grantsRead.map((grant) =>
              grant.id === draw.grantId
                ? {
                    ...grant,
                    remaining: Math.max(0, drawn.amount - drawn.drawn - drawn.written_off),
                  }
                : grant,
            )
          : null;
      this.sql.exec(
        `INSERT INTO credit_draws (grant_id, subscription_id, feature_key, period_key, period_start, amount)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT DO UPDATE SET amount = amount + excluded.amount`,
        draw.grantId,
        target.subscriptionId,
        target.featureKey,
        target.periodKey,
        target.periodStart,
        draw.amount,
      );
    }
  }

  /**
   * Synchronous: ends a grant (void or expiry) and answers the cents it
   * still held, which the caller writes off in D1. Nothing more is drawn
   * from it, and no load brings it back. Unknown to this object (never
   * loaded): null.
   */
  settle(grantId: string, status: "VOIDED" | "EXPIRED"): number | null {
    const row = this.sql
      .exec<GrantRow>("SELECT * FROM credit_grants WHERE id = ?", grantId)
      .toArray()[0];
    if (!row) return null;
    this.sql.exec("UPDATE credit_grants SET status = ? WHERE id = ?", status, grantId);
    this.takeBacks.grantSettled(grantId);
    this.grantsRead = null;
    return Math.max(0, row.amount - row.drawn - row.written_off);
  }

  /** Synchronous: sets aside `credits` of the grant's unspent part (see credit-take-backs.ts). */
  reserveTakeBack(grantId: string, credits: number): TakeBackAnswer | null {
    return this.takeBacks.reserve(grantId, credits, Date.now());
  }

  /**
   * The caller's batch did not write the reservation: its credits go back.
   * D1 decides: when it holds the write-off, the batch was written after
   * all and the credits stay taken. Answers whether they went back.
   */
  async releaseTakeBack(tenantId: string, reservationId: string): Promise<boolean> {
    if (!this.takeBacks.has(reservationId)) return false;
    const marks = writtenTakeBacksStatement(this.d1(), tenantId, [reservationId]);
    const { results } = await marks.statement.all();
    if (writtenReservations(results, marks.reservationOf).has(reservationId)) {
      this.takeBacks.written(reservationId);
      return false;
    }
    return this.takeBacks.undo(reservationId);
  }

  hasUnflushed(): boolean {
    return this.flushes.hasUnflushed();
  }

  /** Moves the draws and write-offs to D1; throws when D1 fails (the alarm retries). */
  flush(tenantId: string): Promise<void> {
    return this.flushes.flush(tenantId);
  }
}

/** The subscription's terms a draw depends on (null without a subscription). */
export function creditTermsOf(
  state: TenantEntitlementState,
  tenantId?: string,
): CreditTerms | null {
  const subscription = state.subscription;
  if (!subscription) return null;
  return {
    ...(tenantId ? { tenantId } : {}),
    prepaid: subscription.prepaid ?? false,
    currency: subscription.currency ?? "usd",
    subscriptionId: subscription.id,
    periodEnd: subscription.currentPeriodEnd.toISOString(),
    usageThresholds: subscription.usageThresholds ?? null,
    billableFrom: (subscription.trialEndsAt ?? subscription.startedAt).toISOString(),
  };
}

/** The window a draw is priced in, with the subscription's included share of it (as its invoice takes it). */
function costWindow(terms: CreditTerms, target: DrawTarget): CostWindow | undefined {
  if (!terms.billableFrom) return undefined;
  return {
    windowKey: target.periodKey,
    windowEnd: target.periodEnd ? new Date(target.periodEnd) : null,
    billableFrom: new Date(terms.billableFrom),
  };
}

export { CREDITS_EXHAUSTED };

/** A check's outcome with the credit balance that applies; a prepaid one that cannot pay for one more unit refuses. */
export function withCreditBalance(
  outcome: CheckOutcome,
  credit: { creditBalance: number; exhausted: boolean } | undefined | null,
): CheckOutcome {
  if (!credit) return outcome;
  if (!credit.exhausted || !outcome.allowed) {
    return { ...outcome, creditBalance: credit.creditBalance };
  }
  return {
    ...outcome,
    allowed: false,
    reason: "Credit balance exhausted",
    code: CREDITS_EXHAUSTED,
    creditBalance: credit.creditBalance,
  };
}
