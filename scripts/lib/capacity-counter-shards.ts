/**
 * Counter shards in the capacity model (scripts/capacity.ts). A tenant's
 * counting is spread over USAGE_COUNTER_SHARDS EntitlementCounter objects
 * (its USAGE_COUNTER_TENANT_SHARDS entry for the busiest tenant):
 *
 * - usage events of log shard s are recorded by counter shard s mod N, so
 *   a counter shard's flush claims events only in its own log shards;
 * - consumes and checks go to a random counter shard, or with an
 *   Idempotency-Key to the one a hash of the key picks: each takes 1/N;
 * - shard 0 owns HARD limits: every other shard with traffic syncs with it
 *   once per flush interval (its counted units, its leases) and asks for a
 *   lease when one runs out (at most once per lease interval per HARD
 *   feature), all on shard 0's thread and request rate;
 * - each counter shard flushes its own units to D1.
 *
 * Tenants paying with prepaid credits, and UNIQUE_COUNT meters and meters
 * with group-by dimensions, are counted by shard 0 alone: the spreading
 * here is that of a tenant without them. Meter state (--distinct-values,
 * --meter-groups) is charged to shard 0, where it would be.
 */
import { counterMeterBytes, windowsKept } from "./capacity-meters.ts";
import {
  busiestRawQueueRate,
  type CapacityInput,
  COSTS,
  DAY,
  flushesPerSecond,
  LIMITS,
  type Tenant,
  type Term,
  tenantEps,
  tenantMessages,
  tenantShards,
  validationBatchesPerSecond,
} from "./capacity-model.ts";

/** code: a tenant has at most this many counter shards (MAX_COUNTER_SHARDS). */
export const MAX_COUNTER_SHARDS = 64;

export const counterShardsOf = (input: CapacityInput, tenant: Tenant) =>
  tenant === "busiest" ? input.hotCounterShards : input.counterShards;

const counterSetting = (tenant: Tenant) =>
  tenant === "busiest" ? "USAGE_COUNTER_TENANT_SHARDS" : "USAGE_COUNTER_SHARDS";

/** Counter shards that record events: past the log's shard count, s mod N never reaches the rest. */
export const recordingShards = (input: CapacityInput, tenant: Tenant) =>
  Math.min(counterShardsOf(input, tenant), tenantShards(input, tenant));

/** Events per second one recording counter shard counts. */
export const counterShardEps = (input: CapacityInput, tenant: Tenant) =>
  tenantEps(input, tenant) / recordingShards(input, tenant);

/** Log shards one recording counter shard serves (claims and finishes in). */
export const servedLogShards = (input: CapacityInput, tenant: Tenant) =>
  Math.ceil(tenantShards(input, tenant) / recordingShards(input, tenant));

/** Consumes, and consumes with checks, per second of one counter shard. */
function callsPerShard(input: CapacityInput, tenant: Tenant): { consumes: number; calls: number } {
  if (tenant !== "busiest") return { consumes: 0, calls: 0 };
  const shards = counterShardsOf(input, tenant);
  return { consumes: input.consumes / shards, calls: (input.consumes + input.checks) / shards };
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * Raw queues one counter shard's log shards send to. Log shard s goes to
 * queue (h + s) mod Q and is recorded by counter shard s mod N, so counter
 * shard c's log shards c, c + N, c + 2N, ... land on Q / gcd(N, Q) queues
 * at most: one when N is a multiple of Q.
 */
export function queuesOfCounterShard(input: CapacityInput, tenant: Tenant): number {
  const queues = Math.max(1, Math.floor(input.rawQueues));
  const cycle = queues / gcd(counterShardsOf(input, tenant), queues);
  return Math.min(servedLogShards(input, tenant), cycle);
}

/**
 * `record` calls per second to one counter shard. The validation stage
 * makes one per batch per counter shard whose events the batch holds: at
 * most one per envelope of its log shards, and at most one per batch of
 * each raw queue those log shards send to (taken at the busiest queue's
 * batch rate).
 */
export function recordCallsPerShard(input: CapacityInput, tenant: Tenant): number {
  const envelopes = tenantMessages(input, tenant) / recordingShards(input, tenant);
  const batches = validationBatchesPerSecond(busiestRawQueueRate(input));
  return Math.min(envelopes, queuesOfCounterShard(input, tenant) * batches);
}

/**
 * Requests per second shard 0 takes from the other counter shards: each
 * one with traffic syncs once per flush interval and asks for a lease at
 * most once per lease interval per HARD feature.
 */
export function shardZeroSyncRequests(input: CapacityInput, tenant: Tenant): number {
  const busy =
    callsPerShard(input, tenant).calls > 0
      ? counterShardsOf(input, tenant)
      : tenantEps(input, tenant) > 0
        ? recordingShards(input, tenant)
        : 0;
  if (busy <= 1) return 0;
  return (busy - 1) * (1 / input.flushSeconds + COSTS.leasedHardFeatures / input.leaseSeconds);
}

/** Shard 0's requests per second: its records, consumes and checks, and the other shards' syncs. */
export function shardZeroRequests(input: CapacityInput, tenant: Tenant): number {
  return (
    recordCallsPerShard(input, tenant) +
    callsPerShard(input, tenant).calls +
    shardZeroSyncRequests(input, tenant)
  );
}

/** The share of shard 0's thread its records, consumes and the other shards' syncs take. */
export function shardZeroWriterUse(input: CapacityInput, tenant: Tenant): number {
  const records =
    counterShardEps(input, tenant) * (COSTS.counterMsPerEvent + COSTS.counterForgetMsPerEvent);
  const requests = callsPerShard(input, tenant).consumes + shardZeroSyncRequests(input, tenant);
  return (records + requests * COSTS.counterMsPerConsume) / 1000;
}

/** Shard 0's remembered event ids, bytes (the other shards hold as many, without the meter state). */
export const counterShardIdsBytes = (input: CapacityInput, tenant: Tenant) =>
  counterShardEps(input, tenant) * DAY * input.counterIdDays * COSTS.counterIdBytes;

/**
 * Subrequests of one flush alarm run of a counter shard: per round, a
 * claim and a finish call to each log shard it serves and its D1 batch;
 * and a shard other than 0 its sync with shard 0.
 */
export function flushAlarmSubrequests(input: CapacityInput, tenant: Tenant): number {
  const rounds = Math.min(
    COSTS.flushMaxRounds,
    Math.ceil((counterShardEps(input, tenant) * input.flushSeconds) / COSTS.flushMaxEvents),
  );
  const perRound = 2 * Math.min(servedLogShards(input, tenant), COSTS.flushMaxEvents) + 1;
  return rounds * perRound + (counterShardsOf(input, tenant) > 1 ? 1 : 0);
}

/**
 * D1 flush rounds per second of a tenant's counter shards: each flushes
 * its events' rounds, and a shard with consumes flushes their units once
 * per interval.
 */
export function tenantFlushesPerSecond(input: CapacityInput, tenant: Tenant): number {
  const recording = recordingShards(input, tenant);
  const direct = Math.min(callsPerShard(input, tenant).consumes, 1 / input.flushSeconds);
  const events = flushesPerSecond(counterShardEps(input, tenant), input);
  return (
    recording * Math.max(events, direct) + (counterShardsOf(input, tenant) - recording) * direct
  );
}

/** Flush rounds per second of every tenant together: one D1 batch each. */
export const allFlushesPerSecond = (input: CapacityInput) =>
  tenantFlushesPerSecond(input, "busiest") +
  Math.max(0, input.tenants - 1) * tenantFlushesPerSecond(input, "average");

const whole = (value: number) => Math.round(value).toLocaleString("en-US");

/** "the busiest tenant's counter", and which of its shards. */
function counterName(input: CapacityInput, tenant: Tenant, shard = "shard 0"): string {
  const shards = counterShardsOf(input, tenant);
  return `the ${tenant} tenant's counter${shards > 1 ? `, ${shard} of ${shards}` : ""}`;
}

function syncNote(input: CapacityInput, tenant: Tenant): string {
  const sync = shardZeroSyncRequests(input, tenant);
  return sync > 0 ? `, ${whole(sync)}/s syncs and leases of the other shards` : "";
}

/** The limits of a tenant's counter shards: shard 0's requests, thread and storage, and a flush alarm's subrequests. */
export function counterTerms(tenant: Tenant): Term[] {
  const more = `more counter shards for the tenant (${counterSetting(tenant)}, or auto)`;
  const terms: Omit<Term, "tenant">[] = [
    {
      limit: (input) =>
        `DO ~1,000 requests/s: ${counterName(input, tenant)} (record calls, at most one per validation batch and counter shard, ${whole(recordCallsPerShard(input, tenant))}/s${callsPerShard(input, tenant).calls > 0 ? `; ${whole(callsPerShard(input, tenant).calls)} consumes and checks/s` : ""}${syncNote(input, tenant)})`,
      use: (input) => shardZeroRequests(input, tenant) / LIMITS.durableObjectRequestsPerSecond,
      next: `${more}; shard 0's syncs grow with the shards: a longer USAGE_COUNTER_LEASE_INTERVAL_MS or USAGE_FLUSH_INTERVAL_MS`,
    },
    {
      limit: (input) =>
        `DO single writer: ${counterName(input, tenant)} (record and forgetting ids at ${whole(counterShardEps(input, tenant))} events/s${callsPerShard(input, tenant).consumes > 0 ? ", consumes" : ""}${syncNote(input, tenant)})`,
      use: (input) => shardZeroWriterUse(input, tenant),
      next: more,
    },
    {
      limit: (input) =>
        `DO storage (10 GB per object): ${counterName(input, tenant)}, event ids remembered ${duration(input.counterIdDays * DAY)}${input.distinctValues + input.meterGroups > 0 ? `, ${whole(input.distinctValues)} distinct values and ${whole(input.meterGroups)} meter groups a window for ${windowsKept(COSTS.meterRetentionDays).toFixed(2)} windows` : ""}`,
      use: (input) =>
        (counterShardIdsBytes(input, tenant) + counterMeterBytes(input)) /
        LIMITS.durableObjectBytes,
      next: `${more}, or remember recorded ids for less (USAGE_COUNTER_ID_RETENTION_SECONDS; the shard's claim refuses a second count whenever a repeat comes); distinct values stay on shard 0: a counter per tenant and feature`,
    },
    {
      limit: (input) =>
        `DO subrequests (10,000 per invocation): one flush alarm of ${counterName(input, tenant, "any shard")} (claim and finish calls to the ${whole(servedLogShards(input, tenant))} log shard${servedLogShards(input, tenant) === 1 ? "" : "s"} it serves, its D1 batch${counterShardsOf(input, tenant) > 1 ? ", its sync with shard 0" : ""})`,
      use: (input) => flushAlarmSubrequests(input, tenant) / LIMITS.subrequestsPerInvocation,
      next: `${more}: each claims only in its own log shards`,
    },
  ];
  return terms.map((term) => ({ ...term, tenant }));
}

/**
 * The fewest counter shards that keep a tenant's counter limits at or
 * below `bound`. Shard 0's syncs grow with the count, so past some count
 * more shards only add to it: when no count reaches the bound, the one
 * with the lowest highest use.
 */
export function autoCounterShards(input: CapacityInput, tenant: Tenant, bound = 0.5): number {
  const terms = counterTerms(tenant);
  const field = tenant === "busiest" ? "hotCounterShards" : "counterShards";
  let best = { shards: 1, use: Number.POSITIVE_INFINITY };
  for (let shards = 1; shards <= MAX_COUNTER_SHARDS; shards++) {
    const trial = { ...input, [field]: shards };
    const use = Math.max(...terms.map((term) => term.use(trial)));
    if (use <= bound) return shards;
    if (use < best.use) best = { shards, use };
  }
  return best.shards;
}

/** A duration in words: seconds, minutes, hours or days. */
export function duration(seconds: number): string {
  const short = (value: number) => String(Number(value.toPrecision(3)));
  if (seconds >= DAY) return `${short(seconds / DAY)} days`;
  if (seconds >= 3_600) return `${short(seconds / 3_600)} h`;
  if (seconds >= 60) return `${short(seconds / 60)} min`;
  return `${short(seconds)} s`;
}
