import { describe, expect, it } from "vitest";
import { type ScheduledTaskResults, scheduledRunRecord } from "./scheduled-run.ts";

const run = {
  cron: "* * * * *",
  scheduledTime: new Date("2026-11-25T16:05:00.000Z"),
  durationMs: 42,
};

const allDone: ScheduledTaskResults = {
  subscriptions: {
    activated: 1,
    ended: 2,
    rolled: 3,
    closed: 4,
    closeFailures: 0,
    settled: {
      prorations: 5,
      reconciled: 6,
      firstAttempts: 7,
      retries: 8,
      writtenOff: 9,
      failures: 0,
    },
  },
  tenantEvents: 10,
  usageArchive: { events: 11, deleted: 12 },
  idempotencyPrune: 13,
  webhookHistoryPrune: { attempts: 1, deliveries: 2, events: 3, endpoints: undefined },
  usageReconciler: true,
};

describe("scheduledRunRecord: the one line a Cron Trigger run logs", () => {
  it("names every task's counts under one message, with the run's cron and time", () => {
    expect(scheduledRunRecord(run, allDone)).toEqual({
      level: "info",
      msg: "scheduled run",
      cron: "* * * * *",
      scheduledTime: "2026-11-25T16:05:00.000Z",
      durationMs: 42,
      trialsEnded: 1,
      subscriptionsEnded: 2,
      periodsRolled: 3,
      periodsClosed: 4,
      periodCloseFailures: 0,
      finalInvoices: 5,
      paymentsReconciled: 6,
      paymentsAttempted: 7,
      paymentRetries: 8,
      invoicesWrittenOff: 9,
      billingFailures: 0,
      tenantEventsSent: 10,
      usageEventsArchived: 11,
      usageEventsDeleted: 12,
      idempotencyKeysPruned: 13,
      webhookHistoryPruned: 6,
      failedTasks: [],
    });
  });

  it("is an error line naming the tasks that failed, their counts zero", () => {
    const record = scheduledRunRecord(run, {
      ...allDone,
      subscriptions: null,
      usageArchive: null,
      usageReconciler: null,
    });
    expect(record.level).toBe("error");
    expect(record.failedTasks).toEqual(["subscriptions", "usageArchive", "usageReconciler"]);
    expect(record).toMatchObject({ periodsClosed: 0, finalInvoices: 0, usageEventsArchived: 0 });
    expect(record.tenantEventsSent).toBe(10);
  });

  it("counts no payments when the cycle ran without settling", () => {
    const { settled: _, ...unsettled } = allDone.subscriptions!;
    const record = scheduledRunRecord(run, { ...allDone, subscriptions: unsettled });
    expect(record).toMatchObject({ periodsClosed: 4, paymentsAttempted: 0, finalInvoices: 0 });
    expect(record.failedTasks).toEqual([]);
  });
});
