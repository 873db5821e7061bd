import { envelopeItems, isRawUsageQueue, USAGE_QUEUES } from "@edge-platform/shared/queues/usage";
import { insertDeadLetters } from "./db/dead-letters.ts";
import { deadLetterFromMessage, retriedDeadLetter } from "./domain/dead-letter.ts";
import { runAggregationStage } from "./stages/aggregation.ts";
import { recordDuplicates } from "./stages/duplicates.ts";
import { runValidationStage } from "./stages/validation.ts";

/** One dead letter per event: an envelope that ran out of retries is stored event by event. */
async function recordDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const records = await Promise.all(
    batch.messages.flatMap((message) => {
      const bodies = envelopeItems(message.body);
      const single = bodies.length === 1 && bodies[0] === message.body;
      return bodies.map(async (body, index) => ({
        ...(await deadLetterFromMessage(batch.queue, {
          id: single ? message.id : `${message.id}:${index}`,
          body,
          attempts: message.attempts,
        })),
        retryOf: retriedDeadLetter(body),
      }));
    }),
  );
  // One batch for all; if D1 fails the whole batch is retried, and the
  // derived row ids keep the retry from storing anything twice.
  await insertDeadLetters(env.DB, records);
  batch.ackAll();
}

export default {
  async queue(batch, env, _ctx) {
    // usage-raw and usage-raw-<i> (USAGE_RAW_QUEUES in the billing worker) alike.
    if (isRawUsageQueue(batch.queue)) return runValidationStage(batch, env);
    switch (batch.queue) {
      case USAGE_QUEUES.validated:
        return runAggregationStage(batch, env);
      case USAGE_QUEUES.duplicates:
        return recordDuplicates(batch);
      default:
        if (batch.queue.endsWith("-dlq")) return recordDeadLetters(batch, env);
        throw new Error(`usage-consumer has no handler for queue ${batch.queue}`);
    }
  },
} satisfies ExportedHandler<Env>;
