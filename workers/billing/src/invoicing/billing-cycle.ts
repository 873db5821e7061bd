import { MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import { type Database, database } from "@edge-platform/shared/db/client";
import type { InvoiceKind } from "@edge-platform/shared/db/schema/billing";
import { SYSTEM_AUDIT } from "../audit/index.ts";
import { invoiceEventStatement } from "../notifications/index.ts";
import {
  GRACE_PERIOD_DAYS,
  type PaymentService,
  PENDING_RECONCILE_AFTER_MINUTES,
} from "../payments/index.ts";
import type { TenantScope } from "../platform/index.ts";
import type { SubscriptionWithPlan } from "../subscriptions/index.ts";
import {
  endedMidPeriod,
  graceExpired,
  invoicesAwaitingFirstAttempt,
  retriesDue,
  writeOffStatements,
} from "./billing-cycle-storage.ts";
import { draftInvoiceFor, finalizeInvoice, flushUsage, invoiceAudit } from "./service.ts";
import {
  findInvoiceForPeriod,
  insertDraftInvoice,
  replaceDraftLines,
  voidStatements,
} from "./storage.ts";

const BATCH = 100;
const MAX_ROUNDS = 20;

export interface BillingCycleOptions {
  /** Attempts PENDING longer than this are reconciled with the provider (default 60). */
  pendingReconcileMinutes?: number;
}

export interface BillingSettleReport {
  prorations: number;
  reconciled: number;
  firstAttempts: number;
  retries: number;
  writtenOff: number;
  failures: number;
  /** Tenants whose subscriptions changed (their counter objects must re-read). */
  touchedTenants: string[];
}

function logFailure(msg: string, detail: Record<string, unknown>, error: unknown) {
  console.error(JSON.stringify({ level: "error", msg, ...detail, error: String(error) }));
}

/**
 * The money half of the scheduled jobs (runSubscriptionJobs calls it):
 *
 * 1. `closePeriod`, for each subscription whose period has ended, BEFORE the
 *    subscription is advanced: the tenant's counter object flushes, so the
 *    invoice is built from every unit of the closed period; the PERIOD
 *    invoice is created (or a manual DRAFT of it rebuilt) and finalized.
 *    Advancing happens after, in the caller, with a conditional update on
 *    the old period end, so each period is closed and left exactly once;
 *    if closing throws, the subscription is not advanced and the next run
 *    tries again. Payment is not part of it: nothing about payment can
 *    stop or repeat a period change.
 * 2. `settle`, after every subscription has moved on: final (PRORATION)
 *    invoices for subscriptions that ended inside a period, the first
 *    payment attempt of every OPEN invoice that has none, due retries, and
 *    write-offs once the grace period after the last failed retry is over.
 *
 * Every step is keyed on state (unique invoice per period and kind, unique
 * attempt number per invoice, conditional transitions), so running the
 * jobs twice for the same moment changes nothing the second time.
 */
export class BillingCycle {
  private readonly db: Database;

  constructor(
    private readonly env: Env,
    /** Charges the cycle's invoices, as the system. */
    private readonly payments: PaymentService,
    private readonly scope?: TenantScope,
    private readonly options: BillingCycleOptions = {},
  ) {
    this.db = database(env.DB);
  }

  get tenantScope(): TenantScope {
    return this.scope;
  }

  /**
   * Bills the period a paused subscription was cut to at its pause, unless
   * it is already billed (or empty): what resume does before starting the
   * new cycle.
   */
  async closePausedPeriod(found: SubscriptionWithPlan, now: Date): Promise<void> {
    const { subscription } = found;
    if (subscription.status !== "PAUSED") return;
    if (subscription.currentPeriodStart >= subscription.currentPeriodEnd) return;
    const trialEndsAt = subscription.trialEndsAt;
    if (trialEndsAt && trialEndsAt > subscription.currentPeriodStart) return;
    const existing = await findInvoiceForPeriod(
      this.db,
      subscription.id,
      subscription.currentPeriodStart,
      "PERIOD",
    );
    if (existing && existing.status !== "DRAFT") return;
    await this.closePeriod(found, now);
  }

  async closePeriod(found: SubscriptionWithPlan, now: Date): Promise<void> {
    const { subscription } = found;
    await this.closeInvoice(
      found,
      "PERIOD",
      {
        start: new Date(subscription.currentPeriodStart),
        end: new Date(subscription.currentPeriodEnd),
      },
      null,
      now,
    );
  }

  async settle(now: Date): Promise<BillingSettleReport> {
    const report: BillingSettleReport = {
      prorations: 0,
      reconciled: 0,
      firstAttempts: 0,
      retries: 0,
      writtenOff: 0,
      failures: 0,
      touchedTenants: [],
    };
    await this.closeEndedMidPeriod(now, report);

    const reconciled = await this.payments.reconcileStale(
      now,
      this.options.pendingReconcileMinutes ?? PENDING_RECONCILE_AFTER_MINUTES,
      this.scope,
      BATCH * 5,
    );
    report.reconciled = reconciled.settled;
    report.failures += reconciled.failures;

    await this.attemptFirstPayments(now, report);
    await this.attemptDueRetries(now, report);
    report.touchedTenants = await this.writeOffAfterGrace(now, report);
    return report;
  }

  /**
   * The final (PRORATION) invoice of each subscription that ended inside
   * its period; one that failed is left for the next run, not retried in
   * this one.
   */
  private async closeEndedMidPeriod(now: Date, report: BillingSettleReport) {
    const failedProrations = new Set<string>();
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const ended = (await endedMidPeriod(this.db, this.scope, BATCH)).filter(
        (found) => !failedProrations.has(found.subscription.id),
      );
      if (ended.length === 0) break;
      for (const found of ended) {
        const { subscription } = found;
        try {
          await this.closeInvoice(
            found,
            "PRORATION",
            {
              start: new Date(subscription.currentPeriodStart),
              end: new Date(subscription.currentPeriodEnd),
            },
            new Date(subscription.endedAt as string),
            now,
          );
          report.prorations++;
        } catch (error) {
          failedProrations.add(subscription.id);
          report.failures++;
          logFailure("proration invoice failed", { subscriptionId: subscription.id }, error);
        }
      }
    }
  }

  private async attemptFirstPayments(now: Date, report: BillingSettleReport) {
    const first = await invoicesAwaitingFirstAttempt(this.db, this.scope, BATCH * 5);
    for (const { id } of first) {
      try {
        await this.payments.attempt(id, 1, now);
        report.firstAttempts++;
      } catch (error) {
        report.failures++;
        logFailure("payment attempt failed", { invoiceId: id, attemptNumber: 1 }, error);
      }
    }
  }

  private async attemptDueRetries(now: Date, report: BillingSettleReport) {
    const retries = await retriesDue(this.db, now.toISOString(), this.scope, BATCH * 5);
    for (const retry of retries) {
      try {
        await this.payments.attempt(retry.invoiceId, retry.attemptNumber + 1, now);
        report.retries++;
      } catch (error) {
        report.failures++;
        logFailure(
          "payment retry failed",
          { invoiceId: retry.invoiceId, attemptNumber: retry.attemptNumber + 1 },
          error,
        );
      }
    }
  }

  /**
   * Invoices still unpaid when the grace period after their last failed
   * retry is over are written off; returns the tenants whose subscriptions
   * the write-offs changed (their counter objects must re-read).
   */
  private async writeOffAfterGrace(now: Date, report: BillingSettleReport): Promise<string[]> {
    const at = now.toISOString();
    const exhaustedBefore = new Date(now.getTime() - GRACE_PERIOD_DAYS * MS_PER_DAY).toISOString();
    const touched = new Set<string>();
    for (const invoice of await graceExpired(this.db, exhaustedBefore, this.scope, BATCH * 5)) {
      const results = await this.env.DB.batch(writeOffStatements(this.env.DB, invoice, at));
      if ((results[0]?.meta.changes ?? 0) === 1) report.writtenOff++;
      if ((results[1]?.meta.changes ?? 0) === 1) touched.add(invoice.tenantId);
    }
    return [...touched];
  }

  /**
   * The invoice of `kind` for the subscription's period: created from the
   * usage stored once the counter object has flushed, or, when a manual
   * DRAFT exists, rebuilt with the complete usage; then finalized. An
   * invoice that is already past DRAFT is left as it is.
   */
  private async closeInvoice(
    found: SubscriptionWithPlan,
    kind: InvoiceKind,
    period: { start: Date; end: Date },
    endedAt: Date | null,
    now: Date,
  ): Promise<void> {
    const { subscription } = found;
    const at = now.toISOString();
    await flushUsage(this.env.ENTITLEMENT_COUNTER, subscription.tenantId);
    let invoice = await findInvoiceForPeriod(
      this.db,
      subscription.id,
      subscription.currentPeriodStart,
      kind,
    );
    if (!invoice) {
      const draft = await draftInvoiceFor(this.db, this.env.DB, found, kind, period, endedAt, null);
      await insertDraftInvoice(
        this.env.DB,
        {
          id: crypto.randomUUID(),
          tenantId: subscription.tenantId,
          subscriptionId: subscription.id,
        },
        draft,
        at,
      );
      invoice = await findInvoiceForPeriod(
        this.db,
        subscription.id,
        subscription.currentPeriodStart,
        kind,
      );
    } else if (invoice.status === "DRAFT") {
      const draft = await draftInvoiceFor(
        this.db,
        this.env.DB,
        found,
        kind,
        period,
        endedAt,
        invoice.id,
      );
      await replaceDraftLines(this.env.DB, invoice.id, draft, at);
    }
    if (!invoice) throw new Error("invoice missing after insert");
    if (kind === "PRORATION") {
      // A manual DRAFT of the same period is replaced by the final invoice.
      const manual = await findInvoiceForPeriod(
        this.db,
        subscription.id,
        subscription.currentPeriodStart,
        "PERIOD",
      );
      if (manual?.status === "DRAFT") {
        await this.env.DB.batch([
          ...voidStatements(this.env.DB, manual.id, now),
          invoiceAudit(this.env.DB, SYSTEM_AUDIT, manual, "invoice.voided", "DRAFT", "VOID", now, {
            replacedBy: { after: invoice.id },
          }),
          invoiceEventStatement(this.env.DB, "invoice.voided", manual.id, "VOID", now),
        ]);
      }
    }
    if (invoice.status === "DRAFT") await finalizeInvoice(this.env.DB, invoice, now);
  }
}
