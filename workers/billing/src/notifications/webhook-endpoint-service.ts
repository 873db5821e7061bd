import { ApiError } from "@edge-platform/shared/http/api-error";
import {
  type AuditAction,
  type AuditContext,
  auditStatement,
  type RawCondition,
  SYSTEM_AUDIT,
} from "../audit/index.ts";
import type { BillingContext } from "../platform/index.ts";
import { type PageRequest, pageMeta, pageOffset } from "../platform/index.ts";
import {
  normaliseEventTypes,
  WEBHOOK_TEST_EVENT_TYPE,
  type WebhookDeliverySettings,
} from "./domain/webhook-delivery.ts";
import {
  DEFAULT_ROTATION_OVERLAP_HOURS,
  encryptWebhookSecret,
  generateWebhookSecret,
  previousSecretOverlapEnd,
  WebhookSecretKeyMissingError,
} from "./domain/webhook-secret.ts";
import { checkWebhookUrl } from "./domain/webhook-url.ts";
import {
  deleteEndpointStatement,
  findDelivery,
  findEndpoint,
  finishDeliveryStatement,
  insertDeliveryStatement,
  insertEndpointStatement,
  listDeliveries,
  listEndpoints,
  markDeliveriesQueued,
  reopenDeliveryStatement,
  rotateSecretStatement,
  updateEndpointStatement,
  type WebhookAttemptRow,
  type WebhookDeliveryRow,
  type WebhookEndpointRow,
} from "./webhook-endpoint-storage.ts";

export interface WebhookDeliveryMessage {
  deliveryId: string;
  /** Set by a manual resend: its attempts are marked as such in the log. */
  manual?: boolean;
}

export interface EndpointInput {
  url: string;
  eventTypes: string[];
  description?: string | null | undefined;
  enabled?: boolean | undefined;
}

export type EndpointPatch = Partial<EndpointInput>;

export interface SecretRotation {
  /** 0 stops the old secret at once. */
  previousSecretExpiresInHours?: number | undefined;
}

export function endpointView(row: WebhookEndpointRow) {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    url: row.url,
    description: row.description,
    eventTypes: JSON.parse(row.event_types) as string[],
    enabled: row.enabled === 1,
    failingSince: row.failing_since,
    disabledReason: row.disabled_reason,
    disabledAt: row.disabled_at,
    previousSecretExpiresAt: previousSecretOverlapEnd(
      row.previous_secret_ciphertext,
      row.previous_secret_expires_at,
      new Date(),
    ),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function attemptView(row: WebhookAttemptRow) {
  return {
    attemptNumber: row.attempt_number,
    statusCode: row.status_code,
    error: row.error,
    durationMs: row.duration_ms,
    manual: row.manual === 1,
    attemptedAt: row.attempted_at,
  };
}

export function deliveryView(row: WebhookDeliveryRow, attempts: WebhookAttemptRow[] = []) {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status,
    attemptCount: row.attempt_count,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    deliveredAt: row.delivered_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    attempts: attempts.filter((attempt) => attempt.delivery_id === row.id).map(attemptView),
  };
}

/** Each endpoint multiplies every event's deliveries: a tenant has at most this many. */
export const MAX_ENDPOINTS_PER_TENANT = 20;

const endpointNotFound = (id: string) =>
  new ApiError(404, `Webhook endpoint with ID "${id}" not found`);

/** The endpoint row exists with this update stamp: the batch's write happened. */
const endpointStamped = (id: string, at: string): RawCondition => ({
  sql: "EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = ? AND updated_at = ?)",
  params: [id, at],
});

/**
 * A tenant's webhook endpoints: each write and its audit row in one batch;
 * the signing secret appears in the creation (and rotation) response only.
 */
export class WebhookEndpointService {
  constructor(
    private readonly d1: D1Database,
    private readonly deliveries: Queue<WebhookDeliveryMessage>,
    private readonly settings: Pick<WebhookDeliverySettings, "allowHttpLocalhost">,
    private readonly secretKey: string | undefined,
    private readonly audit: AuditContext = SYSTEM_AUDIT,
  ) {}

  async create(context: BillingContext, input: EndpointInput) {
    const url = this.checkedUrl(input.url);
    const { total } = await listEndpoints(this.d1, context.tenant.id, 0, 1);
    if (total >= MAX_ENDPOINTS_PER_TENANT) {
      throw new ApiError(
        409,
        `A tenant has at most ${MAX_ENDPOINTS_PER_TENANT} webhook endpoints; delete one first`,
      );
    }
    const id = crypto.randomUUID();
    const secret = generateWebhookSecret();
    const secretCiphertext = await this.seal(id, secret);
    const now = new Date().toISOString();
    const eventTypes = normaliseEventTypes(input.eventTypes);
    await this.d1.batch([
      insertEndpointStatement(this.d1, {
        id,
        tenantId: context.tenant.id,
        url,
        description: input.description ?? null,
        eventTypes,
        enabled: input.enabled ?? true,
        secretCiphertext,
        now,
      }),
      this.auditRow(context, "webhook_endpoint.created", id, {
        url: { after: url },
        eventTypes: { after: eventTypes },
        enabled: { after: input.enabled ?? true },
      }),
    ]);
    return { ...(await this.get(context, id)), secret };
  }

  async list(context: BillingContext, page: PageRequest) {
    const { rows, total } = await listEndpoints(
      this.d1,
      context.tenant.id,
      pageOffset(page),
      page.limit,
    );
    return { data: rows.map(endpointView), meta: pageMeta(page, total) };
  }

  async get(context: BillingContext, id: string) {
    return endpointView(await this.require(context, id));
  }

  async update(context: BillingContext, id: string, patch: EndpointPatch) {
    const before = endpointView(await this.require(context, id));
    const changes: Parameters<typeof updateEndpointStatement>[3] = {};
    if (patch.url !== undefined) changes.url = this.checkedUrl(patch.url);
    if (patch.eventTypes !== undefined) changes.eventTypes = normaliseEventTypes(patch.eventTypes);
    if (patch.description !== undefined) changes.description = patch.description;
    if (patch.enabled !== undefined) changes.enabled = patch.enabled;
    const at = new Date().toISOString();
    const audited: Record<string, { before: unknown; after: unknown }> = {};
    for (const [field, after] of Object.entries(changes)) {
      const was = before[field as keyof typeof before];
      if (JSON.stringify(was) !== JSON.stringify(after)) audited[field] = { before: was, after };
    }
    if (changes.enabled === true && before.disabledReason) {
      audited.disabledReason = { before: before.disabledReason, after: null };
    }
    await this.d1.batch([
      updateEndpointStatement(this.d1, context.tenant.id, id, changes, at),
      this.auditRow(context, "webhook_endpoint.updated", id, audited, endpointStamped(id, at)),
    ]);
    return this.get(context, id);
  }

  async remove(context: BillingContext, id: string) {
    const at = new Date().toISOString();
    const [deleted] = await this.d1.batch([
      deleteEndpointStatement(this.d1, context.tenant.id, id, at),
      this.auditRow(
        context,
        "webhook_endpoint.deleted",
        id,
        { deletedAt: { after: at } },
        {
          sql: "EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = ? AND deleted_at = ?)",
          params: [id, at],
        },
      ),
    ]);
    if ((deleted?.meta.changes ?? 0) !== 1) throw endpointNotFound(id);
  }

  /**
   * A new signing secret (shown in this response only). The replaced one
   * keeps signing beside it for the overlap asked for (24 hours unless
   * said), so receivers switch without rejecting a delivery.
   */
  async rotateSecret(context: BillingContext, id: string, rotation: SecretRotation = {}) {
    await this.require(context, id);
    const secret = generateWebhookSecret();
    const secretCiphertext = await this.seal(id, secret);
    const now = new Date();
    const at = now.toISOString();
    const overlapHours = rotation.previousSecretExpiresInHours ?? DEFAULT_ROTATION_OVERLAP_HOURS;
    const previousExpiresAt =
      overlapHours > 0 ? new Date(now.getTime() + overlapHours * 3600_000).toISOString() : null;
    await this.d1.batch([
      rotateSecretStatement(
        this.d1,
        context.tenant.id,
        id,
        { secretCiphertext, previousExpiresAt },
        at,
      ),
      this.auditRow(
        context,
        "webhook_endpoint.secret_rotated",
        id,
        { secretRotatedAt: { after: at }, previousSecretExpiresAt: { after: previousExpiresAt } },
        endpointStamped(id, at),
      ),
    ]);
    return { ...(await this.get(context, id)), secret };
  }

  async deliveryLog(context: BillingContext, id: string, page: PageRequest) {
    await this.require(context, id);
    const { rows, attempts, total } = await listDeliveries(
      this.d1,
      id,
      pageOffset(page),
      page.limit,
    );
    return {
      data: rows.map((row) => deliveryView(row, attempts)),
      meta: pageMeta(page, total),
    };
  }

  /**
   * Sends a finished delivery (DELIVERED, FAILED or SKIPPED) again: the same
   * body and event id, attempts numbered on from the last. 409 while it is
   * still being delivered, or when the endpoint is disabled.
   */
  async resend(context: BillingContext, id: string, deliveryId: string) {
    const endpoint = await this.require(context, id);
    if (endpoint.enabled !== 1) {
      throw new ApiError(409, "The endpoint is disabled; enable it (PATCH enabled: true) first");
    }
    const delivery = await findDelivery(this.d1, id, deliveryId);
    if (!delivery) {
      throw new ApiError(404, `Delivery with ID "${deliveryId}" not found for this endpoint`);
    }
    if (delivery.status === "PENDING" || delivery.status === "RETRYING") {
      throw new ApiError(409, `The delivery is ${delivery.status}: it is still being delivered`);
    }
    const at = new Date().toISOString();
    const [reopened] = await this.d1.batch([
      reopenDeliveryStatement(this.d1, deliveryId, at),
      this.auditRow(
        context,
        "webhook_delivery.resent",
        deliveryId,
        { status: { before: delivery.status, after: "PENDING" }, endpointId: { after: id } },
        {
          sql: "EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = ? AND status = 'PENDING' AND updated_at = ?)",
          params: [deliveryId, at],
        },
        "webhook_delivery",
      ),
    ]);
    if ((reopened?.meta.changes ?? 0) !== 1) {
      throw new ApiError(409, "The delivery changed meanwhile; retry");
    }
    await this.deliveries.send({ deliveryId, manual: true }, { contentType: "json" });
    const found = await findDelivery(this.d1, id, deliveryId);
    if (!found) throw new Error("delivery vanished after resend");
    return deliveryView(found);
  }

  /**
   * Sends one `webhook.test` event to this endpoint only, signed and logged
   * like any delivery (retried too), so a receiver can be checked before a
   * real event comes. 409 when the endpoint is disabled.
   */
  async sendExample(context: BillingContext, id: string) {
    const endpoint = await this.require(context, id);
    if (endpoint.enabled !== 1) {
      throw new ApiError(409, "The endpoint is disabled; enable it (PATCH enabled: true) first");
    }
    const now = new Date();
    const at = now.toISOString();
    const eventId = `evt_${crypto.randomUUID()}`;
    const deliveryId = crypto.randomUUID();
    const payload = JSON.stringify({
      id: eventId,
      type: WEBHOOK_TEST_EVENT_TYPE,
      createdAt: at,
      tenantId: context.tenant.id,
      data: { endpointId: id, message: "A test event sent on request; nothing changed." },
    });
    await insertDeliveryStatement(this.d1, {
      id: deliveryId,
      tenantId: context.tenant.id,
      endpointId: id,
      eventId,
      eventType: WEBHOOK_TEST_EVENT_TYPE,
      payload,
      now: at,
    }).run();
    try {
      await this.deliveries.send({ deliveryId }, { contentType: "json" });
    } catch (error) {
      // No event comes round again for a test, so a delivery never queued is closed here.
      await finishDeliveryStatement(this.d1, deliveryId, "FAILED", "not queued", at).run();
      console.error(
        JSON.stringify({ level: "error", msg: "example not queued", error: String(error) }),
      );
      throw new ApiError(503, "The delivery queue is unavailable; try again");
    }
    await markDeliveriesQueued(this.d1, [deliveryId], at);
    const found = await findDelivery(this.d1, id, deliveryId);
    if (!found) throw new Error("delivery vanished after sending an example");
    return deliveryView(found);
  }

  private checkedUrl(raw: string): string {
    const check = checkWebhookUrl(raw, this.settings);
    if (!check.ok) {
      throw new ApiError(400, "Validation failed", { details: [check.reason], code: "validation" });
    }
    return check.url;
  }

  private async seal(endpointId: string, secret: string): Promise<string> {
    try {
      return await encryptWebhookSecret(this.secretKey, endpointId, secret);
    } catch (error) {
      if (error instanceof WebhookSecretKeyMissingError) {
        console.error(JSON.stringify({ level: "error", msg: error.message }));
        throw new ApiError(503, "Webhook signing is not configured (WEBHOOK_SECRET_KEY)");
      }
      throw error;
    }
  }

  private async require(context: BillingContext, id: string) {
    const row = await findEndpoint(this.d1, context.tenant.id, id);
    if (!row) throw endpointNotFound(id);
    return row;
  }

  private auditRow(
    context: BillingContext,
    action: AuditAction,
    targetId: string,
    changes: Record<string, { before?: unknown; after?: unknown }>,
    when?: RawCondition,
    targetType = "webhook_endpoint",
  ) {
    return auditStatement(
      this.d1,
      this.audit,
      { tenantId: context.tenant.id, action, targetType, targetId, changes },
      when ? { when } : {},
    );
  }
}
