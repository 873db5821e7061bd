import type { Database } from "@edge-platform/shared/db/client";
import { tenantEvents } from "@edge-platform/shared/db/schema/webhooks";
import { type SQL, sql } from "drizzle-orm";
import type { RawCondition } from "../audit/index.ts";
import type { TenantEvent, TenantEventType } from "./domain/tenant-events.ts";

// The tenant-event outbox: billing code puts an event row into the SAME
// D1 batch as the change it describes (so the event exists exactly when the
// change committed), and the relay (notifications/tenant-events.ts) sends it to
// the `tenant-events` queue afterwards.

export interface TenantEventRow {
  id: string;
  tenant_id: string;
  type: string;
  data: string;
  created_at: string;
  relay_after: string | null;
  sent_at: string | null;
}

export const newTenantEventId = () => `evt_${crypto.randomUUID()}`;

/**
 * An event whose data is known before the batch; with `when`, written only
 * if the condition holds at that point of the batch (the change happened).
 */
export function tenantEventStatement(
  d1: D1Database,
  event: { type: TenantEventType; tenantId: string; data: Record<string, unknown> },
  options: { now: Date; when?: RawCondition; id?: string },
): D1PreparedStatement {
  const at = options.now.toISOString();
  return d1
    .prepare(
      `INSERT INTO tenant_events (id, tenant_id, type, data, created_at)
       SELECT ?, ?, ?, ?, ? WHERE ${options.when?.sql ?? "1"}
       ON CONFLICT (id) DO NOTHING`,
    )
    .bind(
      options.id ?? newTenantEventId(),
      event.tenantId,
      event.type,
      JSON.stringify(event.data),
      at,
      ...(options.when?.params ?? []),
    );
}

/**
 * A tenant event whose tenant and data are read, in the same batch, from a
 * row an earlier statement wrote: `select` answers `tenant_id` and `data`
 * (a JSON object), one row or none.
 */
export function tenantEventFromRowStatement(
  d1: D1Database,
  type: TenantEventType,
  select: { sql: string; params: unknown[] },
  options: { now: Date; id?: string },
): D1PreparedStatement {
  return d1
    .prepare(
      `INSERT INTO tenant_events (id, tenant_id, type, data, created_at)
       SELECT ?, row.tenant_id, ?, row.data, ? FROM (${select.sql}) row WHERE 1
       ON CONFLICT (id) DO NOTHING`,
    )
    .bind(options.id ?? newTenantEventId(), type, options.now.toISOString(), ...select.params);
}

/** The invoice as webhooks carry it (the API's invoice without its line items). */
const INVOICE_DATA = `json_object(
  'id', id, 'tenantId', tenant_id, 'subscriptionId', subscription_id, 'kind', kind,
  'invoiceNumber', invoice_number, 'status', status, 'currency', currency,
  'subtotal', subtotal, 'total', total, 'periodStart', period_start, 'periodEnd', period_end,
  'dueDate', due_date, 'finalizedAt', finalized_at, 'paidAt', paid_at, 'voidedAt', voided_at)`;

const REACHED_STAMP = { OPEN: "finalized_at", VOID: "voided_at", PAID: "paid_at" } as const;

/**
 * `invoice.finalized` / `.voided` / `.paid`, written only if this batch took
 * the invoice to `reached` (its timestamp column holds this batch's `at`),
 * with the invoice's data as it stands at that point of the batch (its new
 * number included).
 */
export function invoiceEventStatement(
  d1: D1Database,
  type: "invoice.finalized" | "invoice.voided" | "invoice.paid",
  invoiceId: string,
  reached: "OPEN" | "VOID" | "PAID",
  now: Date,
): D1PreparedStatement {
  const at = now.toISOString();
  return d1
    .prepare(
      `INSERT INTO tenant_events (id, tenant_id, type, data, created_at)
       SELECT ?, tenant_id, ?, ${INVOICE_DATA}, ?
       FROM invoices WHERE id = ? AND status = ? AND ${REACHED_STAMP[reached]} = ?`,
    )
    .bind(newTenantEventId(), type, at, invoiceId, reached, at);
}

/** What happened to the subscription in a `subscription.changed` event (`data.change`). */
export type SubscriptionChange =
  | "created"
  | "plan_changed"
  | "cancelled"
  | "cancel_scheduled"
  | "paused"
  | "resumed";

/**
 * `subscription.changed` for drizzle batches: the subscription as it stands
 * at that point of the batch, written only if `when` holds (e.g.
 * ROW_CHANGED right after the guarded update's audit row).
 */
export function subscriptionEventEntry(
  db: Database,
  subscriptionId: string,
  change: SubscriptionChange,
  now: Date,
  options: { when?: SQL; previousSubscriptionId?: string | null } = {},
) {
  const at = now.toISOString();
  // Values in the table's column order (drizzle lists every column for INSERT ... SELECT).
  return db.insert(tenantEvents).select(
    sql`SELECT ${newTenantEventId()}, tenant_id, 'subscription.changed', json_object(
        'id', id, 'change', ${change}, 'status', status, 'planId', plan_id, 'priceId', price_id,
        'currentPeriodStart', current_period_start, 'currentPeriodEnd', current_period_end,
        'cancelAtPeriodEnd', json(CASE WHEN cancel_at_period_end THEN 'true' ELSE 'false' END),
        'trialEndsAt', trial_ends_at, 'cancelledAt', cancelled_at, 'endedAt', ended_at,
        'pausedAt', paused_at, 'previousSubscriptionId', ${options.previousSubscriptionId ?? null}),
      ${at}, NULL, NULL
      FROM subscriptions WHERE id = ${subscriptionId} AND ${options.when ?? sql`1`}`,
  );
}

/**
 * Claims up to `limit` unsent events that no relay holds (never claimed, or
 * the lease ran out), leasing them until `leaseUntil` so a concurrent relay
 * skips them. The writer's clock plays no part (a job at an injected time
 * writes events that are relayed at once).
 */
export async function claimUnsentTenantEvents(
  d1: D1Database,
  now: Date,
  leaseUntil: Date,
  limit: number,
): Promise<TenantEventRow[]> {
  const claimed = await d1
    .prepare(
      `UPDATE tenant_events SET relay_after = ?2
       WHERE id IN (
         SELECT id FROM tenant_events
         WHERE sent_at IS NULL AND (relay_after IS NULL OR relay_after <= ?1)
         ORDER BY created_at LIMIT ?3)
       AND sent_at IS NULL AND (relay_after IS NULL OR relay_after <= ?1)
       RETURNING *`,
    )
    .bind(now.toISOString(), leaseUntil.toISOString(), limit)
    .all<TenantEventRow>();
  return claimed.results.sort((a, b) => a.created_at.localeCompare(b.created_at));
}

/**
 * Puts an event whose fan-out kept failing back into the outbox as unsent,
 * held until `retryAfter` (the cron sweep relays it then). Events emitted
 * straight to the queue (usage alerts) get their first outbox row here.
 */
export function parkTenantEventStatement(
  d1: D1Database,
  event: TenantEvent,
  retryAfter: Date,
): D1PreparedStatement {
  return d1
    .prepare(
      `INSERT INTO tenant_events (id, tenant_id, type, data, created_at, relay_after)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6)
       ON CONFLICT (id) DO UPDATE SET sent_at = NULL, relay_after = ?6`,
    )
    .bind(
      event.id,
      event.tenantId,
      event.type,
      JSON.stringify(event.data),
      event.createdAt,
      retryAfter.toISOString(),
    );
}

export async function markTenantEventsSent(d1: D1Database, ids: string[], now: Date) {
  if (ids.length === 0) return;
  await d1
    .prepare(`UPDATE tenant_events SET sent_at = ? WHERE id IN (SELECT value FROM json_each(?))`)
    .bind(now.toISOString(), JSON.stringify(ids))
    .run();
}

export function tenantEventOf(row: TenantEventRow): TenantEvent {
  return {
    id: row.id,
    type: row.type as TenantEventType,
    createdAt: row.created_at,
    tenantId: row.tenant_id,
    data: JSON.parse(row.data) as Record<string, unknown>,
  };
}
