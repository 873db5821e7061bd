import {
  QUEUE_SEND_BATCH_MAX,
  type RawUsageMessage,
  type ValidatedUsageMessage,
} from "@edge-platform/shared/queues/usage";

export interface SendReport {
  /** Ids (usage_events.id) of the messages the queue accepted. */
  sent: string[];
  /** Ids of the messages whose send failed, with the error. */
  failed: { ids: string[]; error: string }[];
}

/**
 * Sends messages in chunks of at most 100 (the sendBatch limit). A chunk
 * that fails does not stop the others; the caller settles each id.
 */
export async function sendInChunks<T extends RawUsageMessage | ValidatedUsageMessage>(
  queue: Queue<T>,
  messages: T[],
): Promise<SendReport> {
  const report: SendReport = { sent: [], failed: [] };
  const chunks: T[][] = [];
  for (let start = 0; start < messages.length; start += QUEUE_SEND_BATCH_MAX) {
    chunks.push(messages.slice(start, start + QUEUE_SEND_BATCH_MAX));
  }
  await Promise.all(
    chunks.map(async (chunk) => {
      const ids = chunk.map((message) => message.id);
      try {
        await queue.sendBatch(chunk.map((body) => ({ body, contentType: "json" as const })));
        report.sent.push(...ids);
      } catch (error) {
        report.failed.push({ ids, error: error instanceof Error ? error.message : String(error) });
      }
    }),
  );
  return report;
}
