/**
 * The one log line each Cron Trigger run writes: what every scheduled task
 * did, as counts. Operators read it in the Workers logs; `npm run dev` and
 * `npm run cron` read it from the local runtime's output (scripts/lib/
 * scheduled-work.ts), so its message and field names are a contract.
 */
export const SCHEDULED_RUN_MESSAGE = "scheduled run";

/** The scheduled tasks, as named in `failedTasks`. */
export type ScheduledTask =
  | "subscriptions"
  | "tenantEvents"
  | "usageArchive"
  | "idempotencyPrune"
  | "webhookHistoryPrune"
  | "usageReconciler";

export interface ScheduledRunCounts {
  /** Trials that ended: the subscription became ACTIVE. */
  trialsEnded: number;
  /** Ended periods invoiced (PERIOD invoice built and finalized) before the subscription moved on. */
  periodsClosed: number;
  /** Periods whose close failed; those subscriptions stay in them until the next run. */
  periodCloseFailures: number;
  /** Subscriptions moved to their next period. */
  periodsRolled: number;
  /** Subscriptions ended (cancel at period end, trials and pauses cancelled). */
  subscriptionsEnded: number;
  /** Final (PRORATION) invoices of subscriptions that ended inside a period. */
  finalInvoices: number;
  /** First payment attempts of OPEN invoices. */
  paymentsAttempted: number;
  /** Payment retries that were due. */
  paymentRetries: number;
  /** Payments left PENDING too long, settled with the provider. */
  paymentsReconciled: number;
  invoicesWrittenOff: number;
  /** Invoices or payments of the cycle that failed and are tried again next run. */
  billingFailures: number;
  /** Tenant events sent from the outbox (new ones and ones an earlier relay left). */
  tenantEventsSent: number;
  /** Usage events moved from the D1 log of earlier releases into the tenants' usage logs. */
  usageEventsArchived: number;
  /** Moved usage events deleted from D1. */
  usageEventsDeleted: number;
  idempotencyKeysPruned: number;
  /** Finished webhook deliveries, attempts, sent tenant events and deleted endpoints pruned. */
  webhookHistoryPruned: number;
}

export interface ScheduledRunRecord extends ScheduledRunCounts {
  level: "info" | "error";
  msg: typeof SCHEDULED_RUN_MESSAGE;
  cron: string;
  scheduledTime: string;
  durationMs: number;
  /** Tasks that threw (each logs its own error); the next run does their work. */
  failedTasks: ScheduledTask[];
}

/** What the tasks returned; null for a task that failed. */
export interface ScheduledTaskResults {
  subscriptions: {
    activated: number;
    ended: number;
    rolled: number;
    closed: number;
    closeFailures: number;
    settled?: {
      prorations: number;
      reconciled: number;
      firstAttempts: number;
      retries: number;
      writtenOff: number;
      failures: number;
    };
  } | null;
  tenantEvents: number | null;
  usageArchive: { events: number; deleted: number } | null;
  idempotencyPrune: number | null;
  webhookHistoryPrune: Record<string, number | undefined> | null;
  usageReconciler: true | null;
}

export function scheduledRunRecord(
  run: { cron: string; scheduledTime: Date; durationMs: number },
  results: ScheduledTaskResults,
): ScheduledRunRecord {
  const failedTasks = (Object.keys(results) as ScheduledTask[]).filter(
    (task) => results[task] === null,
  );
  const jobs = results.subscriptions;
  const settled = jobs?.settled;
  return {
    level: failedTasks.length > 0 ? "error" : "info",
    msg: SCHEDULED_RUN_MESSAGE,
    cron: run.cron,
    scheduledTime: run.scheduledTime.toISOString(),
    durationMs: run.durationMs,
    trialsEnded: jobs?.activated ?? 0,
    periodsClosed: jobs?.closed ?? 0,
    periodCloseFailures: jobs?.closeFailures ?? 0,
    periodsRolled: jobs?.rolled ?? 0,
    subscriptionsEnded: jobs?.ended ?? 0,
    finalInvoices: settled?.prorations ?? 0,
    paymentsAttempted: settled?.firstAttempts ?? 0,
    paymentRetries: settled?.retries ?? 0,
    paymentsReconciled: settled?.reconciled ?? 0,
    invoicesWrittenOff: settled?.writtenOff ?? 0,
    billingFailures: settled?.failures ?? 0,
    tenantEventsSent: results.tenantEvents ?? 0,
    usageEventsArchived: results.usageArchive?.events ?? 0,
    usageEventsDeleted: results.usageArchive?.deleted ?? 0,
    idempotencyKeysPruned: results.idempotencyPrune ?? 0,
    webhookHistoryPruned: Object.values(results.webhookHistoryPrune ?? {}).reduce<number>(
      (sum, count) => sum + (count ?? 0),
      0,
    ),
    failedTasks,
  };
}

export type TenantScope = readonly string[] | undefined;
