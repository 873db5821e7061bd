import type { UsageThreshold } from "@edge-platform/shared/db/schema/catalog";
import { type ProgressiveRequest, thresholdsReached } from "../../pricing/index.ts";
import { addMissingColumns } from "./column-migrations.ts";
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
 *
 * Units taken back. A logged event's cost is remembered until its flush
 * settles it; when the flush cannot claim the event, its cost leaves the
 * period's priced usage, and a threshold that only it crossed is no longer
 * reached: its invoice, pending and not being issued yet, is dropped.
 * Thresholds already invoiced stay reached.
 */

interface PeriodRow extends Record<string, SqlStorageValue> {
  subscription_id: string;
  period_end: string;
  priced_cents: number;
  reached: number;
  pending_invoice_id: string | null;
  /** The thresholds the period was counted against (JSON). */
  thresholds: string | null;
  /** The thresholds reached before its pending invoice became pending (invoiced or being issued). */
  pending_from: number | null;
}

export class ProgressiveWatch {
  /** Invoices being issued by the alarm right now: a take-back leaves them alone. */
  private readonly issuing = new Set<string>();

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
      CREATE TABLE IF NOT EXISTS progressive_event_costs (
        usage_event_id TEXT PRIMARY KEY,
        subscription_id TEXT NOT NULL,
        period_end TEXT NOT NULL,
        cost INTEGER NOT NULL
      );
    `);
    addMissingColumns(sql, [
      // Objects created before take-backs lowered the watch kept neither.
      {
        table: "progressive_periods",
        column: "thresholds",
        statements: `
          ALTER TABLE progressive_periods ADD COLUMN thresholds TEXT;
          ALTER TABLE progressive_periods ADD COLUMN pending_from INTEGER;
        `,
      },
    ]);
  }

  /**
   * Synchronous, after priced units were counted: `cost` more cents of the
   * period's usage, of the logged event `usageEventId` when they are one's.
   */
  counted(terms: CreditTerms, cost: number, usageEventId?: string): void {
    if (!terms.usageThresholds?.length || !terms.subscriptionId || !terms.periodEnd || cost <= 0) {
      return;
    }
    const row = this.sql
      .exec<PeriodRow>(
        `INSERT INTO progressive_periods (subscription_id, period_end, priced_cents, reached, thresholds)
         VALUES (?1, ?2, ?3, 0, ?4)
         ON CONFLICT DO UPDATE SET priced_cents = priced_cents + excluded.priced_cents,
           thresholds = excluded.thresholds
         RETURNING *`,
        terms.subscriptionId,
        terms.periodEnd,
        cost,
        JSON.stringify(terms.usageThresholds),
      )
      .one();
    if (usageEventId !== undefined) {
      this.sql.exec(
        `INSERT INTO progressive_event_costs (usage_event_id, subscription_id, period_end, cost)
         VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET cost = cost + excluded.cost`,
        usageEventId,
        terms.subscriptionId,
        terms.periodEnd,
        cost,
      );
    }
    const reached = thresholdsReached(terms.usageThresholds, row.priced_cents);
    if (reached <= row.reached) return;
    this.sql.exec(
      `UPDATE progressive_periods SET reached = ?3,
         pending_from = CASE WHEN pending_invoice_id IS NULL THEN reached ELSE pending_from END,
         pending_invoice_id = coalesce(pending_invoice_id, ?4)
       WHERE subscription_id = ?1 AND period_end = ?2`,
      terms.subscriptionId,
      terms.periodEnd,
      reached,
      crypto.randomUUID(),
    );
    this.wake();
  }

  /** Synchronous: the flush claimed these events; their costs stand. */
  forgetEvents(usageEventIds: readonly string[]): void {
    if (this.sql.exec("SELECT 1 FROM progressive_event_costs LIMIT 1").toArray().length === 0) {
      return;
    }
    this.sql.exec(
      "DELETE FROM progressive_event_costs WHERE usage_event_id IN (SELECT value FROM json_each(?))",
      JSON.stringify(usageEventIds),
    );
  }

  /** Synchronous, in the step that takes the event's units back: its cost leaves the period. */
  takeBack(usageEventId: string): void {
    const event = this.sql
      .exec<{ subscription_id: string; period_end: string; cost: number }>(
        "DELETE FROM progressive_event_costs WHERE usage_event_id = ? RETURNING subscription_id, period_end, cost",
        usageEventId,
      )
      .toArray()[0];
    if (!event) return;
    const row = this.sql
      .exec<PeriodRow>(
        `UPDATE progressive_periods SET priced_cents = max(0, priced_cents - ?3)
          WHERE subscription_id = ?1 AND period_end = ?2 RETURNING *`,
        event.subscription_id,
        event.period_end,
        event.cost,
      )
      .toArray()[0];
    const pending = row?.pending_invoice_id;
    if (!row?.thresholds || !pending || row.pending_from === null || this.issuing.has(pending)) {
      return;
    }
    const thresholds = JSON.parse(row.thresholds) as UsageThreshold[];
    const reached = Math.max(thresholdsReached(thresholds, row.priced_cents), row.pending_from);
    if (reached >= row.reached) return;
    const dropped = reached === row.pending_from;
    this.sql.exec(
      `UPDATE progressive_periods SET reached = ?3,
         pending_invoice_id = CASE WHEN ?4 THEN NULL ELSE pending_invoice_id END,
         pending_from = CASE WHEN ?4 THEN NULL ELSE pending_from END
       WHERE subscription_id = ?1 AND period_end = ?2`,
      row.subscription_id,
      row.period_end,
      reached,
      dropped ? 1 : 0,
    );
  }

  /** From the alarm, after the flush: issues each pending invoice (a failure is retried by the next alarm). */
  async run(tenantId: string): Promise<void> {
    const pending = this.sql
      .exec<PeriodRow>("SELECT * FROM progressive_periods WHERE pending_invoice_id IS NOT NULL")
      .toArray();
    for (const row of pending) {
      const invoiceId = row.pending_invoice_id as string;
      this.issuing.add(invoiceId);
      try {
        await this.issue(tenantId, { invoiceId, subscriptionId: row.subscription_id });
      } finally {
        this.issuing.delete(invoiceId);
      }
      this.sql.exec(
        `UPDATE progressive_periods SET pending_invoice_id = NULL, pending_from = NULL
          WHERE pending_invoice_id = ?`,
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
