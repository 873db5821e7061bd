/**
 * A usage event's status in its tenant's usage log (the billing worker's
 * UsageLog objects; the log is not in D1). PENDING (stored by ingestion)
 * -> AGGREGATED (passed the checks and claimed by the tenant's
 * EntitlementCounter flush, with its window and validatedAt), or PENDING ->
 * REJECTED (with a stable reason code). VALIDATED sits between the two when
 * validation could not count the event through the counter at once and
 * forwarded it to usage-validated instead. Every move is conditional on the
 * previous status, so a redelivered message never moves an event twice.
 */
export const usageEventStatuses = ["PENDING", "VALIDATED", "AGGREGATED", "REJECTED"] as const;
export type UsageEventStatus = (typeof usageEventStatuses)[number];
