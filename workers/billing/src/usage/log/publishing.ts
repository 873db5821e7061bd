import {
  envelopesOf,
  type RawUsageMessage,
  sendBatches,
  type ValidatedUsageMessage,
} from "@edge-platform/shared/queues/usage";

export interface SendReport {
  /** Ids (the events' ids in the usage log) of the messages the queue accepted. */
  sent: string[];
  /** Ids of the messages whose send failed, with the error. */
  failed: { ids: string[]; error: string }[];
}

/**
 * Sends events in envelopes (a tenant's events, up to 100 per queue
 * message; shared/src/queues/usage.ts), in sendBatch calls within the
 * count and size limits. A call that fails does not stop the others; the
 * caller settles each id.
 */
export async function sendInChunks<T extends RawUsageMessage | ValidatedUsageMessage>(
  queue: Queue,
  messages: T[],
  /** The counter shard that counts these events (absent from the bodies when 0). */
  counterShard = 0,
): Promise<SendReport> {
  const report: SendReport = { sent: [], failed: [] };
  const stamped =
    counterShard === 0 ? messages : messages.map((message) => ({ ...message, counterShard }));
  await Promise.all(
    sendBatches(envelopesOf(stamped)).map(async (batch) => {
      const ids = batch.flatMap((envelope) => envelope.events.map((message) => message.id));
      try {
        await queue.sendBatch(batch.map((body) => ({ body, contentType: "json" as const })));
        report.sent.push(...ids);
      } catch (error) {
        report.failed.push({ ids, error: error instanceof Error ? error.message : String(error) });
      }
    }),
  );
  return report;
}
