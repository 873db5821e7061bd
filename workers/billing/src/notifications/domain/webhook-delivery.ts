import { TENANT_EVENT_TYPES, type TenantEventType } from "./tenant-events.ts";

// The delivery policy of outbound webhooks: who gets an event, how long to
// wait before the next try, and when an endpoint that keeps failing is
// switched off. Settings come from wrangler.toml [vars] (production) or
// .dev.vars (seconds, so local runs see the retries).

export const EVENT_ID_HEADER = "edge-event-id";
export const EVENT_TYPE_HEADER = "edge-event-type";
export const DELIVERY_USER_AGENT = "edge-platform-webhooks/1.0";
export const ALL_EVENT_TYPES = "*";
/** The type of the event `POST /webhook-endpoints/:id/send-example` sends; never emitted otherwise. */
export const WEBHOOK_TEST_EVENT_TYPE = "webhook.test";

export interface WebhookDeliverySettings {
  retryBaseSeconds: number;
  retryMaxSeconds: number;
  /** An endpoint failing without a success for longer than this is disabled. */
  disableAfterMs: number;
  timeoutMs: number;
  allowHttpLocalhost: boolean;
}

export const DEFAULT_DELIVERY_SETTINGS: WebhookDeliverySettings = {
  retryBaseSeconds: 30,
  retryMaxSeconds: 6 * 3600,
  disableAfterMs: 72 * 3600_000,
  timeoutMs: 10_000,
  allowHttpLocalhost: false,
};

/** Queues refuse a delay above 12 hours. */
const MAX_QUEUE_DELAY_SECONDS = 43_200;

function positive(raw: string | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER) {
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = Number(raw);
  return Number.isFinite(value) && value > 0 ? Math.min(value, max) : fallback;
}

export interface WebhookDeliveryVars {
  WEBHOOK_RETRY_BASE_SECONDS?: string;
  WEBHOOK_RETRY_MAX_SECONDS?: string;
  WEBHOOK_DISABLE_AFTER_HOURS?: string;
  WEBHOOK_TIMEOUT_MS?: string;
  WEBHOOK_ALLOW_HTTP_LOCALHOST?: string;
}

/** The settings from the worker's vars; anything missing or not a positive number keeps its default. */
export function deliverySettings(vars: WebhookDeliveryVars): WebhookDeliverySettings {
  const defaults = DEFAULT_DELIVERY_SETTINGS;
  return {
    retryBaseSeconds: positive(
      vars.WEBHOOK_RETRY_BASE_SECONDS,
      defaults.retryBaseSeconds,
      MAX_QUEUE_DELAY_SECONDS,
    ),
    retryMaxSeconds: positive(
      vars.WEBHOOK_RETRY_MAX_SECONDS,
      defaults.retryMaxSeconds,
      MAX_QUEUE_DELAY_SECONDS,
    ),
    disableAfterMs:
      positive(vars.WEBHOOK_DISABLE_AFTER_HOURS, defaults.disableAfterMs / 3600_000) * 3600_000,
    timeoutMs: positive(vars.WEBHOOK_TIMEOUT_MS, defaults.timeoutMs, 30_000),
    allowHttpLocalhost: vars.WEBHOOK_ALLOW_HTTP_LOCALHOST?.trim().toLowerCase() === "true",
  };
}

/**
 * Seconds before try `attempts + 1` after `attempts` failed ones: base,
 * 2 x base, 4 x base, ..., capped (whole seconds, at least 1).
 */
export function retryDelaySeconds(
  attempts: number,
  settings: Pick<WebhookDeliverySettings, "retryBaseSeconds" | "retryMaxSeconds">,
): number {
  const exponent = Math.min(Math.max(0, attempts - 1), 30);
  const delay = settings.retryBaseSeconds * 2 ** exponent;
  return Math.max(1, Math.ceil(Math.min(delay, settings.retryMaxSeconds)));
}

/** Whether an endpoint subscribed to `types` wants an event of `type`. */
export function subscribesTo(types: readonly string[], type: TenantEventType): boolean {
  return types.includes(ALL_EVENT_TYPES) || types.includes(type);
}

/** The subscription list as stored: de-duplicated, `*` alone when it is present. */
export function normaliseEventTypes(types: readonly string[]): string[] {
  if (types.includes(ALL_EVENT_TYPES)) return [ALL_EVENT_TYPES];
  return TENANT_EVENT_TYPES.filter((type) => types.includes(type));
}

/** A 2xx answer is a delivery; anything else (3xx included: redirects are not followed) is a failure. */
export function isDelivered(status: number): boolean {
  return status >= 200 && status < 300;
}

/**
 * Whether an endpoint failing since `failingSince` (no success since) has
 * failed for longer than the setting, and the reason it is disabled with.
 */
export function disableVerdict(
  failingSince: string | null,
  now: Date,
  disableAfterMs: number,
): string | null {
  if (!failingSince) return null;
  const since = Date.parse(failingSince);
  if (!Number.isFinite(since) || now.getTime() - since <= disableAfterMs) return null;
  const hours = Math.round(disableAfterMs / 3600_000);
  return `Every delivery failed since ${failingSince} (longer than ${hours} hours); re-enable with PATCH enabled: true once the receiver works`;
}
