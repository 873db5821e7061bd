import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { tenants } from "./identity.ts";

// Outbound webhooks: the tenant's endpoints, the events billing
// emits for them (an outbox written in the same batch as the change), and
// one delivery per (event, endpoint) with its attempts. Times are ISO-8601
// UTC text with milliseconds.

const now = sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;

/**
 * Events written by billing code in the same D1 batch as the change they
 * describe, then sent to the `tenant-events` queue; `relayAfter` is a lease
 * (null until a relay claims the row; a relay that died after claiming it
 * leaves it to the next sweep once the lease has run out).
 */
export const tenantEvents = sqliteTable(
  "tenant_events",
  {
    /** `evt_` + UUID: the id every delivery of the event carries. */
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    type: text("type").notNull(),
    /** JSON object: the event's `data`. */
    data: text("data").notNull(),
    createdAt: text("created_at").notNull(),
    relayAfter: text("relay_after"),
    sentAt: text("sent_at"),
  },
  (table) => [
    index("tenant_events_unsent_idx").on(table.createdAt).where(sql`sent_at IS NULL`),
    index("tenant_events_tenant_created_idx").on(table.tenantId, table.createdAt),
  ],
);

/**
 * A tenant's receiver. The signing secret is stored AES-GCM encrypted with
 * WEBHOOK_SECRET_KEY (deliveries need it to sign), never hashed only and
 * never returned after creation. Deleting sets `deletedAt`, so the delivery
 * log keeps its endpoint and in-flight messages can be recorded as skipped.
 */
export const webhookEndpoints = sqliteTable(
  "webhook_endpoints",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    description: text("description"),
    /** JSON array of event types, or `["*"]` for every type. */
    eventTypes: text("event_types", { mode: "json" }).$type<string[]>().notNull(),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    /** `v1.<base64url IV>.<base64url ciphertext>` (AES-256-GCM, endpoint id as associated data). */
    secretCiphertext: text("secret_ciphertext").notNull(),
    /** The secret a rotation replaced (same encryption): it signs too until `previousSecretExpiresAt`. */
    previousSecretCiphertext: text("previous_secret_ciphertext"),
    previousSecretExpiresAt: text("previous_secret_expires_at"),
    /** The first delivery failure since the last success; null while healthy. */
    failingSince: text("failing_since"),
    disabledReason: text("disabled_reason"),
    disabledAt: text("disabled_at"),
    deletedAt: text("deleted_at"),
    createdAt: text("created_at").notNull().default(now),
    updatedAt: text("updated_at").notNull().default(now),
  },
  (table) => [index("webhook_endpoints_tenant_idx").on(table.tenantId, table.createdAt)],
);

export const webhookDeliveryStatuses = [
  "PENDING",
  "RETRYING",
  "DELIVERED",
  "FAILED",
  "SKIPPED",
] as const;
export type WebhookDeliveryStatus = (typeof webhookDeliveryStatuses)[number];

/** One per (event, endpoint): the unique index makes fan-out idempotent. */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id").notNull(),
    endpointId: text("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    eventId: text("event_id").notNull(),
    eventType: text("event_type").notNull(),
    /** The exact JSON body every attempt sends (and signs). */
    payload: text("payload").notNull(),
    status: text("status", { enum: webhookDeliveryStatuses }).notNull().default("PENDING"),
    attemptCount: integer("attempt_count").notNull().default(0),
    lastStatusCode: integer("last_status_code"),
    lastError: text("last_error"),
    /** When its queue message was sent; null rows are re-sent by a redelivered fan-out. */
    queuedAt: text("queued_at"),
    deliveredAt: text("delivered_at"),
    createdAt: text("created_at").notNull().default(now),
    updatedAt: text("updated_at").notNull().default(now),
  },
  (table) => [
    uniqueIndex("webhook_deliveries_event_endpoint_unique").on(table.eventId, table.endpointId),
    index("webhook_deliveries_endpoint_created_idx").on(table.endpointId, table.createdAt),
  ],
);

/** Every POST made for a delivery (or refused before it was made), for the delivery log. */
export const webhookDeliveryAttempts = sqliteTable(
  "webhook_delivery_attempts",
  {
    id: text("id").primaryKey(),
    deliveryId: text("delivery_id")
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: "cascade" }),
    attemptNumber: integer("attempt_number").notNull(),
    /** Null when no HTTP answer came (timeout, connection error, refused URL). */
    statusCode: integer("status_code"),
    error: text("error"),
    durationMs: integer("duration_ms").notNull(),
    /** True for an attempt made by a manual resend. */
    manual: integer("manual", { mode: "boolean" }).notNull().default(false),
    attemptedAt: text("attempted_at").notNull(),
  },
  (table) => [
    uniqueIndex("webhook_delivery_attempts_number_unique").on(
      table.deliveryId,
      table.attemptNumber,
    ),
  ],
);
