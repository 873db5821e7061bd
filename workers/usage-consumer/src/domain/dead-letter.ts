import type { DeadLetterStage } from "@edge-platform/shared/db/schema/usage";
import {
  deadLetterIdFor,
  isRawDeadLetterQueue,
  USAGE_QUEUES,
} from "@edge-platform/shared/queues/usage";

export type { DeadLetterStage };

/** Which pipeline stage a dead-letter queue collects the failures of. */
const STAGE_BY_DEAD_LETTER_QUEUE: Record<string, DeadLetterStage> = {
  [USAGE_QUEUES.rawDeadLetters]: "VALIDATION",
  [USAGE_QUEUES.validatedDeadLetters]: "AGGREGATION",
  [USAGE_QUEUES.duplicatesDeadLetters]: "MONITORING",
};

export function stageForDeadLetterQueue(queue: string): DeadLetterStage {
  if (isRawDeadLetterQueue(queue)) return "VALIDATION";
  return STAGE_BY_DEAD_LETTER_QUEUE[queue] ?? "UNKNOWN";
}

/**
 * The queue a dead letter is retried on. Every raw queue's letters are
 * `usage-raw`'s (a retry goes to the tenant's raw queue, whichever it is
 * then); the dead-letter queue itself is named in the error details.
 */
function topicOf(deadLetterQueue: string): string {
  if (isRawDeadLetterQueue(deadLetterQueue)) return USAGE_QUEUES.raw;
  return deadLetterQueue.replace(/-dlq$/, "");
}

export interface DeadLetterRecord {
  id: string;
  sourceEventId: string | null;
  tenantId: string | null;
  topic: string;
  failureStage: DeadLetterStage;
  failureReason: string;
  originalPayload: unknown;
  errorDetails: string | null;
  retryCount: number;
}

function stringField(body: unknown, field: string): string | null {
  if (typeof body !== "object" || body === null) return null;
  const value = (body as Record<string, unknown>)[field];
  return typeof value === "string" && value.length > 0 ? value : null;
}

/** The dead letter an administrator retried, when the message is such a retry. */
export function retriedDeadLetter(body: unknown): string | null {
  return stringField(body, "retryOf");
}

/**
 * Describes a message that exhausted its retries. The row id is derived
 * from the queue and the message id, so a redelivered dead letter is stored
 * once.
 */
export async function deadLetterFromMessage(
  queue: string,
  message: { id: string; body: unknown; attempts: number },
): Promise<DeadLetterRecord> {
  const stage = stageForDeadLetterQueue(queue);
  return {
    id: await deadLetterIdFor(`${queue}:${message.id}`),
    sourceEventId: stringField(message.body, "eventId"),
    tenantId: stringField(message.body, "tenantId"),
    topic: topicOf(queue),
    failureStage: stage,
    failureReason: `Retries exhausted at the ${stage.toLowerCase()} stage`,
    originalPayload: message.body ?? null,
    errorDetails: `moved to ${queue} after the source queue's max_retries`,
    retryCount: message.attempts,
  };
}
