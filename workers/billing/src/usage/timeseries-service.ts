import type { Database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { meterBuckets } from "./domain/meter-buckets.ts";
import { foldHours, type Granularity, timeseriesRange } from "./domain/usage-timeseries.ts";
import { readHourlyUsage } from "./hourly-storage.ts";
import {
  checkedGroupBy,
  readFeatureMeter,
  readHourSummaries,
  readLevelsBefore,
} from "./meter-reads.ts";

/**
 * A tenant's usage of one feature over time, from the per-hour summaries
 * the counter's flush stores beside the aggregates (never from the
 * events): a plain feature's units (usage_hourly), a metered feature's
 * meter quantity per bucket (usage_meter_hourly), in total and, with
 * `groupBy`, per combination of the named properties' values.
 */
export async function usageTimeseries(
  db: Database,
  tenantId: string,
  query: { feature: string; from: string; to: string; granularity: Granularity; groupBy?: string },
) {
  const range = timeseriesRange(new Date(query.from), new Date(query.to), query.granularity);
  if (!range.ok) throw new ApiError(400, range.message);
  const meter = await readFeatureMeter(db, query.feature);
  const groupBy =
    query.groupBy === undefined ? [] : checkedGroupBy(query.groupBy, query.feature, meter);
  const window = {
    tenantId,
    feature: query.feature,
    from: range.from.toISOString(),
    to: range.to.toISOString(),
  };
  if (!meter) {
    const hours = await readHourlyUsage(db, {
      tenantId,
      featureLookupKey: query.feature,
      from: window.from,
      to: window.to,
    });
    return { data: foldHours(range, query.granularity, hours) };
  }
  const [hours, levels] = await Promise.all([
    readHourSummaries(db, window, groupBy),
    meter.aggregation === "WEIGHTED_SUM"
      ? readLevelsBefore(db, { ...window, before: window.from }, groupBy)
      : Promise.resolve([]),
  ]);
  const { data, series } = meterBuckets(range, meter.aggregation, hours, levels);
  if (query.groupBy === undefined) return { data };
  return {
    data,
    series: series.map(({ combination, data: buckets }) => ({
      dimensions: combination.dimensions,
      overflow: combination.overflow,
      data: buckets,
    })),
  };
}
