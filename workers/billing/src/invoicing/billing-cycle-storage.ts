import type { Database } from "@edge-platform/shared/db/client";
import { inList } from "@edge-platform/shared/db/in-list";
import { invoices, paymentAttempts } from "@edge-platform/shared/db/schema/billing";
import { subscriptions } from "@edge-platform/shared/db/schema/subscriptions";
import { and, asc, eq, gt, inArray, isNotNull, isNull, lt, lte, or, sql } from "drizzle-orm";
import type { TenantScope } from "../platform/index.ts";
import { type SubscriptionWithPlan, subscriptionsWithPlan } from "../subscriptions/index.ts";

// The billing cycle's "what is due" queries. `scope` limits them to some
// tenants: tests that drive their own clock through a database other tests
// also use; the Cron Trigger passes none.

const scoped = (
  column: typeof subscriptions.tenantId | typeof invoices.tenantId,
  scope: TenantScope,
) => (scope ? inList(column, scope) : undefined);

export function dueTrialsIn(db: Database, now: string, scope: TenantScope, limit: number) {
  return subscriptionsWithPlan(db)
    .where(
      and(
        eq(subscriptions.status, "TRIALING"),
        lte(subscriptions.trialEndsAt, now),
        scoped(subscriptions.tenantId, scope),
      ),
    )
    .orderBy(asc(subscriptions.trialEndsAt))
    .limit(limit)
    .all();
}

/**
 * Subscriptions whose current period has ended and must be billed: ACTIVE
 * and PAST_DUE ones (closed, then advanced or ended); PAUSED ones, whose
 * period was cut at the pause (closed once: the paused time is not
 * billed); and CANCELLED ones that ended after their period's end before
 * the period was closed (a plan change or a pause's plan change between
 * the period end and the cron run), which would otherwise go unbilled.
 * A period counts as closed once it has an invoice that is not a DRAFT.
 */
export function periodsToClose(
  db: Database,
  now: string,
  scope: TenantScope,
  limit: number,
): Promise<SubscriptionWithPlan[]> {
  const notClosed = sql`NOT EXISTS (SELECT 1 FROM invoices i WHERE i.subscription_id = ${subscriptions.id}
    AND i.period_start = ${subscriptions.currentPeriodStart} AND i.kind = 'PERIOD' AND i.status <> 'DRAFT')`;
  const billable = sql`${subscriptions.currentPeriodStart} < ${subscriptions.currentPeriodEnd}
    AND (${subscriptions.trialEndsAt} IS NULL OR ${subscriptions.trialEndsAt} <= ${subscriptions.currentPeriodStart})`;
  return subscriptionsWithPlan(db)
    .where(
      and(
        lte(subscriptions.currentPeriodEnd, now),
        or(
          inArray(subscriptions.status, ["ACTIVE", "PAST_DUE"]),
          and(eq(subscriptions.status, "PAUSED"), billable, notClosed),
          and(
            eq(subscriptions.status, "CANCELLED"),
            gt(subscriptions.endedAt, subscriptions.currentPeriodEnd),
            billable,
            notClosed,
          ),
        ),
        scoped(subscriptions.tenantId, scope),
      ),
    )
    .orderBy(asc(subscriptions.currentPeriodEnd))
    .limit(limit)
    .all();
}

/** Cancel-at-period-end subscriptions that are not billed (trialing, paused) whose period ended. */
export function unbilledCancellations(
  db: Database,
  now: string,
  scope: TenantScope,
  limit: number,
) {
  return db
    .select()
    .from(subscriptions)
    .where(
      and(
        eq(subscriptions.cancelAtPeriodEnd, true),
        inArray(subscriptions.status, ["TRIALING", "PAUSED"]),
        lte(subscriptions.currentPeriodEnd, now),
        scoped(subscriptions.tenantId, scope),
      ),
    )
    .orderBy(asc(subscriptions.currentPeriodEnd))
    .limit(limit)
    .all();
}

/**
 * Subscriptions that ended inside a billable period (plan change,
 * immediate cancel, cancelled for non-payment) and have no final invoice
 * for it yet.
 */
export function endedMidPeriod(db: Database, scope: TenantScope, limit: number) {
  return subscriptionsWithPlan(db)
    .where(
      and(
        eq(subscriptions.status, "CANCELLED"),
        isNotNull(subscriptions.endedAt),
        gt(subscriptions.endedAt, subscriptions.currentPeriodStart),
        lt(subscriptions.endedAt, subscriptions.currentPeriodEnd),
        or(
          isNull(subscriptions.trialEndsAt),
          lte(subscriptions.trialEndsAt, subscriptions.currentPeriodStart),
        ),
        sql`NOT EXISTS (SELECT 1 FROM invoices i WHERE i.subscription_id = ${subscriptions.id}
              AND i.period_start = ${subscriptions.currentPeriodStart}
              AND (i.kind = 'PRORATION' OR i.status NOT IN ('DRAFT', 'VOID')))`,
        scoped(subscriptions.tenantId, scope),
      ),
    )
    .orderBy(asc(subscriptions.endedAt))
    .limit(limit)
    .all();
}

/** OPEN invoices that have no payment attempt yet. */
export function invoicesAwaitingFirstAttempt(db: Database, scope: TenantScope, limit: number) {
  return db
    .select({ id: invoices.id })
    .from(invoices)
    .where(
      and(
        eq(invoices.status, "OPEN"),
        sql`NOT EXISTS (SELECT 1 FROM payment_attempts pa WHERE pa.invoice_id = ${invoices.id})`,
        scoped(invoices.tenantId, scope),
      ),
    )
    .orderBy(asc(invoices.finalizedAt))
    .limit(limit)
    .all();
}

/** Failed attempts whose retry is due and not made yet, on invoices still OPEN. */
export function retriesDue(db: Database, now: string, scope: TenantScope, limit: number) {
  return db
    .select({ invoiceId: paymentAttempts.invoiceId, attemptNumber: paymentAttempts.attemptNumber })
    .from(paymentAttempts)
    .innerJoin(invoices, eq(invoices.id, paymentAttempts.invoiceId))
    .where(
      and(
        inArray(paymentAttempts.status, ["FAILED", "CANCELLED"]),
        lte(paymentAttempts.nextRetryAt, now),
        eq(invoices.status, "OPEN"),
        sql`NOT EXISTS (SELECT 1 FROM payment_attempts later WHERE later.invoice_id = ${paymentAttempts.invoiceId}
              AND later.attempt_number = ${paymentAttempts.attemptNumber} + 1)`,
        scoped(invoices.tenantId, scope),
      ),
    )
    .orderBy(asc(paymentAttempts.nextRetryAt))
    .limit(limit)
    .all();
}

/** OPEN invoices whose last retry failed before `exhaustedBefore` (the grace period is over). */
export function graceExpired(
  db: Database,
  exhaustedBefore: string,
  scope: TenantScope,
  limit: number,
) {
  return db
    .select({
      id: invoices.id,
      tenantId: invoices.tenantId,
      subscriptionId: invoices.subscriptionId,
    })
    .from(invoices)
    .where(
      and(
        eq(invoices.status, "OPEN"),
        lte(invoices.dunningExhaustedAt, exhaustedBefore),
        scoped(invoices.tenantId, scope),
      ),
    )
    .orderBy(asc(invoices.dunningExhaustedAt))
    .limit(limit)
    .all();
}

/**
 * Grace over: the invoice becomes UNCOLLECTIBLE (its CHARGE stays: the
 * tenant still owes it) and a still PAST_DUE subscription is CANCELLED.
 */
export function writeOffStatements(
  d1: D1Database,
  invoice: { id: string; subscriptionId: string },
  now: string,
) {
  return [
    d1
      .prepare(
        `UPDATE invoices SET status = 'UNCOLLECTIBLE', uncollectible_at = ?2, updated_at = ?2
         WHERE id = ?1 AND status = 'OPEN'`,
      )
      .bind(invoice.id, now),
    d1
      .prepare(
        `UPDATE subscriptions SET status = 'CANCELLED', cancelled_at = coalesce(cancelled_at, ?2), ended_at = ?2, updated_at = ?2
         WHERE id = ?1 AND status = 'PAST_DUE'
           AND EXISTS (SELECT 1 FROM invoices WHERE id = ?3 AND status = 'UNCOLLECTIBLE' AND uncollectible_at = ?2)`,
      )
      .bind(invoice.subscriptionId, now, invoice.id),
  ];
}
