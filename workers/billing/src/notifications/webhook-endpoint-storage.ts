import type { WebhookDeliveryStatus } from "@edge-platform/shared/db/schema/webhooks";

// Outbound webhook endpoints, their deliveries and attempts (raw D1: the
// writes go into batches with audit and outbox statements).

export interface WebhookEndpointRow {
  id: string;
  tenant_id: string;
  url: string;
  description: string | null;
  event_types: string;
  enabled: number;
  secret_ciphertext: string;
  /** The secret a rotation replaced, still signing until `previous_secret_expires_at`. */
  previous_secret_ciphertext: string | null;
  previous_secret_expires_at: string | null;
  failing_since: string | null;
  disabled_reason: string | null;
  disabled_at: string | null;
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookDeliveryRow {
  id: string;
  tenant_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  payload: string;
  status: WebhookDeliveryStatus;
  attempt_count: number;
  last_status_code: number | null;
  last_error: string | null;
  queued_at: string | null;
  delivered_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookAttemptRow {
  id: string;
  delivery_id: string;
  attempt_number: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  manual: number;
  attempted_at: string;
}

export function insertEndpointStatement(
  d1: D1Database,
  row: {
    id: string;
    tenantId: string;
    url: string;
    description: string | null;
    eventTypes: string[];
    enabled: boolean;
    secretCiphertext: string;
    now: string;
  },
): D1PreparedStatement {
  return d1
    .prepare(
      `INSERT INTO webhook_endpoints
         (id, tenant_id, url, description, event_types, enabled, secret_ciphertext, created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)`,
    )
    .bind(
      row.id,
      row.tenantId,
      row.url,
      row.description,
      JSON.stringify(row.eventTypes),
      row.enabled ? 1 : 0,
      row.secretCiphertext,
      row.now,
    );
}

/** A live (not deleted) endpoint of the tenant. */
export function findEndpoint(d1: D1Database, tenantId: string, id: string) {
  return d1
    .prepare(
      "SELECT * FROM webhook_endpoints WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL",
    )
    .bind(id, tenantId)
    .first<WebhookEndpointRow>();
}

export async function listEndpoints(
  d1: D1Database,
  tenantId: string,
  offset: number,
  limit: number,
) {
  const [rows, totals] = await d1.batch<WebhookEndpointRow | { total: number }>([
    d1
      .prepare(
        `SELECT * FROM webhook_endpoints WHERE tenant_id = ? AND deleted_at IS NULL
         ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
      )
      .bind(tenantId, limit, offset),
    d1
      .prepare(
        "SELECT count(*) AS total FROM webhook_endpoints WHERE tenant_id = ? AND deleted_at IS NULL",
      )
      .bind(tenantId),
  ]);
  return {
    rows: (rows?.results ?? []) as WebhookEndpointRow[],
    total: ((totals?.results[0] as { total: number } | undefined)?.total ?? 0) as number,
  };
}

/** The tenant's enabled endpoints (fan-out filters them by event type). */
export async function enabledEndpoints(d1: D1Database, tenantId: string) {
  const found = await d1
    .prepare(
      "SELECT * FROM webhook_endpoints WHERE tenant_id = ? AND enabled = 1 AND deleted_at IS NULL",
    )
    .bind(tenantId)
    .all<WebhookEndpointRow>();
  return found.results;
}

export function updateEndpointStatement(
  d1: D1Database,
  tenantId: string,
  id: string,
  changes: {
    url?: string;
    description?: string | null;
    eventTypes?: string[];
    enabled?: boolean;
    secretCiphertext?: string;
  },
  now: string,
): D1PreparedStatement {
  const sets: string[] = ["updated_at = ?"];
  const values: unknown[] = [now];
  if (changes.url !== undefined) {
    sets.push("url = ?");
    values.push(changes.url);
  }
  if (changes.description !== undefined) {
    sets.push("description = ?");
    values.push(changes.description);
  }
  if (changes.eventTypes !== undefined) {
    sets.push("event_types = ?");
    values.push(JSON.stringify(changes.eventTypes));
  }
  if (changes.secretCiphertext !== undefined) {
    sets.push("secret_ciphertext = ?");
    values.push(changes.secretCiphertext);
  }
  if (changes.enabled === true) {
    // Re-enabling starts afresh: no failure streak, no reason.
    sets.push(
      "enabled = 1",
      "failing_since = NULL",
      "disabled_reason = NULL",
      "disabled_at = NULL",
    );
  } else if (changes.enabled === false) {
    sets.push(
      "enabled = 0",
      "disabled_at = coalesce(disabled_at, ?)",
      "disabled_reason = coalesce(disabled_reason, 'Disabled by the tenant')",
    );
    values.push(now);
  }
  return d1
    .prepare(
      `UPDATE webhook_endpoints SET ${sets.join(", ")}
       WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL`,
    )
    .bind(...values, id, tenantId);
}

/**
 * Replaces the signing secret. With `previousExpiresAt` the replaced secret
 * keeps signing until then (the right-hand sides read the row as it was);
 * without, it stops at once and an earlier overlap ends too.
 */
export function rotateSecretStatement(
  d1: D1Database,
  tenantId: string,
  id: string,
  rotation: { secretCiphertext: string; previousExpiresAt: string | null },
  now: string,
): D1PreparedStatement {
  return d1
    .prepare(
      `UPDATE webhook_endpoints
       SET previous_secret_ciphertext = CASE WHEN ?1 IS NULL THEN NULL ELSE secret_ciphertext END,
           previous_secret_expires_at = ?1,
           secret_ciphertext = ?2,
           updated_at = ?3
       WHERE id = ?4 AND tenant_id = ?5 AND deleted_at IS NULL`,
    )
    .bind(rotation.previousExpiresAt, rotation.secretCiphertext, now, id, tenantId);
}

export function deleteEndpointStatement(
  d1: D1Database,
  tenantId: string,
  id: string,
  now: string,
): D1PreparedStatement {
  return d1
    .prepare(
      `UPDATE webhook_endpoints SET deleted_at = ?3, enabled = 0, updated_at = ?3
       WHERE id = ?1 AND tenant_id = ?2 AND deleted_at IS NULL`,
    )
    .bind(id, tenantId, now);
}

/**
 * Fan-out: one delivery per (event, endpoint); a second insert for the same
 * pair (a redelivered event message) does nothing.
 */
export function insertDeliveryStatement(
  d1: D1Database,
  row: {
    id: string;
    tenantId: string;
    endpointId: string;
    eventId: string;
    eventType: string;
    payload: string;
    now: string;
  },
): D1PreparedStatement {
  return d1
    .prepare(
      `INSERT INTO webhook_deliveries
         (id, tenant_id, endpoint_id, event_id, event_type, payload, created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
       ON CONFLICT (event_id, endpoint_id) DO NOTHING`,
    )
    .bind(row.id, row.tenantId, row.endpointId, row.eventId, row.eventType, row.payload, row.now);
}

/** The event's deliveries whose queue message was never sent (new, or stranded by a crash). */
export async function unqueuedDeliveries(d1: D1Database, eventId: string) {
  const found = await d1
    .prepare(
      "SELECT * FROM webhook_deliveries WHERE event_id = ? AND queued_at IS NULL AND status = 'PENDING'",
    )
    .bind(eventId)
    .all<WebhookDeliveryRow>();
  return found.results;
}

export async function markDeliveriesQueued(d1: D1Database, ids: string[], now: string) {
  if (ids.length === 0) return;
  await d1
    .prepare(
      "UPDATE webhook_deliveries SET queued_at = ? WHERE id IN (SELECT value FROM json_each(?))",
    )
    .bind(now, JSON.stringify(ids))
    .run();
}

export async function findDeliveryWithEndpoint(d1: D1Database, deliveryId: string) {
  const delivery = await d1
    .prepare("SELECT * FROM webhook_deliveries WHERE id = ?")
    .bind(deliveryId)
    .first<WebhookDeliveryRow>();
  if (!delivery) return null;
  const endpoint = await d1
    .prepare("SELECT * FROM webhook_endpoints WHERE id = ?")
    .bind(delivery.endpoint_id)
    .first<WebhookEndpointRow>();
  return endpoint ? { delivery, endpoint } : null;
}

export function findDelivery(d1: D1Database, endpointId: string, id: string) {
  return d1
    .prepare("SELECT * FROM webhook_deliveries WHERE id = ? AND endpoint_id = ?")
    .bind(id, endpointId)
    .first<WebhookDeliveryRow>();
}

export async function listDeliveries(
  d1: D1Database,
  endpointId: string,
  offset: number,
  limit: number,
) {
  const [rows, totals] = await d1.batch<WebhookDeliveryRow | { total: number }>([
    d1
      .prepare(
        `SELECT * FROM webhook_deliveries WHERE endpoint_id = ?
         ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
      )
      .bind(endpointId, limit, offset),
    d1
      .prepare("SELECT count(*) AS total FROM webhook_deliveries WHERE endpoint_id = ?")
      .bind(endpointId),
  ]);
  const deliveries = (rows?.results ?? []) as WebhookDeliveryRow[];
  const attempts =
    deliveries.length === 0
      ? []
      : (
          await d1
            .prepare(
              `SELECT * FROM webhook_delivery_attempts
               WHERE delivery_id IN (SELECT value FROM json_each(?))
               ORDER BY attempt_number DESC`,
            )
            .bind(JSON.stringify(deliveries.map((row) => row.id)))
            .all<WebhookAttemptRow>()
        ).results;
  return {
    rows: deliveries,
    attempts,
    total: ((totals?.results[0] as { total: number } | undefined)?.total ?? 0) as number,
  };
}

/** One attempt and what it means for the delivery, in one batch. */
export function recordAttemptStatements(
  d1: D1Database,
  attempt: {
    deliveryId: string;
    attemptNumber: number;
    statusCode: number | null;
    error: string | null;
    durationMs: number;
    manual: boolean;
    at: string;
    delivered: boolean;
  },
): D1PreparedStatement[] {
  return [
    d1
      .prepare(
        `INSERT INTO webhook_delivery_attempts
           (id, delivery_id, attempt_number, status_code, error, duration_ms, manual, attempted_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (delivery_id, attempt_number) DO NOTHING`,
      )
      .bind(
        crypto.randomUUID(),
        attempt.deliveryId,
        attempt.attemptNumber,
        attempt.statusCode,
        attempt.error,
        attempt.durationMs,
        attempt.manual ? 1 : 0,
        attempt.at,
      ),
    d1
      .prepare(
        `UPDATE webhook_deliveries SET
           attempt_count = max(attempt_count, ?2),
           last_status_code = ?3, last_error = ?4,
           status = CASE WHEN ?5 THEN 'DELIVERED' ELSE 'RETRYING' END,
           delivered_at = CASE WHEN ?5 THEN ?6 ELSE delivered_at END,
           updated_at = ?6
         WHERE id = ?1 AND status IN ('PENDING', 'RETRYING')`,
      )
      .bind(
        attempt.deliveryId,
        attempt.attemptNumber,
        attempt.statusCode,
        attempt.error,
        attempt.delivered ? 1 : 0,
        attempt.at,
      ),
  ];
}

/** A success ends the endpoint's failure streak; a failure starts one if none is running. */
export function endpointHealthStatement(
  d1: D1Database,
  endpointId: string,
  delivered: boolean,
  at: string,
): D1PreparedStatement {
  return delivered
    ? d1
        .prepare(
          "UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL",
        )
        .bind(endpointId)
    : d1
        .prepare(
          "UPDATE webhook_endpoints SET failing_since = ?2 WHERE id = ?1 AND failing_since IS NULL",
        )
        .bind(endpointId, at);
}

export function finishDeliveryStatement(
  d1: D1Database,
  deliveryId: string,
  status: "FAILED" | "SKIPPED",
  reason: string,
  at: string,
): D1PreparedStatement {
  return d1
    .prepare(
      `UPDATE webhook_deliveries SET status = ?2, last_error = ?3, updated_at = ?4
       WHERE id = ?1 AND status IN ('PENDING', 'RETRYING')`,
    )
    .bind(deliveryId, status, reason, at);
}

/** Disables an endpoint that is still enabled and still failing since `failingSince`. */
export function disableEndpointStatement(
  d1: D1Database,
  endpointId: string,
  failingSince: string,
  reason: string,
  at: string,
): D1PreparedStatement {
  return d1
    .prepare(
      `UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?3, disabled_at = ?4, updated_at = ?4
       WHERE id = ?1 AND enabled = 1 AND failing_since = ?2`,
    )
    .bind(endpointId, failingSince, reason, at);
}

/** A manual resend: the delivery goes round again (same event id, the next attempt numbers). */
export function reopenDeliveryStatement(
  d1: D1Database,
  deliveryId: string,
  at: string,
): D1PreparedStatement {
  return d1
    .prepare(
      `UPDATE webhook_deliveries SET status = 'PENDING', queued_at = ?2, updated_at = ?2
       WHERE id = ?1 AND status <> 'PENDING'`,
    )
    .bind(deliveryId, at);
}

/**
 * Deletes up to `limit` finished deliveries (with their attempts) last
 * changed before `before`, sent outbox events older than that, and deleted
 * endpoints with no delivery left. Returns the counts per table.
 */
export async function pruneWebhookHistoryStatements(d1: D1Database, before: string, limit: number) {
  const finished = `SELECT id FROM webhook_deliveries
    WHERE status IN ('DELIVERED', 'FAILED', 'SKIPPED') AND updated_at < ?1 LIMIT ?2`;
  const results = await d1.batch([
    d1
      .prepare(`DELETE FROM webhook_delivery_attempts WHERE delivery_id IN (${finished})`)
      .bind(before, limit),
    d1.prepare(`DELETE FROM webhook_deliveries WHERE id IN (${finished})`).bind(before, limit),
    d1
      .prepare(
        `DELETE FROM tenant_events WHERE id IN (
           SELECT id FROM tenant_events WHERE sent_at IS NOT NULL AND sent_at < ?1 LIMIT ?2)`,
      )
      .bind(before, limit),
    d1
      .prepare(
        `DELETE FROM webhook_endpoints WHERE deleted_at IS NOT NULL AND deleted_at < ?1
           AND NOT EXISTS (SELECT 1 FROM webhook_deliveries WHERE endpoint_id = webhook_endpoints.id)`,
      )
      .bind(before),
  ]);
  const [attempts, deliveries, events, endpoints] = results.map((result) => result.meta.changes);
  return { attempts, deliveries, events, endpoints };
}
