import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

// Who changed money or access, and the stored first answers of retried
// writes. Times are ISO-8601 UTC text with milliseconds.

const now = sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;

export const auditActorTypes = ["user", "api_key", "platform_admin", "system", "provider"] as const;
export type AuditActorType = (typeof auditActorTypes)[number];

/** Before and after of each changed field; never a secret, hash or token. */
export type AuditChanges = Record<string, { before?: unknown; after?: unknown }>;

/**
 * Append-only (triggers in the migration refuse UPDATE and DELETE), with no
 * foreign keys: the record outlives whatever it describes. Each row is
 * written in the same D1 batch as the change it records.
 */
export const auditEvents = sqliteTable(
  "audit_events",
  {
    id: text("id").primaryKey(),
    /** Null for platform-wide changes (the catalog). */
    tenantId: text("tenant_id"),
    actorType: text("actor_type", { enum: auditActorTypes }).notNull(),
    actorId: text("actor_id"),
    action: text("action").notNull(),
    targetType: text("target_type").notNull(),
    targetId: text("target_id").notNull(),
    changes: text("changes", { mode: "json" }).$type<AuditChanges>().notNull().default(sql`'{}'`),
    correlationId: text("correlation_id"),
    createdAt: text("created_at").notNull().default(now),
  },
  (table) => [
    index("audit_events_tenant_created_idx").on(table.tenantId, table.createdAt),
    index("audit_events_created_idx").on(table.createdAt),
    index("audit_events_target_idx").on(table.targetId),
    index("audit_events_actor_idx").on(table.actorId),
  ],
);

export const idempotencyStates = ["IN_FLIGHT", "COMPLETED"] as const;

/**
 * One row per (caller scope, Idempotency-Key): inserted IN_FLIGHT before the
 * handler runs (the unique key decides which of racing requests runs it),
 * COMPLETED with the response afterwards, pruned after `expiresAt`.
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    /** `user:<id>` or `tenant:<id>` (an API key's tenant). */
    scope: text("scope").notNull(),
    key: text("key").notNull(),
    /** SHA-256 of method, path, tenant header and body. */
    requestHash: text("request_hash").notNull(),
    state: text("state", { enum: idempotencyStates }).notNull(),
    /** Epoch ms; also part of the counter's request id, so a key reused after expiry is new. */
    createdAtMs: integer("created_at_ms").notNull(),
    expiresAtMs: integer("expires_at_ms").notNull(),
    /** Epoch ms after which an IN_FLIGHT row is taken to be abandoned (a crashed request). */
    lockedUntilMs: integer("locked_until_ms").notNull(),
    responseStatus: integer("response_status"),
    responseBody: text("response_body"),
    responseContentType: text("response_content_type"),
  },
  (table) => [
    primaryKey({ columns: [table.scope, table.key] }),
    index("idempotency_keys_expires_idx").on(table.expiresAtMs),
  ],
);
