import { USAGE_QUEUES } from "@edge-platform/shared/queues/usage";
import { insertDeadLetters } from "./db/dead-letters.ts";
import { deadLetterFromMessage, retriedDeadLetter } from "./domain/dead-letter.ts";
import { runAggregationStage } from "./stages/aggregation.ts";
import { recordDuplicates } from "./stages/duplicates.ts";
import { runValidationStage } from "./stages/validation.ts";

async function recordDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const records = await Promise.all(
    batch.messages.map(async (message) => ({
      ...(await deadLetterFromMessage(batch.queue, message)),
      retryOf: retriedDeadLetter(message.body),
    })),
  );
  // One batch for all; if D1 fails the whole batch is retried, and the
  // derived row ids keep the retry from storing anything twice.
  await insertDeadLetters(env.DB, records);
  batch.ackAll();
}

export default {
  async queue(batch, env, _ctx) {
    switch (batch.queue) {
      case USAGE_QUEUES.raw:
        return runValidationStage(batch, env);
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
