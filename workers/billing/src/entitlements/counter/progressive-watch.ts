import { type ProgressiveRequest, thresholdsReached } from "../../pricing/index.ts";
import type { CreditTerms } from "./credit-balance.ts";

/*
 * Progressive billing, inside the tenant's EntitlementCounter: the priced
 * usage of the subscription's current period (the cents the invoice will
 * bill for it, as the credit balance prices them), counted in the same
 * synchronous step as the units. When it reaches one more of the price's
 * `usageThresholds` and no invoice is pending, one becomes pending with a
 * fresh invoice id, so however many consumes cross a threshold together,
 * one PROGRESSIVE invoice is issued; the counter's alarm issues it after
 * flushing the usage (`issue`, idempotent on the id), billing all usage
 * not billed yet. The period's priced usage is counted from the first
 * priced unit this object sees in the period.
 */

interface PeriodRow extends Record<string, SqlStorageValue> {
  subscription_id: string;
  period_end: string;
  priced_cents: number;
  reached: number;
  pending_invoice_id: string | null;
}

export class ProgressiveWatch {
  constructor(
    private readonly sql: SqlStorage,
    private readonly issue: (tenantId: string, request: ProgressiveRequest) => Promise<void>,
    private readonly wake: () => void,
  ) {
    sql.exec(`
      CREATE TABLE IF NOT EXISTS progressive_periods (
        subscription_id TEXT NOT NULL,
        period_end TEXT NOT NULL,
        priced_cents INTEGER NOT NULL,
        reached INTEGER NOT NULL,
        pending_invoice_id TEXT,
        PRIMARY KEY (subscription_id, period_end)
      );
    `);
  }

  /** Synchronous, after priced units were counted: `cost` more cents of the period's usage. */
  counted(terms: CreditTerms, cost: number): void {
    if (!terms.usageThresholds?.length || !terms.subscriptionId || !terms.periodEnd || cost <= 0) {
      return;
    }
    const row = this.sql
      .exec<PeriodRow>(
        `INSERT INTO progressive_periods (subscription_id, period_end, priced_cents, reached)
         VALUES (?1, ?2, ?3, 0)
         ON CONFLICT DO UPDATE SET priced_cents = priced_cents + excluded.priced_cents
         RETURNING *`,
        terms.subscriptionId,
        terms.periodEnd,
        cost,
      )
      .one();
    const reached = thresholdsReached(terms.usageThresholds, row.priced_cents);
    if (reached <= row.reached) return;
    this.sql.exec(
      `UPDATE progressive_periods SET reached = ?3,
         pending_invoice_id = coalesce(pending_invoice_id, ?4)
       WHERE subscription_id = ?1 AND period_end = ?2`,
      terms.subscriptionId,
      terms.periodEnd,
      reached,
      crypto.randomUUID(),
    );
    this.wake();
  }

  /** From the alarm, after the flush: issues each pending invoice (a failure is retried by the next alarm). */
  async run(tenantId: string): Promise<void> {
    const pending = this.sql
      .exec<PeriodRow>("SELECT * FROM progressive_periods WHERE pending_invoice_id IS NOT NULL")
      .toArray();
    for (const row of pending) {
      const invoiceId = row.pending_invoice_id as string;
      await this.issue(tenantId, { invoiceId, subscriptionId: row.subscription_id });
      this.sql.exec(
        "UPDATE progressive_periods SET pending_invoice_id = NULL WHERE pending_invoice_id = ?",
        invoiceId,
      );
    }
  }

  hasWork(): boolean {
    return (
      this.sql
        .exec("SELECT 1 FROM progressive_periods WHERE pending_invoice_id IS NOT NULL LIMIT 1")
        .toArray().length > 0
    );
  }
}
