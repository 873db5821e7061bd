import type { Database } from "@edge-platform/shared/db/client";
import type { PaymentEvent } from "./domain/payment.ts";
import {
  claimWebhookEvent,
  findWebhookEvent,
  finishWebhookEvent,
  storeWebhookEvent,
} from "./provider-webhook-storage.ts";
import type { PaymentService } from "./service.ts";

export type WebhookProvider = "payprovider" | "fake";

export interface WebhookQueueMessage {
  webhookEventId: string;
}

type Json = Record<string, unknown>;
const asObject = (value: unknown): Json =>
  value && typeof value === "object" && !Array.isArray(value) ? (value as Json) : {};
const asString = (value: unknown): string | null => (typeof value === "string" ? value : null);
const asInteger = (value: unknown): number | null =>
  typeof value === "number" && Number.isSafeInteger(value) ? value : null;

/**
 * A Stripe-format event (`{id, type, data: {object}}`) as a payment event:
 * payment_intent.succeeded / .payment_failed / .requires_action / .canceled
 * on the intent; charge.refunded on the charge (its `payment_intent` names
 * our payment, `amount_refunded` is cumulative). Anything else is unknown.
 */
export function normalizePayProviderEvent(payload: unknown): PaymentEvent {
  const event = asObject(payload);
  const type = asString(event.type) ?? "";
  const object = asObject(asObject(event.data).object);
  const id = asString(object.id);
  const currency = asString(object.currency);
  const attemptId = asString(asObject(object.metadata).attemptId);
  switch (type) {
    case "payment_intent.succeeded":
    case "payment_intent.requires_action":
      if (!id) break;
      return {
        type: type === "payment_intent.succeeded" ? "payment.succeeded" : "payment.requires_action",
        providerPaymentId: id,
        amount: asInteger(object.amount),
        currency,
        attemptId,
      };
    case "payment_intent.payment_failed":
    case "payment_intent.canceled":
      if (!id) break;
      return {
        type: type === "payment_intent.payment_failed" ? "payment.failed" : "payment.cancelled",
        providerPaymentId: id,
        amount: asInteger(object.amount),
        currency,
        attemptId,
        failureReason:
          asString(asObject(object.last_payment_error).message) ??
          asString(object.cancellation_reason),
      };
    case "charge.refunded": {
      const paymentId = asString(object.payment_intent);
      const refunded = asInteger(object.amount_refunded);
      if (!paymentId || refunded === null || !id) break;
      return {
        type: "charge.refunded",
        providerPaymentId: paymentId,
        amountRefunded: refunded,
        currency,
        reference: id,
      };
    }
  }
  return { type: "unknown", providerType: type || "(none)" };
}

export const FAKE_EVENT_TYPES = [
  "payment.succeeded",
  "payment.failed",
  "payment.requires_action",
  "payment.cancelled",
  "charge.refunded",
] as const;

/** The fake webhook's body (`{type, providerPaymentId, amount, currency, failureReason?}`). */
export function normalizeFakeEvent(payload: unknown): PaymentEvent {
  const body = asObject(payload);
  const type = asString(body.type) ?? "";
  const providerPaymentId = asString(body.providerPaymentId);
  const amount = asInteger(body.amount);
  const currency = asString(body.currency);
  if (!providerPaymentId) return { type: "unknown", providerType: type || "(none)" };
  switch (type) {
    case "payment.succeeded":
    case "payment.requires_action":
      return { type, providerPaymentId, amount, currency };
    case "payment.failed":
    case "payment.cancelled":
      return {
        type,
        providerPaymentId,
        amount,
        currency,
        failureReason: asString(body.failureReason),
      };
    case "charge.refunded":
      return {
        type,
        providerPaymentId,
        amountRefunded: amount ?? 0,
        currency,
        reference: asString(body.id) ?? providerPaymentId,
      };
  }
  return { type: "unknown", providerType: type || "(none)" };
}

/**
 * Webhooks are stored raw (once per provider event id) before they are
 * answered, then processed from the queue. A redelivered event that is not
 * done yet (still pending, or failed) is queued again; one that is done is
 * only acknowledged.
 */
export class WebhookService {
  constructor(
    private readonly db: Database,
    private readonly d1: D1Database,
    private readonly queue: Queue<WebhookQueueMessage>,
  ) {}

  async receive(event: {
    provider: WebhookProvider;
    providerEventId: string;
    eventType: string;
    rawPayload: string;
    now: Date;
  }) {
    const { row, created } = await storeWebhookEvent(this.d1, this.db, {
      ...event,
      now: event.now.toISOString(),
    });
    const done = row.status === "PROCESSED" || row.status === "SKIPPED";
    if (!created && row.status === "FAILED") {
      // The provider redelivered an event we failed on: it goes round again.
      await this.d1
        .prepare(
          "UPDATE webhook_events SET status = 'PENDING', updated_at = ?2 WHERE id = ?1 AND status = 'FAILED'",
        )
        .bind(row.id, event.now.toISOString())
        .run();
    }
    if (created || !done) await this.queue.send({ webhookEventId: row.id });
    return { received: true as const, eventId: row.providerEventId, duplicate: !created };
  }
}

/** Processes one stored event (the queue consumer). Throws to have the message retried. */
export async function processWebhookEvent(
  db: Database,
  d1: D1Database,
  payments: PaymentService,
  webhookEventId: string,
  now: Date,
): Promise<"PROCESSED" | "SKIPPED" | "ALREADY_DONE" | "MISSING"> {
  const row = await findWebhookEvent(db, webhookEventId);
  if (!row) return "MISSING";
  if (!(await claimWebhookEvent(d1, webhookEventId, now.toISOString()))) return "ALREADY_DONE";
  let payload: unknown;
  try {
    payload = JSON.parse(row.rawPayload);
  } catch {
    payload = null;
  }
  const event =
    row.provider === "fake" ? normalizeFakeEvent(payload) : normalizePayProviderEvent(payload);
  try {
    const outcome = await payments.apply(event, now, payload);
    const status = event.type === "unknown" ? "SKIPPED" : "PROCESSED";
    await finishWebhookEvent(d1, webhookEventId, {
      status,
      outcome: outcome.note,
      now: new Date().toISOString(),
    });
    return status;
  } catch (error) {
    await finishWebhookEvent(d1, webhookEventId, {
      status: "FAILED",
      error: String(error).slice(0, 1000),
      now: new Date().toISOString(),
    });
    throw error;
  }
}
