/**
 * A tenant's usage-log shards (UsageLog objects) in the capacity model
 * (scripts/capacity.ts): what one shard stores, holds in memory, writes
 * and is asked, and the fewest shards that keep those at or below half.
 */
import { counterShardEps } from "./capacity-counter-shards.ts";
import { FILTERED_SECONDS, filterMemoryUse, shardCostFactor } from "./capacity-growth.ts";
import {
  type CapacityInput,
  COSTS,
  DAY,
  flushesPerSecond,
  LIMITS,
  requestsPerSecond,
  shardEps,
  type Tenant,
  type Term,
  tenantMessages,
  tenantShards,
  touchedShards,
} from "./capacity-model.ts";

const shardSetting = (tenant: Tenant) =>
  tenant === "busiest" ? "USAGE_LOG_TENANT_SHARDS" : "USAGE_LOG_SHARDS";

/** Seconds an event stays in its shard's `events` table: through the pipeline, the settle time and until its file is due. */
const hotSeconds = (rate: number, input: CapacityInput) =>
  Math.min(input.fileEvents / Math.max(rate, 1e-9), COSTS.archiveHourSeconds) +
  COSTS.settleSeconds +
  COSTS.pipelineSeconds;

/** Archive files a shard writes per second: full files (of the mean size), or at least the closed hour's. */
export const filesPerSecond = (rate: number, { fileEvents, fileSpread = 0 }: CapacityInput) =>
  Math.max(rate / (fileEvents * (1 - fileSpread / 2)), 1 / COSTS.archiveHourSeconds);

/** The days of ids a shard keeps: the retention window, at least the validation window. */
export const keptDays = (input: CapacityInput) => Math.max(input.retentionDays, COSTS.dedupDays);

/** The archived ids a shard of `tenant` keeps. */
const shardIdsKept = (input: CapacityInput, tenant: Tenant) =>
  shardEps(input, tenant) * DAY * keptDays(input);

/** A shard's cost per event relative to an empty one's, with the ids it keeps (scripts/lib/capacity-growth.ts). */
const shardCost = (input: CapacityInput, tenant: Tenant) =>
  shardCostFactor(shardEps(input, tenant), keptDays(input));

const count = (value: number) =>
  value >= 100 ? Math.round(value).toLocaleString("en-US") : value.toPrecision(3);

/**
 * A shard's requests per second: the ingestion requests that touch it,
 * a validation read per envelope it sent at most, and a claim and a
 * finish per flush round of the one counter shard that records it.
 */
export function shardRequests(input: CapacityInput, tenant: Tenant): number {
  const shards = tenantShards(input, tenant);
  const ingest = requestsPerSecond(input, tenant) * (touchedShards(shards, input.batch) / shards);
  const validation = tenantMessages(input, tenant) / shards;
  const claims = 2 * flushesPerSecond(counterShardEps(input, tenant), input);
  return ingest + validation + claims;
}

/** The limits of one tenant shard: its storage, its memory, its single writer, its request rate. */
export function shardTerms(tenant: Tenant): Term[] {
  const terms: Omit<Term, "tenant">[] = [
    {
      limit: (input) =>
        `DO storage (10 GB per object): a shard of the ${tenant} tenant (hot events, eventIds for ${keptDays(input)} days, file rows)`,
      use: (input) => {
        const rate = shardEps(input, tenant);
        const bytes =
          rate * hotSeconds(rate, input) * COSTS.hotEventBytes +
          shardIdsKept(input, tenant) * input.idBytes +
          filesPerSecond(rate, input) * DAY * input.retentionDays * COSTS.fileRowBytes;
        return bytes / LIMITS.durableObjectBytes;
      },
      next: `more shards (${shardSetting(tenant)}), or a shorter USAGE_RETENTION_DAYS (at least 8)`,
    },
    {
      limit: (input) =>
        `DO memory (128 MB): a shard of the ${tenant} tenant (the filters of the ${count(shardEps(input, tenant) * FILTERED_SECONDS)} ids of its current day)`,
      use: (input) => filterMemoryUse(shardEps(input, tenant) * FILTERED_SECONDS),
      next: `more shards (${shardSetting(tenant)})`,
    },
    {
      limit: (input) =>
        `DO single writer: a shard of the ${tenant} tenant (statements and Parquet encoding, ${shardCost(input, tenant).toFixed(2)}x an empty shard's with its ids of ${keptDays(input)} days)`,
      use: (input) =>
        (shardEps(input, tenant) * COSTS.shardMsPerEvent * shardCost(input, tenant)) / 1000,
      next: `more shards (${shardSetting(tenant)})`,
    },
    {
      limit: () =>
        `DO ~1,000 requests/s: a shard of the ${tenant} tenant (ingestion, validation reads, flush claims)`,
      use: (input) => shardRequests(input, tenant) / LIMITS.durableObjectRequestsPerSecond,
      next: "larger ingestion batches (--batch); shards do not divide the per-request calls",
    },
  ];
  return terms.map((term) => ({ ...term, tenant }));
}

/** The fewest shards that keep a tenant's shard limits at or below `bound` (at most 4,096, the code's bound). */
export function autoShards(
  input: Omit<CapacityInput, "shards" | "hotShards">,
  tenant: Tenant,
  bound = 0.5,
): number {
  const terms = shardTerms(tenant);
  for (let shards = 1; shards <= 4096; shards++) {
    const trial = { ...input, shards, hotShards: shards };
    if (terms.every((term) => term.use(trial) <= bound)) return shards;
  }
  return 4096;
}

/** Archive files per second over all tenants' shards. */
export function archiveFilesPerSecond(input: CapacityInput): number {
  return (
    input.hotShards * filesPerSecond(shardEps(input, "busiest"), input) +
    (input.tenants - 1) * input.shards * filesPerSecond(shardEps(input, "average"), input)
  );
}
