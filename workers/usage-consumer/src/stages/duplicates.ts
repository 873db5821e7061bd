import { duplicateUsageMessage } from "@edge-platform/shared/queues/usage";

/**
 * usage-duplicates: deliveries of events that were already processed. For
 * monitoring only: one structured log line per batch (what a log-based
 * metric or alert reads), then ack. Nothing here changes any state.
 */
export function recordDuplicates(batch: MessageBatch<unknown>): void {
  const byTenant: Record<string, number> = {};
  let malformed = 0;
  for (const message of batch.messages) {
    const parsed = duplicateUsageMessage.safeParse(message.body);
    if (parsed.success) byTenant[parsed.data.tenantId] = (byTenant[parsed.data.tenantId] ?? 0) + 1;
    else malformed++;
  }
  console.log(
    JSON.stringify({
      level: "info",
      msg: "usage duplicates",
      count: batch.messages.length,
      byTenant,
      malformed,
    }),
  );
  batch.ackAll();
}
