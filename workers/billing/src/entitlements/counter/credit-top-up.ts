import type { TopUpRequest } from "../../credits/index.ts";

/*
 * The tenant's automatic top-up rule inside its EntitlementCounter (see
 * "Automatic top-up" at the top of credit-balance.ts): loaded with the
 * grants into `credit_rule`, which also holds the pending top-up.
 */

interface RuleRow extends Record<string, SqlStorageValue> {
  enabled: number;
  threshold: number;
  amount: number;
  pending_grant_id: string | null;
  pending_currency: string | null;
  pending_started: number;
}

/** The rule as D1 stores it (credit_auto_top_ups). */
export interface StoredRule {
  enabled: number;
  threshold: number;
  amount: number;
}

export class AutoTopUp {
  /** The `credit_rule` row as last read (undefined: not read since it last changed). */
  private ruleRead: { row: RuleRow | undefined } | undefined;

  constructor(
    private readonly sql: SqlStorage,
    /** Creates the paid grant of an automatic top-up (idempotent on its id). */
    private readonly startTopUp: (tenantId: string, request: TopUpRequest) => Promise<void>,
    /** Asks for the alarm, which starts a pending top-up. */
    private readonly wake: () => void,
  ) {}

  /**
   * Synchronous, in a load's step: the rule as D1 has it. A pending top-up
   * ends once its grant is settled either way, once it was started and no
   * grant came of it (refused), or when the rule is off.
   */
  store(rule: StoredRule | undefined, grants: readonly { id: string; status: string }[]): void {
    this.ruleRead = undefined;
    this.sql.exec(
      `INSERT INTO credit_rule (id, enabled, threshold, amount) VALUES (1, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET enabled = excluded.enabled,
         threshold = excluded.threshold, amount = excluded.amount`,
      rule?.enabled ?? 0,
      rule?.threshold ?? 0,
      rule?.amount ?? 1,
    );
    const current = this.rule();
    const pending = current?.pending_grant_id;
    const grant = grants.find((row) => row.id === pending);
    const settled = grant !== undefined && grant.status !== "PENDING";
    const refused = grant === undefined && current?.pending_started === 1;
    if (pending && (settled || refused || !rule?.enabled)) {
      this.sql.exec(
        "UPDATE credit_rule SET pending_grant_id = NULL, pending_currency = NULL, pending_started = 0",
      );
      this.ruleRead = undefined;
    }
  }

  /**
   * Synchronous: the balance in `currency` is `balance`; below the rule's
   * threshold with no top-up pending, one becomes pending and the alarm is
   * asked for.
   */
  notice(balance: number, currency: string): void {
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
  async run(tenantId: string): Promise<void> {
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

  /** Whether a top-up waits for the alarm to start it. */
  hasWork(): boolean {
    const rule = this.rule();
    return Boolean(rule?.pending_grant_id && !rule.pending_started);
  }

  private rule(): RuleRow | undefined {
    this.ruleRead ??= {
      row: this.sql.exec<RuleRow>("SELECT * FROM credit_rule WHERE id = 1").toArray()[0],
    };
    return this.ruleRead.row;
  }
}
