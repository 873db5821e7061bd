import { auditStatement, SYSTEM_AUDIT } from "../audit/index.ts";
import { deliverySignatureHeaders } from "./domain/delivery-signature.ts";
import { tenantEventSchema } from "./domain/tenant-events.ts";
import {
  DELIVERY_USER_AGENT,
  disableVerdict,
  EVENT_ID_HEADER,
  EVENT_TYPE_HEADER,
  isDelivered,
  retryDelaySeconds,
  subscribesTo,
  type WebhookDeliverySettings,
} from "./domain/webhook-delivery.ts";
import { decryptWebhookSecret, previousSecretOverlapEnd } from "./domain/webhook-secret.ts";
import { checkWebhookUrl } from "./domain/webhook-url.ts";
import { parkTenantEventStatement } from "./tenant-event-storage.ts";
import type { WebhookDeliveryMessage } from "./webhook-endpoint-service.ts";
import {
  disableEndpointStatement,
  enabledEndpoints,
  endpointHealthStatement,
  findDeliveryWithEndpoint,
  finishDeliveryStatement,
  insertDeliveryStatement,
  markDeliveriesQueued,
  recordAttemptStatements,
  unqueuedDeliveries,
  type WebhookDeliveryRow,
  type WebhookEndpointRow,
} from "./webhook-endpoint-storage.ts";

export type Fetcher = (url: string, init: RequestInit) => Promise<Response>;

export interface DeliveryEnv {
  DB: D1Database;
  WEBHOOK_DELIVERIES_QUEUE: Queue<WebhookDeliveryMessage>;
  WEBHOOK_SECRET_KEY?: string;
}

/** Seconds before a fan-out that failed (D1 or the queue unavailable) is tried again. */
const FAN_OUT_RETRY_SECONDS = 5;
/** A dead-lettered event waits this long in the outbox before the cron sweep relays it again. */
export const PARKED_EVENT_RETRY_MS = 5 * 60_000;
const SEND_BATCH_LIMIT = 100;

function log(level: "info" | "error", msg: string, fields: Record<string, unknown>) {
  const line = JSON.stringify({ level, msg, ...fields });
  if (level === "error") console.error(line);
  else console.log(line);
}

/**
 * The `tenant-events` consumer: each event becomes one delivery per enabled
 * endpoint of its tenant that subscribes to its type (idempotent on the
 * pair, so a redelivered message adds none), and each delivery one message
 * on `webhook-deliveries`. Deliveries whose message was never sent (a crash
 * between the insert and the send) are sent when the event comes round again.
 */
export async function fanOutTenantEvents(
  batch: MessageBatch<unknown>,
  env: DeliveryEnv,
  now: () => Date = () => new Date(),
): Promise<void> {
  for (const message of batch.messages) {
    const parsed = tenantEventSchema.safeParse(message.body);
    if (!parsed.success) {
      log("error", "tenant event malformed; dropped", { messageId: message.id });
      message.ack();
      continue;
    }
    const event = parsed.data;
    try {
      const at = now().toISOString();
      const endpoints = (await enabledEndpoints(env.DB, event.tenantId)).filter((endpoint) =>
        subscribesTo(JSON.parse(endpoint.event_types) as string[], event.type),
      );
      if (endpoints.length > 0) {
        const payload = JSON.stringify(event);
        await env.DB.batch(
          endpoints.map((endpoint) =>
            insertDeliveryStatement(env.DB, {
              id: crypto.randomUUID(),
              tenantId: event.tenantId,
              endpointId: endpoint.id,
              eventId: event.id,
              eventType: event.type,
              payload,
              now: at,
            }),
          ),
        );
      }
      const unqueued = await unqueuedDeliveries(env.DB, event.id);
      for (let start = 0; start < unqueued.length; start += SEND_BATCH_LIMIT) {
        const slice = unqueued.slice(start, start + SEND_BATCH_LIMIT);
        await env.WEBHOOK_DELIVERIES_QUEUE.sendBatch(
          slice.map((delivery) => ({
            body: { deliveryId: delivery.id },
            contentType: "json" as const,
          })),
        );
        await markDeliveriesQueued(
          env.DB,
          slice.map((delivery) => delivery.id),
          at,
        );
      }
      message.ack();
    } catch (error) {
      log("error", "tenant event fan-out failed; will retry", {
        eventId: event.id,
        error: String(error),
      });
      message.retry({ delaySeconds: FAN_OUT_RETRY_SECONDS * message.attempts });
    }
  }
}

/**
 * The `tenant-events` dead-letter consumer: an event whose fan-out failed
 * on every retry (D1 or the queue down for minutes) goes back into the
 * outbox as unsent, so the cron sweep relays it again later: no event is
 * dropped for an outage.
 */
export async function parkTenantEvents(
  batch: MessageBatch<unknown>,
  env: { DB: D1Database },
  now: () => Date = () => new Date(),
): Promise<void> {
  for (const message of batch.messages) {
    const parsed = tenantEventSchema.safeParse(message.body);
    if (parsed.success) {
      await parkTenantEventStatement(
        env.DB,
        parsed.data,
        new Date(now().getTime() + PARKED_EVENT_RETRY_MS),
      ).run();
      log("error", "tenant event fan-out dead-lettered; parked in the outbox", {
        eventId: parsed.data.id,
      });
    }
    message.ack();
  }
}

export interface DeliveryOptions {
  settings: WebhookDeliverySettings;
  now?: () => Date;
  fetcher?: Fetcher;
}

export type DeliveryOutcome =
  | "delivered"
  | "retry"
  | "disabled"
  | "skipped"
  | "already-finished"
  | "missing";

/** The `webhook-deliveries` consumer: one signed POST per message. */
export async function deliverWebhookBatch(
  batch: MessageBatch<WebhookDeliveryMessage>,
  env: DeliveryEnv,
  options: DeliveryOptions,
): Promise<DeliveryOutcome[]> {
  const outcomes: DeliveryOutcome[] = [];
  for (const message of batch.messages) {
    try {
      outcomes.push(await deliverOne(message, env, options));
    } catch (error) {
      log("error", "webhook delivery could not be recorded; will retry", {
        deliveryId: message.body.deliveryId,
        error: String(error),
      });
      message.retry({ delaySeconds: retryDelaySeconds(message.attempts, options.settings) });
      outcomes.push("retry");
    }
  }
  return outcomes;
}

async function post(
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
  fetcher: Fetcher,
): Promise<{ statusCode: number | null; error: string | null }> {
  try {
    const response = await fetcher(url, {
      method: "POST",
      headers,
      body,
      // A redirect is a failed attempt: following it could lead anywhere.
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    // The answer's body is not needed; release the connection.
    await response.body?.cancel();
    if (isDelivered(response.status)) return { statusCode: response.status, error: null };
    const location = response.headers.get("location");
    return {
      statusCode: response.status,
      error:
        response.status >= 300 && response.status < 400
          ? `redirect${location ? ` to ${location.slice(0, 200)}` : ""} not followed`
          : `HTTP ${response.status}`,
    };
  } catch (error) {
    const name = (error as { name?: string } | null)?.name;
    return {
      statusCode: null,
      error:
        name === "TimeoutError" || name === "AbortError"
          ? `no answer within ${timeoutMs} ms`
          : String(error).slice(0, 500),
    };
  }
}

/** The current secret, then the rotated-out one while its overlap lasts. */
async function signingSecrets(
  endpoint: WebhookEndpointRow,
  secretKey: string | undefined,
  at: Date,
): Promise<string[]> {
  const secrets = [await decryptWebhookSecret(secretKey, endpoint.id, endpoint.secret_ciphertext)];
  const previous = endpoint.previous_secret_ciphertext;
  if (previous && previousSecretOverlapEnd(previous, endpoint.previous_secret_expires_at, at)) {
    secrets.push(await decryptWebhookSecret(secretKey, endpoint.id, previous));
  }
  return secrets;
}

/** One signed POST of the delivery's body, or why none was made. */
async function sendSigned(
  delivery: WebhookDeliveryRow,
  endpoint: WebhookEndpointRow,
  secretKey: string | undefined,
  settings: WebhookDeliverySettings,
  startedAt: Date,
  fetcher: Fetcher,
): Promise<{ statusCode: number | null; error: string | null }> {
  const check = checkWebhookUrl(endpoint.url, settings);
  if (!check.ok) return { statusCode: null, error: `not sent: ${check.reason}` };
  let secrets: string[];
  try {
    secrets = await signingSecrets(endpoint, secretKey, startedAt);
  } catch {
    return {
      statusCode: null,
      error: "not sent: the signing secret cannot be decrypted (WEBHOOK_SECRET_KEY changed?)",
    };
  }
  const signatures = await deliverySignatureHeaders({
    webhookId: delivery.id,
    timestampSeconds: Math.floor(startedAt.getTime() / 1000),
    body: delivery.payload,
    secrets,
  });
  return post(
    check.url,
    delivery.payload,
    {
      "content-type": "application/json",
      "user-agent": DELIVERY_USER_AGENT,
      ...signatures,
      [EVENT_ID_HEADER]: delivery.event_id,
      [EVENT_TYPE_HEADER]: delivery.event_type,
    },
    settings.timeoutMs,
    fetcher,
  );
}

async function deliverOne(
  message: Message<WebhookDeliveryMessage>,
  env: DeliveryEnv,
  options: DeliveryOptions,
): Promise<DeliveryOutcome> {
  const now = options.now ?? (() => new Date());
  const fetcher = options.fetcher ?? ((url, init) => fetch(url, init));
  const { settings } = options;
  const found = await findDeliveryWithEndpoint(env.DB, message.body.deliveryId);
  if (!found) {
    message.ack();
    return "missing";
  }
  const { delivery, endpoint } = found;
  if (delivery.status !== "PENDING" && delivery.status !== "RETRYING") {
    message.ack();
    return "already-finished";
  }
  if (endpoint.deleted_at || endpoint.enabled !== 1) {
    await finishDeliveryStatement(
      env.DB,
      delivery.id,
      "SKIPPED",
      endpoint.deleted_at ? "endpoint deleted" : "endpoint disabled",
      now().toISOString(),
    ).run();
    message.ack();
    return "skipped";
  }

  const startedAt = now();
  const at = startedAt.toISOString();
  const delivered = await attemptDelivery(env, message, found, {
    settings,
    startedAt,
    fetcher,
  });
  if (delivered) {
    message.ack();
    return "delivered";
  }

  const failingSince = endpoint.failing_since ?? at;
  const reason = disableVerdict(failingSince, now(), settings.disableAfterMs);
  if (reason) {
    const disabledAt = now().toISOString();
    await disableFailingEndpoint(env.DB, found, { failingSince, reason, at, disabledAt });
    log("info", "webhook endpoint disabled", { endpointId: endpoint.id, failingSince });
    message.ack();
    return "disabled";
  }
  message.retry({ delaySeconds: retryDelaySeconds(message.attempts, settings) });
  return "retry";
}

/**
 * One attempt: the signed POST, then the attempt and the endpoint's health
 * in one batch, so the log and the failing-since clock never disagree.
 * Resolves to whether the endpoint took the delivery.
 */
async function attemptDelivery(
  env: DeliveryEnv,
  message: Message<WebhookDeliveryMessage>,
  { delivery, endpoint }: { delivery: WebhookDeliveryRow; endpoint: WebhookEndpointRow },
  attempt: { settings: WebhookDeliverySettings; startedAt: Date; fetcher: Fetcher },
): Promise<boolean> {
  const at = attempt.startedAt.toISOString();
  const started = Date.now();
  const { statusCode, error } = await sendSigned(
    delivery,
    endpoint,
    env.WEBHOOK_SECRET_KEY,
    attempt.settings,
    attempt.startedAt,
    attempt.fetcher,
  );
  const delivered = statusCode !== null && isDelivered(statusCode);
  await env.DB.batch([
    ...recordAttemptStatements(env.DB, {
      deliveryId: delivery.id,
      attemptNumber: delivery.attempt_count + 1,
      statusCode,
      error,
      durationMs: Math.max(0, Date.now() - started),
      manual: message.body.manual === true,
      at,
      delivered,
    }),
    endpointHealthStatement(env.DB, endpoint.id, delivered, at),
  ]);
  return delivered;
}

/**
 * Disables an endpoint that has failed for too long and fails the delivery
 * with it. The audit entry is written only when this batch's update took
 * effect, so an endpoint a concurrent delivery already disabled is not
 * audited again.
 */
async function disableFailingEndpoint(
  db: D1Database,
  { delivery, endpoint }: { delivery: WebhookDeliveryRow; endpoint: WebhookEndpointRow },
  verdict: { failingSince: string; reason: string; at: string; disabledAt: string },
): Promise<void> {
  const { failingSince, reason, at, disabledAt } = verdict;
  await db.batch([
    disableEndpointStatement(db, endpoint.id, failingSince, reason, disabledAt),
    auditStatement(
      db,
      SYSTEM_AUDIT,
      {
        tenantId: endpoint.tenant_id,
        action: "webhook_endpoint.disabled",
        targetType: "webhook_endpoint",
        targetId: endpoint.id,
        changes: {
          enabled: { before: true, after: false },
          disabledReason: { after: reason },
          failingSince: { after: failingSince },
        },
      },
      {
        when: {
          sql: "EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = ? AND enabled = 0 AND disabled_at = ?)",
          params: [endpoint.id, disabledAt],
        },
      },
    ),
    finishDeliveryStatement(db, delivery.id, "FAILED", `endpoint disabled: ${reason}`, at),
  ]);
}

/**
 * The dead-letter queue's consumer: a delivery whose retries are spent is
 * FAILED, with the reason, in the endpoint's delivery log.
 */
export async function deadLetterWebhookBatch(
  batch: MessageBatch<WebhookDeliveryMessage>,
  env: DeliveryEnv,
  now: () => Date = () => new Date(),
): Promise<void> {
  for (const message of batch.messages) {
    const found = await findDeliveryWithEndpoint(env.DB, message.body.deliveryId);
    if (found) {
      await finishDeliveryStatement(
        env.DB,
        found.delivery.id,
        "FAILED",
        `dead-lettered after ${found.delivery.attempt_count} attempts: ${found.delivery.last_error ?? "no answer"}`,
        now().toISOString(),
      ).run();
      log("error", "webhook delivery dead-lettered", {
        deliveryId: found.delivery.id,
        endpointId: found.endpoint.id,
        eventId: found.delivery.event_id,
      });
    }
    message.ack();
  }
}
