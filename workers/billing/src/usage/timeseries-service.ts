import type { Database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { foldHours, type Granularity, timeseriesRange } from "./domain/usage-timeseries.ts";
import { readHourlyUsage } from "./hourly-storage.ts";

/**
 * A tenant's usage of one feature over time, from the per-hour units the
 * counter's flush stores beside the aggregates (never from the events).
 */
export async function usageTimeseries(
  db: Database,
  tenantId: string,
  query: { feature: string; from: string; to: string; granularity: Granularity },
) {
  const range = timeseriesRange(new Date(query.from), new Date(query.to), query.granularity);
  if (!range.ok) throw new ApiError(400, range.message);
  const hours = await readHourlyUsage(db, {
    tenantId,
    featureLookupKey: query.feature,
    from: range.from.toISOString(),
    to: range.to.toISOString(),
  });
  return { data: foldHours(range, query.granularity, hours) };
}
