import type { TopUpRequest } from "../../credits/index.ts";
import type { ProgressiveRequest } from "../../pricing/index.ts";

/**
 * Work the counter decides on and records in its own storage (a pending
 * top-up, a pending progressive invoice) but does not do itself: its alarm
 * hands each one to these, and the worker's root supplies them from the
 * capabilities that own the work. Each must be idempotent on the request's
 * id: a failure is retried with the same request by the next alarm.
 */
export interface CounterEffects {
  startAutoTopUp(tenantId: string, request: TopUpRequest): Promise<void>;
  issueProgressiveInvoice(tenantId: string, request: ProgressiveRequest): Promise<void>;
}
