import type { deadLetterStages } from "@edge-platform/shared/db/schema/usage";

export type DeadLetterStage = (typeof deadLetterStages)[number];

/** Which pipeline stage a dead-letter queue collects the failures of. */
const STAGE_BY_DEAD_LETTER_QUEUE: Record<string, DeadLetterStage> = {
  "usage-raw-dlq": "VALIDATION",
  "usage-validated-dlq": "AGGREGATION",
};

export function stageForDeadLetterQueue(queue: string): DeadLetterStage {
  return STAGE_BY_DEAD_LETTER_QUEUE[queue] ?? "UNKNOWN";
}

export interface DeadLetterRecord {
  id: string;
  sourceEventId: string | null;
  tenantId: string | null;
  topic: string;
  failureStage: DeadLetterStage;
  failureReason: string;
  originalPayload: unknown;
  retryCount: number;
}

function stringField(body: unknown, field: string): string | null {
  if (typeof body !== "object" || body === null) return null;
  const value = (body as Record<string, unknown>)[field];
  return typeof value === "string" && value.length > 0 ? value : null;
}

/**
 * Describes a message that exhausted its retries. The queue message id is
 * the row id, so a redelivered dead letter is stored once.
 */
export function deadLetterFromMessage(
  queue: string,
  message: { id: string; body: unknown; attempts: number },
): DeadLetterRecord {
  const stage = stageForDeadLetterQueue(queue);
  return {
    id: message.id,
    sourceEventId: stringField(message.body, "eventId"),
    tenantId: stringField(message.body, "tenantId"),
    topic: queue.replace(/-dlq$/, ""),
    failureStage: stage,
    failureReason: `retries exhausted at the ${stage.toLowerCase()} stage`,
    originalPayload: message.body ?? null,
    retryCount: message.attempts,
  };
}
