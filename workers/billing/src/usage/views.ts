import { meterQuantity } from "@edge-platform/shared/billing/meter";
import type { Database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { listUsageAggregates } from "./aggregates-storage.ts";
import { byCombination, type Dimensions } from "./domain/meter-buckets.ts";
import {
  checkedGroupBy,
  readFeatureMeter,
  readWindowSummaries,
  type WindowSummary,
} from "./meter-reads.ts";

type AggregateRow = Awaited<ReturnType<typeof listUsageAggregates>>[number];

interface AggregateView {
  subscriptionId: string;
  feature: string;
  periodKey: string;
  periodStart: string;
  periodEnd: string | null;
  amount: number;
  lastEventAt: string | null;
  updatedAt: string;
  dimensions: Dimensions | null;
  overflow?: boolean;
}

const windowOf = (row: { subscriptionId: string; feature: string; periodKey: string }) =>
  `${row.subscriptionId}\u0000${row.feature}\u0000${row.periodKey}`;

function quantityOf(summary: WindowSummary): number {
  return meterQuantity(
    summary.aggregation,
    summary.state,
    { start: summary.periodStart, end: summary.periodEnd },
    summary.carried,
  );
}

function viewOf(row: AggregateRow): AggregateView {
  return {
    subscriptionId: row.subscriptionId,
    feature: row.featureLookupKey,
    periodKey: row.periodKey,
    periodStart: row.periodStart,
    periodEnd: row.periodEnd,
    amount: row.amount,
    lastEventAt: row.lastEventAt,
    updatedAt: row.updatedAt,
    dimensions: null,
  };
}

/** The tenant's aggregated usage (its events: usage/log/service.ts). */
export class UsageViewService {
  constructor(private readonly db: Database) {}

  /**
   * One row per window: a plain feature's counted units, a metered
   * window's meter quantity over all its groups. With `groupBy` (which
   * needs `feature`), one row per window and combination of the named
   * properties' values instead.
   */
  async aggregates(
    tenantId: string,
    filter: { feature?: string; periodKey?: string; subscriptionId?: string; groupBy?: string },
  ) {
    const { groupBy: rawGroupBy, ...where } = filter;
    let groupBy: string[] = [];
    if (rawGroupBy !== undefined) {
      if (!where.feature) {
        throw new ApiError(422, "groupBy requires feature: name the feature to split", {
          code: "group_by_invalid",
        });
      }
      groupBy = checkedGroupBy(
        rawGroupBy,
        where.feature,
        await readFeatureMeter(this.db, where.feature),
      );
    }
    const [rows, summaries] = await Promise.all([
      listUsageAggregates(this.db, tenantId, where),
      readWindowSummaries(this.db, tenantId, where, groupBy),
    ]);
    const byWindow = new Map<string, WindowSummary[]>();
    for (const summary of summaries) {
      const list = byWindow.get(windowOf(summary)) ?? [];
      list.push(summary);
      byWindow.set(windowOf(summary), list);
    }
    const data = rows.flatMap((row) => {
      const view = viewOf(row);
      const metered = byWindow.get(windowOf(view));
      if (groupBy.length === 0) {
        const [summary] = metered ?? [];
        return [summary ? { ...view, amount: quantityOf(summary) } : view];
      }
      // A window no group was stored for (a subscription that counted the
      // feature before it had a meter) answers its units as one row whose
      // properties are unknown, so no window's usage drops out of a split.
      if (!metered) {
        return [
          {
            ...view,
            dimensions: Object.fromEntries(groupBy.map((name) => [name, null])),
            overflow: false,
          },
        ];
      }
      return metered
        .sort((a, b) => byCombination(a.combination, b.combination))
        .map((summary) => ({
          ...view,
          amount: quantityOf(summary),
          lastEventAt: summary.state.latestAt,
          updatedAt: summary.updatedAt,
          dimensions: summary.combination.dimensions,
          overflow: summary.combination.overflow,
        }));
    });
    return { data };
  }
}
