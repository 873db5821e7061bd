import { pruneWebhookHistoryStatements } from "./webhook-endpoint-storage.ts";

/** How long delivery logs, sent tenant events and deleted endpoints are kept. */
export const WEBHOOK_HISTORY_DAYS = 30;
const PRUNE_LIMIT = 1000;

/**
 * Cron Trigger: keeps outbound-webhook history bounded. Deliveries still
 * being delivered, unsent events and live endpoints are never touched.
 */
export async function pruneWebhookHistory(d1: D1Database, now: Date) {
  try {
    const before = new Date(now.getTime() - WEBHOOK_HISTORY_DAYS * 86_400_000).toISOString();
    const pruned = await pruneWebhookHistoryStatements(d1, before, PRUNE_LIMIT);
    if (Object.values(pruned).some((count) => (count ?? 0) > 0)) {
      console.log(JSON.stringify({ level: "info", msg: "webhook history pruned", ...pruned }));
    }
    return pruned;
  } catch (error) {
    console.error(
      JSON.stringify({ level: "error", msg: "webhook history prune failed", error: String(error) }),
    );
    return null;
  }
}
