import {
  CONSUME_REQUEST_RETENTION_MS,
  type ConsumeResult,
  KEYED_CONSUME_TTL_MS,
  type KeyedConsumeResult,
} from "@edge-platform/shared/billing/entitlement-counter-protocol";

/*
 * The answers of consumes sent with a request id or an Idempotency-Key
 * (`consume_requests`), written in the same synchronous step as the units
 * they took, so there is no moment where units were taken and the answer
 * not kept.
 */

/** A keyed consume as its record names it. */
export interface KeyedRequest {
  requestId: string;
  requestHash: string;
  correlationId: string;
  atMs: number;
}

export class ConsumeRequests {
  constructor(private readonly sql: SqlStorage) {}

  /** The stored result of an earlier consume with this request id, if any. */
  answered(requestId: string | undefined): ConsumeResult | undefined {
    if (requestId === undefined) return undefined;
    const row = this.sql
      .exec<{ result: string }>(
        "SELECT result FROM consume_requests WHERE request_id = ?",
        requestId,
      )
      .toArray()[0];
    return row ? (JSON.parse(row.result) as ConsumeResult) : undefined;
  }

  remember(requestId: string, result: ConsumeResult): void {
    this.sql.exec(
      "INSERT INTO consume_requests (request_id, result, recorded_at) VALUES (?, ?, ?)",
      requestId,
      JSON.stringify(result),
      Date.now(),
    );
  }

  /** The stored answer of a keyed consume, or the conflict; undefined when the key is new or expired. */
  keyedAnswer(input: Omit<KeyedRequest, "correlationId">): KeyedConsumeResult | undefined {
    const row = this.sql
      .exec<{
        result: string;
        request_hash: string | null;
        correlation_id: string | null;
        recorded_at: number;
      }>(
        "SELECT result, request_hash, correlation_id, recorded_at FROM consume_requests WHERE request_id = ?",
        input.requestId,
      )
      .toArray()[0];
    if (!row || input.atMs - row.recorded_at >= KEYED_CONSUME_TTL_MS) return undefined;
    if (row.request_hash !== input.requestHash) return { kind: "key_reused" };
    return {
      kind: "answered",
      result: JSON.parse(row.result) as ConsumeResult,
      replayed: true,
      correlationId: row.correlation_id ?? "unknown",
      atMs: row.recorded_at,
    };
  }

  /** The key's record, replacing one that expired. */
  rememberKeyed(input: KeyedRequest, result: ConsumeResult): void {
    this.sql.exec(
      `INSERT INTO consume_requests (request_id, result, recorded_at, request_hash, correlation_id)
       VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (request_id) DO UPDATE SET
         result = excluded.result, recorded_at = excluded.recorded_at,
         request_hash = excluded.request_hash, correlation_id = excluded.correlation_id`,
      input.requestId,
      JSON.stringify(result),
      input.atMs,
      input.requestHash,
      input.correlationId,
    );
  }

  /** Forgets the answers no repeat can ask for any more. */
  prune(nowMs: number): void {
    this.sql.exec(
      "DELETE FROM consume_requests WHERE recorded_at < ?",
      nowMs - CONSUME_REQUEST_RETENTION_MS,
    );
  }
}
