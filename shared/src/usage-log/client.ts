/*
 * The usage log's addressing and RPC surface, shared by the billing worker
 * (which owns the UsageLog Durable Object: workers/billing/src/usage/log/)
 * and the usage-consumer worker (whose stages read and move event statuses
 * through it, with a `script_name = "billing"` binding).
 *
 * A tenant's events live in one object per shard. The shard of a client
 * eventId is a stable hash of it modulo the tenant's shard count, so a
 * resent event always reaches the object that holds its first copy. Our own
 * id for an event (a UUID v7 minted at ingestion) ends in the shard number
 * (last four hex digits), so anything that names an event by that id (queue
 * messages, the counter's flush claims) reaches the same object without
 * knowing the shard count, even after the count changed.
 */

import type { EventProperties } from "../billing/meter.ts";

export type UsageLogStatus = "PENDING" | "VALIDATED" | "AGGREGATED" | "REJECTED";

/** Shards per tenant are at most this many (the id keeps four hex digits for them). */
export const MAX_USAGE_LOG_SHARDS = 4096;

/** FNV-1a (32 bits, unsigned) of a text: stable across releases and runtimes. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** The shard of a client eventId among `shards`. */
export function shardOfEventId(eventId: string, shards: number): number {
  const count = Math.max(1, Math.min(MAX_USAGE_LOG_SHARDS, Math.floor(shards)));
  return fnv1a(eventId) % count;
}

/** Our id with the shard written into its last four hex digits. */
export function withShard(id: string, shard: number): string {
  return `${id.slice(0, -4)}${shard.toString(16).padStart(4, "0")}`;
}

/** The shard an id of ours names (see withShard). */
export function shardOfId(id: string): number {
  const shard = Number.parseInt(id.slice(-4), 16);
  return Number.isFinite(shard) ? shard : 0;
}

/** The object of one tenant shard. */
export function usageLogName(tenantId: string, shard: number): string {
  return `${tenantId}/${shard}`;
}

/** What validation needs of a stored event. */
export interface UsageLogRow {
  id: string;
  tenantId: string;
  eventId: string;
  feature: string;
  amount: number;
  timestamp: string;
  receivedAt: string;
  status: UsageLogStatus;
  subscriptionId: string | null;
  periodKey: string | null;
  periodStart: string | null;
  periodEnd: string | null;
  validatedAt: string | null;
  /** What meters read; absent (a log of an earlier release) stands for none. */
  properties?: EventProperties;
}

export interface ValidatedUpdate {
  id: string;
  subscriptionId: string;
  periodKey: string;
  periodStart: string;
  periodEnd: string | null;
}

export interface RejectedUpdate {
  id: string;
  code: string;
  reason: string;
}

/** An event a counter flush takes, in the window the counter counted it in. */
export interface FlushClaim {
  id: string;
  subscriptionId: string;
  featureLookupKey: string;
  periodKey: string;
  periodStart: string;
  periodEnd: string | null;
}

export interface ClaimOutcome {
  /** Taken by this flush (now or by an earlier attempt of it), with their units. */
  claimed: {
    id: string;
    amount: number;
    subscriptionId: string;
    periodKey: string;
    /** When the usage happened (ISO-8601 UTC): its hour in usage_hourly. */
    timestamp: string;
  }[];
  /** Not in this object (moved in from D1 later, or never stored here). */
  missing: string[];
}

/** The RPC methods the usage-consumer stages call. */
export interface UsageLogRpc {
  rows(ids: string[]): UsageLogRow[];
  markValidated(updates: ValidatedUpdate[], at: string): number;
  markRejected(updates: RejectedUpdate[], at: string): number;
}

type Remote<T> = {
  [Method in keyof T]: T[Method] extends (...args: infer A) => infer R
    ? (...args: A) => Promise<Awaited<R>>
    : never;
};

/** The object holding the event with our id `id`. */
export function usageLogOfId<T extends Rpc.DurableObjectBranded | undefined>(
  namespace: DurableObjectNamespace<T>,
  tenantId: string,
  id: string,
): Remote<UsageLogRpc> {
  return namespace.get(
    namespace.idFromName(usageLogName(tenantId, shardOfId(id))),
  ) as unknown as Remote<UsageLogRpc>;
}

/** Groups items by the object (tenant, shard of their id) that holds them. */
export function byUsageLogObject<T>(
  items: T[],
  keyOf: (item: T) => { tenantId: string; id: string },
): Map<string, { tenantId: string; id: string; items: T[] }> {
  const groups = new Map<string, { tenantId: string; id: string; items: T[] }>();
  for (const item of items) {
    const { tenantId, id } = keyOf(item);
    const name = usageLogName(tenantId, shardOfId(id));
    const group = groups.get(name) ?? { tenantId, id, items: [] };
    group.items.push(item);
    groups.set(name, group);
  }
  return groups;
}
