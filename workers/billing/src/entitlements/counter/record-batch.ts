import type { UsageEntry } from "@edge-platform/shared/billing/entitlement-counter-protocol";
import type { MeterContribution, PropertyValue } from "@edge-platform/shared/billing/meter";
import type { PendingEventInsert } from "./flush.ts";
import { type MeterPlacement, storedContribution } from "./meter-contribution.ts";
import { attributionId, type WindowKey } from "./window-keys.ts";

/*
 * How a `record` batch is counted, decided before any storage is touched:
 * which entries are new, and per attribution row (subscription, feature,
 * window) the units to add, split by where they wait for the flush.
 */

/** A batch's units for one attribution row. */
export interface CountedUnits {
  key: WindowKey;
  /** Units of logged events (claimed by a flush). */
  claimed: number;
  /** Units with no usage log row (added to `unflushed`). */
  direct: number;
  lastAt: string;
}

/** A logged event of the batch: it draws credits on its own, as its units may be taken back. */
export interface LoggedEntry {
  usageEventId: string;
  key: WindowKey;
  /** Units of logged events of the batch counted before this one in its attribution row. */
  countedBefore: number;
  amount: number;
  /** A metered event's group: priced by the group's terms, after the group's units so far. */
  group?: { unitsBefore: number; dimensions: Record<string, PropertyValue | null> };
}

export interface RecordedBatch {
  recorded: number;
  duplicates: number;
  /** Per attribution row, in the order the batch first names them. */
  counted: Map<string, CountedUnits>;
  /** In batch order. */
  logged: LoggedEntry[];
  pendingRows: PendingEventInsert[];
  directHours: { key: WindowKey; units: number; at: string }[];
}

/**
 * Sorts a batch: `fresh` holds the event ids not recorded before; the
 * first entry of such an id takes it, and every other entry is a duplicate
 * (a repeat inside the batch too). `keys[i]` is the window of `entries[i]`.
 */
export function sortRecordedBatch(
  entries: readonly UsageEntry[],
  keys: readonly WindowKey[],
  fresh: ReadonlySet<string>,
  placements: ReadonlyMap<number, MeterPlacement> = new Map(),
): RecordedBatch {
  const unused = new Set(fresh);
  const batch: RecordedBatch = {
    recorded: 0,
    duplicates: 0,
    counted: new Map(),
    logged: [],
    pendingRows: [],
    directHours: [],
  };
  entries.forEach((entry, index) => {
    if (!unused.delete(entry.eventId)) {
      batch.duplicates++;
      return;
    }
    const key = keys[index] as WindowKey;
    const id = attributionId(key);
    const units = batch.counted.get(id) ?? { key, claimed: 0, direct: 0, lastAt: "" };
    if (entry.usageEventId) {
      const placement = placements.get(index);
      batch.logged.push({
        usageEventId: entry.usageEventId,
        key,
        countedBefore: units.claimed,
        amount: entry.amount,
        ...(placement
          ? {
              group: {
                unitsBefore: placement.groupUnitsBefore,
                dimensions: placement.contribution.dimensions ?? {},
              },
            }
          : {}),
      });
      units.claimed += entry.amount;
      batch.pendingRows.push(
        pendingRow(entry.usageEventId, key, entry, placement?.contribution ?? null),
      );
    } else {
      units.direct += entry.amount;
      batch.directHours.push({ key, units: entry.amount, at: entry.occurredAt });
    }
    if (entry.occurredAt > units.lastAt) units.lastAt = entry.occurredAt;
    batch.counted.set(id, units);
    batch.recorded++;
  });
  return batch;
}

function pendingRow(
  usageEventId: string,
  key: WindowKey,
  entry: UsageEntry,
  contribution: MeterContribution | null,
): PendingEventInsert {
  return {
    id: usageEventId,
    subscriptionId: key.subscriptionId,
    featureKey: key.featureKey,
    periodKey: key.window.key,
    periodStart: key.window.start.toISOString(),
    periodEnd: key.window.end?.toISOString() ?? null,
    amount: entry.amount,
    occurredAt: entry.occurredAt,
    meter: contribution ? storedContribution(contribution) : null,
  };
}
