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
 * `drawn` (it is the only one that draws). Draws wait in `credit_draws`
 * until a flush moves them, in one synchronous step, into a
 * `credit_flushes` row with a fresh id, and one D1 batch adds them to
 * credit_draws and credit_grants.drawn, every statement conditional on the
 * flush id being absent from D1's credit_flushes, which the batch records:
 * a retry after a lost answer changes nothing, a failure is retried with
 * the same id. So every cent drawn reaches D1 exactly once.
 *
 * Automatic top-up. The tenant's rule (credit_auto_top_ups) is loaded with
 * the grants. When a draw leaves the balance below its threshold, the same
 * synchronous step records a pending top-up with a fresh grant id, unless
 * one is already pending: so however many consumes cross the threshold
 * together, one top-up starts. The counter's alarm then creates that paid
 * grant (`startTopUp`, idempotent on the id). The pending top-up ends when
 * its grant is no longer PENDING (paid, or voided with its invoice) or the
 * rule is turned off (a declined charge does that).
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
}

/** Where a draw belongs: the subscription's usage window of a feature (what its invoice bills). */
export interface DrawTarget {
  subscriptionId: string;
  featureKey: string;
  periodKey: string;
  periodStart: string;
  /** The window's end (ISO-8601); null: the lifetime window. */
  periodEnd: string | null;
}

interface RuleRow extends Record<string, SqlStorageValue> {
  enabled: number;
  threshold: number;
  amount: number;
  pending_grant_id: string | null;
  pending_currency: string | null;
  pending_started: number;
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
  /** The `credit_rule` row as last read (undefined: not read since it last changed). */
  private ruleRead: { row: RuleRow | undefined } | undefined;
  private generation = 0;

  constructor(
    private readonly sql: SqlStorage,
    private readonly d1: () => D1Database,
    /** Creates the paid grant of an automatic top-up (idempotent on its id). */
    private readonly startTopUp: (tenantId: string, request: TopUpRequest) => Promise<void>,
    /** Asks for the alarm, which starts a pending top-up. */
    private readonly wake: () => void,
    /** Told the cost of priced units that were counted (progressive billing). */
    private readonly onPricedUsage: (terms: CreditTerms, cost: number) => void = () => {},
    /** Stores a tenant event in the counter's outbox (credits.depleted), in the same step. */
    private readonly emit: (event: NewTenantEvent & { id: string }) => void = () => {},
  ) {
    sql.exec(`
      CREATE TABLE IF NOT EXISTS credit_grants (
        id TEXT PRIMARY KEY,
        currency TEXT NOT NULL,
        priority INTEGER NOT NULL,
        expires_at TEXT,
        created_at TEXT NOT NULL,
        features TEXT,
        status TEXT NOT NULL,
        amount INTEGER NOT NULL,
        drawn INTEGER NOT NULL
      );
      CREATE TABLE IF NOT EXISTS credit_draws (
        grant_id TEXT NOT NULL,
        subscription_id TEXT NOT NULL,
        feature_key TEXT NOT NULL,
        period_key TEXT NOT NULL,
        period_start TEXT NOT NULL,
        amount INTEGER NOT NULL,
        PRIMARY KEY (grant_id, subscription_id, feature_key, period_key)
      );
      CREATE TABLE IF NOT EXISTS credit_flushes (id TEXT PRIMARY KEY, draws TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS credit_event_draws (
        usage_event_id TEXT NOT NULL,
        grant_id TEXT NOT NULL,
        subscription_id TEXT NOT NULL,
        feature_key TEXT NOT NULL,
        period_key TEXT NOT NULL,
        period_start TEXT NOT NULL,
        amount INTEGER NOT NULL,
        PRIMARY KEY (usage_event_id, grant_id)
      );
      CREATE TABLE IF NOT EXISTS credit_rule (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        enabled INTEGER NOT NULL,
        threshold INTEGER NOT NULL,
        amount INTEGER NOT NULL,
        pending_grant_id TEXT,
        pending_currency TEXT,
        pending_started INTEGER NOT NULL DEFAULT 0
      );
    `);
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
    const since = new Date(Date.now() - SETTLED_VISIBLE_MS).toISOString();
    const d1 = this.d1();
    const [grants, rules] = await d1.batch<Record<string, unknown>>([
      d1
        .prepare(
          `SELECT id, currency, priority, expires_at, created_at, features, status, amount, drawn
             FROM credit_grants
            WHERE tenant_id = ?1 AND (status IN ('PENDING', 'ACTIVE') OR ended_at > ?2)`,
        )
        .bind(tenantId, since),
      d1
        .prepare("SELECT enabled, threshold, amount FROM credit_auto_top_ups WHERE tenant_id = ?1")
        .bind(tenantId),
    ]);
    const results = (grants?.results ?? []) as GrantRow[];
    const rule = rules?.results[0] as
      | { enabled: number; threshold: number; amount: number }
      | undefined;
    // Synchronous from here: the definitions and status follow D1; `drawn`
    // is this object's own once it knows the grant.
    this.sql.exec(
      `INSERT INTO credit_grants (id, currency, priority, expires_at, created_at, features, status, amount, drawn)
       SELECT json_extract(value, '$.id'), json_extract(value, '$.currency'),
              json_extract(value, '$.priority'), json_extract(value, '$.expires_at'),
              json_extract(value, '$.created_at'), json_extract(value, '$.features'),
              json_extract(value, '$.status'), json_extract(value, '$.amount'),
              json_extract(value, '$.drawn')
         FROM json_each(?) WHERE true
       ON CONFLICT (id) DO UPDATE SET
         currency = excluded.currency, priority = excluded.priority,
         expires_at = excluded.expires_at, features = excluded.features,
         status = excluded.status, amount = excluded.amount`,
      JSON.stringify(results),
    );
    this.grantsRead = null;
    this.ruleRead = undefined;
    this.sql.exec(
      `INSERT INTO credit_rule (id, enabled, threshold, amount) VALUES (1, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET enabled = excluded.enabled,
         threshold = excluded.threshold, amount = excluded.amount`,
      rule?.enabled ?? 0,
      rule?.threshold ?? 0,
      rule?.amount ?? 1,
    );
    // A pending top-up ends once its grant is settled either way, once it
    // was started and no grant came of it (refused), or when the rule is off.
    const current = this.rule();
    const pending = current?.pending_grant_id;
    const grant = results.find((row) => row.id === pending);
    const settled = grant !== undefined && grant.status !== "PENDING";
    const refused = grant === undefined && current?.pending_started === 1;
    if (pending && (settled || refused || !rule?.enabled)) {
      this.sql.exec(
        "UPDATE credit_rule SET pending_grant_id = NULL, pending_currency = NULL, pending_started = 0",
      );
      this.ruleRead = undefined;
    }
    if (generation === this.generation) this.loadedAt = Date.now();
  }

  private rule(): RuleRow | undefined {
    this.ruleRead ??= {
      row: this.sql.exec<RuleRow>("SELECT * FROM credit_rule WHERE id = 1").toArray()[0],
    };
    return this.ruleRead.row;
  }

  /**
   * Synchronous, after a draw: when the balance in the currency (every
   * ACTIVE, unexpired grant) is below the rule's threshold and no top-up is
   * pending, one becomes pending and the alarm is asked for.
   */
  private noticeBalance(
    tenantId: string | undefined,
    currency: string,
    draws: readonly { grantId: string }[],
    now: Date,
  ): void {
    if (draws.length === 0) return;
    const balance = this.grants()
      .filter(
        (grant) =>
          grant.status === "ACTIVE" &&
          grant.currency === currency &&
          (grant.expiresAt === null || Date.parse(grant.expiresAt) > now.getTime()),
      )
      .reduce((sum, grant) => sum + grant.remaining, 0);
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
    const rule = this.rule();
    if (!rule?.enabled || rule.pending_grant_id) return;
    if (balance >= rule.threshold) return;
    this.sql.exec(
      "UPDATE credit_rule SET pending_grant_id = ?, pending_currency = ?, pending_started = 0",
      crypto.randomUUID(),
      currency,
    );
    this.ruleRead = undefined;
    this.wake();
  }

  /** From the alarm: creates the pending top-up's grant, once (a failure is retried by the next alarm). */
  async runTopUp(tenantId: string): Promise<void> {
    const rule = this.rule();
    if (!rule?.pending_grant_id || rule.pending_started || !rule.pending_currency) return;
    await this.startTopUp(tenantId, {
      grantId: rule.pending_grant_id,
      amount: rule.amount,
      currency: rule.pending_currency,
    });
    this.sql.exec(
      "UPDATE credit_rule SET pending_started = 1 WHERE pending_grant_id = ?",
      rule.pending_grant_id,
    );
    this.ruleRead = undefined;
  }

  /** Whether the alarm still has work here: draws to flush, a top-up to start. */
  hasWork(): boolean {
    const rule = this.rule();
    return this.hasUnflushed() || Boolean(rule?.pending_grant_id && !rule.pending_started);
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
        remaining: Math.max(0, row.amount - row.drawn),
      }));
    return this.grantsRead;
  }

  /** Whether any grant could pay for anything (the pipeline skips the work otherwise). */
  hasActiveGrants(): boolean {
    return (
      this.sql
        .exec("SELECT 1 FROM credit_grants WHERE status = 'ACTIVE' AND drawn < amount LIMIT 1")
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
   * can (never refused). Answers the draws, in burn-down order.
   */
  payForRecorded(
    terms: CreditTerms,
    snapshot: SnapshotTerms,
    target: DrawTarget,
    usedBefore: number,
    amount: number,
    now: Date,
  ): { grantId: string; amount: number }[] {
    if (!isPricedUsage(snapshot)) return [];
    const cost = usageCostCents(snapshot, usedBefore, amount, costWindow(terms, target));
    if (cost === 0) return [];
    const context = { featureKey: target.featureKey, currency: terms.currency, now };
    const { draws } = planDraw(this.grants(), cost, context);
    this.apply(target, draws);
    this.noticeBalance(terms.tenantId, terms.currency, draws, now);
    this.onPricedUsage(terms, cost);
    return draws;
  }

  /**
   * Synchronous: what a logged event's units drew, kept until its flush
   * settles it: the counter may still take the units back (the event was
   * not claimed), and then its draws go back to their grants.
   */
  rememberEventDraws(
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
  }

  /** Synchronous: the events' units were claimed (billed), their draws stay. */
  forgetEventDraws(usageEventIds: readonly string[]): void {
    // Most flushes carry events that drew nothing: then there is nothing to forget.
    if (this.sql.exec("SELECT 1 FROM credit_event_draws LIMIT 1").toArray().length === 0) return;
    this.sql.exec(
      "DELETE FROM credit_event_draws WHERE usage_event_id IN (SELECT value FROM json_each(?))",
      JSON.stringify(usageEventIds),
    );
  }

  /**
   * Synchronous, in the step that takes an event's units back: its draws
   * go back to the grants they came from, in reverse burn-down order, as
   * negative draws (flushed to D1 like any draw), and are forgotten, so
   * they are returned once. Answers the cents returned.
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
      }>(
        "SELECT * FROM credit_event_draws WHERE usage_event_id = ? ORDER BY rowid DESC",
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
      returned += row.amount;
    }
    this.forgetEventDraws([usageEventId]);
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
        .exec<{ amount: number; drawn: number }>(
          "UPDATE credit_grants SET drawn = drawn + ? WHERE id = ? RETURNING amount, drawn",
          draw.amount,
          draw.grantId,
        )
        .toArray()[0];
      // The copy read before follows the statement (a priced consume draws every time).
      this.grantsRead =
        drawn && this.grantsRead
          ? this.grantsRead.map((grant) =>
              grant.id === draw.grantId
                ? { ...grant, remaining: Math.max(0, drawn.amount - drawn.drawn) }
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
   * from it. Unknown to this object (never loaded): null.
   */
  settle(grantId: string, status: "VOIDED" | "EXPIRED"): number | null {
    const row = this.sql
      .exec<GrantRow>("SELECT * FROM credit_grants WHERE id = ?", grantId)
      .toArray()[0];
    if (!row) return null;
    this.sql.exec("UPDATE credit_grants SET status = ? WHERE id = ?", status, grantId);
    this.grantsRead = null;
    return Math.max(0, row.amount - row.drawn);
  }

  hasUnflushed(): boolean {
    return (
      this.sql.exec("SELECT 1 FROM credit_draws LIMIT 1").toArray().length > 0 ||
      this.sql.exec("SELECT 1 FROM credit_flushes LIMIT 1").toArray().length > 0
    );
  }

  /** Moves the draws to D1 (see the top of this module); throws when D1 fails (the alarm retries). */
  async flush(tenantId: string): Promise<void> {
    this.claim();
    for (const pending of this.sql
      .exec<{ id: string; draws: string }>("SELECT id, draws FROM credit_flushes")
      .toArray()) {
      const d1 = this.d1();
      const unapplied = "NOT EXISTS (SELECT 1 FROM credit_flushes WHERE id = ?1)";
      await d1.batch([
        d1
          .prepare(
            `INSERT INTO credit_draws (grant_id, tenant_id, subscription_id, feature_lookup_key, period_key, period_start, amount)
             SELECT json_extract(value, '$.grant_id'), ?2, json_extract(value, '$.subscription_id'),
                    json_extract(value, '$.feature_key'), json_extract(value, '$.period_key'),
                    json_extract(value, '$.period_start'), json_extract(value, '$.amount')
               FROM json_each(?3) WHERE ${unapplied}
             ON CONFLICT DO UPDATE SET amount = amount + excluded.amount`,
          )
          .bind(pending.id, tenantId, pending.draws),
        d1
          .prepare(
            `UPDATE credit_grants SET
               drawn = drawn + (SELECT sum(json_extract(value, '$.amount')) FROM json_each(?2)
                                 WHERE json_extract(value, '$.grant_id') = credit_grants.id),
               updated_at = ?3
             WHERE id IN (SELECT json_extract(value, '$.grant_id') FROM json_each(?2))
               AND ${unapplied}`,
          )
          .bind(pending.id, pending.draws, new Date().toISOString()),
        d1
          .prepare(
            "INSERT INTO credit_flushes (id, tenant_id, applied_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
          )
          .bind(pending.id, tenantId, new Date().toISOString()),
      ]);
      this.sql.exec("DELETE FROM credit_flushes WHERE id = ?", pending.id);
    }
  }

  /** Synchronous: the waiting draws into one flush row (only when none is pending: flushes apply in order). */
  private claim(): void {
    if (this.sql.exec("SELECT 1 FROM credit_flushes LIMIT 1").toArray().length > 0) return;
    const draws = this.sql.exec("SELECT * FROM credit_draws").toArray();
    if (draws.length === 0) return;
    this.sql.exec(
      "INSERT INTO credit_flushes (id, draws) VALUES (?, ?)",
      crypto.randomUUID(),
      JSON.stringify(draws),
    );
    this.sql.exec("DELETE FROM credit_draws");
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
