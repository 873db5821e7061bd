/**
 * The capacity model's ground (scripts/capacity.ts): Cloudflare's published
 * limits, this design's costs, the model's input and the rates every limit
 * is computed from: a tenant's events, its usage-log shards, the queue
 * messages its ingestion requests become, its counter's flush rounds.
 */

import { METER_COSTS } from "./capacity-meters.ts";
import { busiestRawQueueMessages } from "./capacity-queues.ts";

export const DAY = 86_400;

/** Cloudflare's published limits (Workers Paid), see docs/capacity.md for sources. */
export const LIMITS = {
  d1DatabaseBytes: 10e9,
  queueMessagesPerSecond: 5_000,
  queueConsumerConcurrency: 250,
  durableObjectRequestsPerSecond: 1_000,
  durableObjectBytes: 10e9,
  /** CPU time per invocation (a request, or one alarm run), default. */
  cpuMsPerInvocation: 30_000,
  /** Subrequests (Durable Object calls included) per invocation, Workers Paid. */
  subrequestsPerInvocation: 10_000,
  r2WritesPerKeyPerSecond: 1,
} as const;

/**
 * This design's costs. `measured`: `npm run capacity -- --measure`
 * (scripts/lib/capacity-measure.ts: the product's statements on
 * node:sqlite, bytes from dbstat, CPU time on the 2-core machine);
 * `code`: a constant of the code; `bench`: the local stack's stage timers.
 * Times are process CPU time, so other load on the machine does not inflate
 * them.
 */
export const COSTS = {
  /** measured: a hot event's row in its shard (`events`, AGGREGATED, every column set, WITHOUT ROWID). */
  hotEventBytes: 406,
  /** measured: an archived eventId's row in its past day's merged table (8-byte hash, file number and 4-byte check: duplicate guard and id -> file index): 22.9. */
  eventIdBytes: 23,
  /** measured: one archive file's row in `files` (kept for the retention window). */
  fileRowBytes: 444,
  /** measured: a counter's remembered event id (`recorded_events`). */
  counterIdBytes: 103,
  /** measured: the counter's sweep forgetting an id (rowid range), per event: 0.0010 to 0.0011 ms. */
  counterForgetMsPerEvent: 0.0012,
  /** measured: one flush's `usage_flushes` row in D1 with its index (two windows in its ledger). */
  d1FlushRowBytes: 508,
  /**
   * measured: a shard's CPU time per event, storage statements and Parquet
   * encoding together (insert with outbox 0.022, send 0.003, validation read
   * 0.007, claim 0.017, finish 0.006, archive statements 0.022, encoding
   * 0.041 ms): the highest of three runs (0.083 to 0.115), rounded up.
   */
  shardMsPerEvent: 0.12,
  /** measured: archive writing (statements and encoding) per event, part of the above. */
  archiveMsPerEvent: 0.07,
  /** measured: one flush's D1 batch (two window increments, the hours and the flush row), SQLite CPU time (0.24 to 0.42). */
  d1MsPerFlush: 0.43,
  /** measured: the Cron Trigger's prune of one usage_flushes row, SQLite CPU time (0.0026 to 0.0055). */
  d1MsPerPrunedFlush: 0.006,
  /** measured: the ingestion Worker's CPU per event (body parsed, events judged, split by shard, serialised). */
  ingestionMsPerEvent: 0.009,
  /** bench: a counter's time per event in `record` (stage timers; the flush now waits on the shards' RPC, not on D1 rows). */
  counterMsPerEvent: 0.03,
  /** code: events per counter flush round (FLUSH_MAX_EVENTS); one D1 batch each. */
  flushMaxEvents: 5_000,
  /** code: flush rounds one counter alarm runs at most (FLUSH_MAX_ROUNDS). */
  flushMaxRounds: 20,
  /** code: archive files one alarm run writes at most. */
  archiveFilesPerRun: 20,
  /** code: a finished event stays hot this long before it may be archived (ARCHIVE_SETTLE_MS). */
  settleSeconds: 60,
  /** code: a shard archives a closed hour's events even when fewer than a file's worth. */
  archiveHourSeconds: 3_600,
  /** target: accepted to AGGREGATED, the p99 bound; an event is hot at least this long. */
  pipelineSeconds: 2,
  /** code: the 7-day validation window; duplicate ids are refused at least this long. */
  dedupDays: 7,
  /** bench: validation's wall time per 1,000-event batch (consumer concurrency). */
  validationBatchEvents: 1_000,
  validationBatchSeconds: 0.07,
  /** code: the windows a tenant's flush touches (a subscription with two metered features). */
  windowsPerFlush: 2,
  /**
   * estimate, not measured: a consume's synchronous step writes its
   * window's counters row and its hour, as recording one event does (0.03
   * ms above), and decides on the limit; the model takes 0.05 ms. A counter
   * shard's sync with shard 0 and a lease request are taken at the same cost.
   */
  counterMsPerConsume: 0.05,
  /** code: usage-raw's consumer takes batches of at most this many messages (max_batch_size). */
  validationBatchMessages: 100,
  /** code: and waits at most this long to fill one (max_batch_timeout). */
  validationBatchTimeoutSeconds: 0.05,
  /** model: HARD features a counter shard holds quota leases for. */
  leasedHardFeatures: 1,
  /** Meter state: distinct values, group rows, their placing (scripts/lib/capacity-meters.ts). */
  ...METER_COSTS,
} as const;

export interface CapacityInput {
  tenants: number;
  eps: number;
  hotShare: number;
  retentionDays: number;
  /** Shards of every tenant but the busiest (USAGE_LOG_SHARDS). */
  shards: number;
  /** Shards of the busiest tenant (its USAGE_LOG_TENANT_SHARDS entry). */
  hotShards: number;
  /** Counter shards of every tenant but the busiest (USAGE_COUNTER_SHARDS). */
  counterShards: number;
  /** Counter shards of the busiest tenant (its USAGE_COUNTER_TENANT_SHARDS entry). */
  hotCounterShards: number;
  /** How often a counter shard other than shard 0 asks shard 0 for a lease, at most (USAGE_COUNTER_LEASE_INTERVAL_MS). */
  leaseSeconds: number;
  /** The busiest tenant's consumes per second (without an Idempotency-Key). */
  consumes: number;
  /** The busiest tenant's entitlement checks per second. */
  checks: number;
  flushSeconds: number;
  /** How long usage_flushes rows stay in D1, hours. */
  flushIdsHours: number;
  counterIdDays: number;
  rawQueues: number;
  envelopeEvents: number;
  batch: number;
  fileEvents: number;
  /** Files hold fileEvents x (1 - fileSpread/2) on average (0 when not given). */
  fileSpread?: number;
  /** Bytes of an eventId's row in the duplicate guard and id -> file index. */
  idBytes: number;
  /** Distinct values per window in the busiest tenant's counter (its UNIQUE_COUNT features). */
  distinctValues: number;
  /** Meter group combinations per tenant window. */
  meterGroups: number;
}

export interface CapacityRow {
  limit: string;
  /** Use of the limit at the input rate (1 = at the limit). */
  use: number;
  /** The platform event rate at which this limit binds, for the same mix and configuration. */
  maxEps: number;
  /** What to change when it is above half, and the setting that does it. */
  next: string;
}

export type Tenant = "busiest" | "average";

export interface Term {
  limit: (input: CapacityInput) => string;
  use: (input: CapacityInput) => number;
  next: string;
  /** The tenant whose object the limit is of: a one-tenant deployment has no average tenant. */
  tenant?: Tenant;
}

export const hotEps = (input: CapacityInput) => input.eps * input.hotShare;
export const otherTenantEps = (input: CapacityInput) =>
  input.tenants > 1 ? (input.eps - hotEps(input)) / (input.tenants - 1) : 0;
export const tenantEps = (input: CapacityInput, tenant: Tenant) =>
  tenant === "busiest" ? hotEps(input) : otherTenantEps(input);
export const tenantShards = (input: CapacityInput, tenant: Tenant) =>
  tenant === "busiest" ? input.hotShards : input.shards;
export const shardEps = (input: CapacityInput, tenant: Tenant = "busiest") =>
  tenantEps(input, tenant) / tenantShards(input, tenant);

/**
 * The counter flush rounds per second of one counter (shard) at `rate`
 * events/s (one D1 batch each): one per interval while events come, more
 * when an interval holds more than a round takes, never more than one per
 * event.
 */
export const flushesPerSecond = (rate: number, input: CapacityInput) =>
  rate <= 0
    ? 0
    : Math.min(
        rate,
        Math.ceil((rate * input.flushSeconds) / COSTS.flushMaxEvents) / input.flushSeconds,
      );

/**
 * The shards one ingestion request of `batch` events touches, on average:
 * each event goes to the shard of its eventId's hash, so `shards` shards
 * see S (1 - (1 - 1/S)^batch) of them, not all when they are many.
 */
export function touchedShards(shards: number, batch: number): number {
  if (shards <= 1) return 1;
  return shards * (1 - (1 - 1 / shards) ** batch);
}

/**
 * Queue messages per ingestion request of a tenant with `shards` shards.
 * Each shard sends its part of the request right after storing it, in
 * envelopes of at most --envelope-events: the more shards, the more and
 * the smaller the envelopes (a request spread over 700 shards sends 700
 * envelopes of one or two events). A fuller envelope cap does not merge
 * them; only fewer shards per request do.
 */
export function messagesPerRequest(shards: number, input: CapacityInput): number {
  const touched = touchedShards(shards, input.batch);
  return touched * Math.ceil(input.batch / touched / input.envelopeEvents);
}

/** A tenant's ingestion requests per second. */
export const requestsPerSecond = (input: CapacityInput, tenant: Tenant) =>
  tenantEps(input, tenant) / input.batch;

/** A tenant's usage-raw messages per second. */
export const tenantMessages = (input: CapacityInput, tenant: Tenant) =>
  requestsPerSecond(input, tenant) * messagesPerRequest(tenantShards(input, tenant), input);

/** Messages per second on the busiest usage-raw queue. */
export function busiestRawQueueRate(input: CapacityInput): number {
  return busiestRawQueueMessages({
    queues: input.rawQueues,
    hotMessages: tenantMessages(input, "busiest"),
    hotShards: input.hotShards,
    otherMessages: tenantMessages(input, "average") * Math.max(0, input.tenants - 1),
    otherTenants: input.tenants - 1,
    otherShards: input.shards,
  });
}

/**
 * Validation batches per second a raw queue at `messages`/s delivers: a
 * batch closes when full or when its wait runs out, whichever is first.
 */
export function validationBatchesPerSecond(messages: number): number {
  if (messages <= 0) return 0;
  return Math.max(
    messages / COSTS.validationBatchMessages,
    Math.min(messages, 1 / COSTS.validationBatchTimeoutSeconds),
  );
}
