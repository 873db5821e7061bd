import { z } from "zod";

/**
 * The events a tenant's own systems can subscribe to (outbound webhooks).
 * One message on the `tenant-events` queue is one event; its JSON is exactly
 * the body each subscribed endpoint receives, so a receiver dedups on `id`.
 */
export const TENANT_EVENT_TYPES = [
  "invoice.finalized",
  "invoice.paid",
  "invoice.voided",
  "payment.failed",
  "subscription.changed",
  "subscription.past_due",
  "usage.threshold_reached",
  "quota.exhausted",
  "credits.expired",
  "credits.depleted",
  "credits.balance_low",
  "credits.top_up_failed",
  "invoice.progressive_issued",
  "credit_note.created",
  "refund.succeeded",
  "refund.failed",
] as const;

export type TenantEventType = (typeof TENANT_EVENT_TYPES)[number];

export const tenantEventSchema = z.object({
  /** `evt_` + a UUID; emitters that may repeat derive it deterministically so repeats dedup. */
  id: z.string().min(1).max(200),
  type: z.enum(TENANT_EVENT_TYPES),
  createdAt: z.iso.datetime(),
  tenantId: z.string().min(1),
  data: z.record(z.string(), z.unknown()),
});

export type TenantEvent = z.infer<typeof tenantEventSchema>;

export interface NewTenantEvent {
  type: TenantEventType;
  tenantId: string;
  data: Record<string, unknown>;
  /** Give one when the same fact may be emitted twice (retries), so both carry one id. */
  id?: string;
  createdAt?: Date;
}

export function tenantEvent(event: NewTenantEvent, now: Date = new Date()): TenantEvent {
  return {
    id: event.id ?? `evt_${crypto.randomUUID()}`,
    type: event.type,
    createdAt: (event.createdAt ?? now).toISOString(),
    tenantId: event.tenantId,
    data: event.data,
  };
}
