import { insertDeadLetters } from "./db/dead-letters.ts";
import { deadLetterFromMessage } from "./domain/dead-letter.ts";

async function recordDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const records = batch.messages.map((message) => deadLetterFromMessage(batch.queue, message));
  // One insert for the batch; if D1 fails the whole batch is retried, and the
  // message-id primary key keeps the retry from storing anything twice.
  await insertDeadLetters(env.DB, records);
  batch.ackAll();
}

export default {
  async queue(batch, env, _ctx) {
    if (batch.queue.endsWith("-dlq")) {
      await recordDeadLetters(batch, env);
      return;
    }
    throw new Error(`usage-consumer has no handler for queue ${batch.queue}`);
  },
} satisfies ExportedHandler<Env>;
