import type { Database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import {
  isRawUsageQueue,
  propertiesField,
  rawUsageMessage,
  USAGE_QUEUES,
  validatedUsageMessage,
} from "@edge-platform/shared/queues/usage";
import { shardOfId } from "@edge-platform/shared/usage-log/client";
import { type AuditContext, auditEntry, ROW_CHANGED, SYSTEM_AUDIT } from "../audit/index.ts";
import { type PageRequest, pageMeta, pageOffset } from "../platform/index.ts";
import {
  type DeadLetterFilter,
  type DeadLetterRow,
  findDeadLetter,
  listDeadLetters,
  markDeadLetterDiscarded,
  markDeadLetterRetrying,
} from "./dead-letter-storage.ts";
import { usageRawQueue } from "./log/raw-queues.ts";
import { markUsageEventSent, reopenUsageEvent } from "./log/service.ts";

/** The usage log's own send of a reopened event waits this long for the retry's send. */
const RETRY_SEND_GRACE_MS = 5_000;

export const DEAD_LETTER_NOT_FOUND = "Dead letter event not found";
export const ALREADY_RESOLVED = "Event is already resolved - nothing to retry";
export const DISCARDED_CANNOT_RETRY = "Event was discarded - cannot retry";
export const ALREADY_DISCARDED = "Event was already discarded";

export function deadLetterView(row: DeadLetterRow) {
  return { ...row, originalPayload: row.originalPayload ?? null };
}

/** Platform-admin handling of the pipeline's dead letters: list, retry, discard. */
export class UsageDeadLetterService {
  constructor(
    private readonly db: Database,
    private readonly env: Env,
    private readonly audit: AuditContext = SYSTEM_AUDIT,
  ) {}

  /** The audit row of a dead letter's status change, written only if the guarded update matched. */
  private entry(
    action: "dead_letter.retried" | "dead_letter.discarded",
    row: DeadLetterRow,
    after: string,
  ) {
    return auditEntry(
      this.db,
      this.audit,
      {
        tenantId: row.tenantId ?? null,
        action,
        targetType: "dead_letter",
        targetId: row.id,
        changes: {
          status: { before: row.status, after },
          ...(action === "dead_letter.retried"
            ? { retryCount: { before: row.retryCount, after: row.retryCount + 1 } }
            : {}),
        },
      },
      ROW_CHANGED,
    );
  }

  async list(filter: DeadLetterFilter, page: PageRequest) {
    const { rows, total } = await listDeadLetters(this.db, filter, pageOffset(page), page.limit);
    return { data: rows.map(deadLetterView), meta: pageMeta(page, total) };
  }

  async get(id: string) {
    return deadLetterView(await this.found(id));
  }

  /**
   * Sends the payload again to the queue it failed on, carrying the dead
   * letter's id so the stage can mark it RESOLVED once the event gets
   * through. Raw-queue retries go through the outbox (the event is reopened
   * if it was rejected), so a failed send is retried by the publisher.
   */
  async retry(id: string, adminId: string) {
    const row = await this.found(id);
    if (row.status === "RESOLVED") throw new ApiError(400, ALREADY_RESOLVED);
    if (row.status === "DISCARDED") throw new ApiError(400, DISCARDED_CANNOT_RETRY);
    const now = new Date();
    if (isRawUsageQueue(row.topic)) {
      const parsed = rawUsageMessage.safeParse(row.originalPayload);
      if (!parsed.success) throw notRetryable();
      const event = await reopenUsageEvent(
        this.env,
        parsed.data.tenantId,
        parsed.data.id,
        RETRY_SEND_GRACE_MS,
      );
      if (!event) {
        throw new ApiError(400, "The usage event no longer exists - discard this dead letter");
      }
      const message = {
        id: event.id,
        tenantId: event.tenantId,
        eventId: event.eventId,
        feature: event.feature,
        amount: event.amount,
        timestamp: event.timestamp,
        receivedAt: event.receivedAt,
        ...propertiesField(event.properties),
        retryOf: row.id,
      };
      try {
        await usageRawQueue(this.env, event.tenantId, shardOfId(event.id)).send(message, {
          contentType: "json",
        });
        await markUsageEventSent(this.env, event.tenantId, event.id);
      } catch (error) {
        // The event has an outbox entry again: its usage log sends it shortly.
        console.error(
          JSON.stringify({
            level: "warn",
            msg: "dead-letter retry send failed",
            error: String(error),
          }),
        );
      }
    } else if (row.topic === USAGE_QUEUES.validated) {
      const parsed = validatedUsageMessage.safeParse(row.originalPayload);
      if (!parsed.success) throw notRetryable();
      try {
        await this.env.USAGE_VALIDATED_QUEUE.send(
          { ...parsed.data, retryOf: row.id },
          { contentType: "json" },
        );
      } catch (error) {
        console.error(
          JSON.stringify({
            level: "error",
            msg: "dead-letter retry send failed",
            error: String(error),
          }),
        );
        throw new ApiError(503, "The queue is unavailable, try again shortly");
      }
    } else {
      throw notRetryable();
    }
    const [[updated]] = await this.db.batch([
      markDeadLetterRetrying(this.db, row, adminId, now.toISOString()),
      this.entry("dead_letter.retried", row, "RETRYING"),
    ]);
    if (!updated) throw new ApiError(409, "The dead letter changed meanwhile, reload it");
    return deadLetterView(updated);
  }

  async discard(id: string, adminId: string) {
    const row = await this.found(id);
    if (row.status === "RESOLVED") throw new ApiError(400, ALREADY_RESOLVED);
    if (row.status === "DISCARDED") throw new ApiError(400, ALREADY_DISCARDED);
    const [[updated]] = await this.db.batch([
      markDeadLetterDiscarded(this.db, row, adminId, new Date().toISOString()),
      this.entry("dead_letter.discarded", row, "DISCARDED"),
    ]);
    if (!updated) throw new ApiError(409, "The dead letter changed meanwhile, reload it");
    return deadLetterView(updated);
  }

  private async found(id: string): Promise<DeadLetterRow> {
    const row = await findDeadLetter(this.db, id);
    if (!row) throw new ApiError(404, DEAD_LETTER_NOT_FOUND);
    return row;
  }
}

function notRetryable() {
  return new ApiError(
    400,
    "This dead letter's payload is not a usage event message the pipeline can take again - discard it instead",
  );
}
