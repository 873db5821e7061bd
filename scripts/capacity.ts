/**
 * `npm run capacity -- --tenants 1000 --eps 1000000`: which Cloudflare limit
 * the usage pipeline reaches first for a number of tenants and a sustained
 * event rate, how close each limit is, and what configuration keeps every
 * one of them at or below half its value. The published limits are
 * Cloudflare's (sources in docs/capacity.md); the per-event costs are this
 * design's, measured (`npm run capacity -- --measure` measures them again
 * with the product's own statements) or fixed by its code.
 *
 * The design's settings are the billing worker's configuration, by the
 * same names: their defaults are wrangler.toml's [vars], and
 * `--set NAME=VALUE` (repeatable) sets one as a deployment would:
 *   USAGE_LOG_SHARDS N | auto          usage-log shards of every tenant; auto:
 *                                      the fewest that keep an average
 *                                      tenant's shards at or below 50%
 *   USAGE_LOG_TENANT_SHARDS N | auto   the busiest tenant's entry (default as
 *                                      USAGE_LOG_SHARDS)
 *   USAGE_RETENTION_DAYS               how long the eventId -> file index
 *                                      (and duplicate guard) is kept
 *   USAGE_FLUSH_INTERVAL_MS            the counters' flush interval
 *   USAGE_FLUSH_IDS_RETENTION_SECONDS  how long usage_flushes rows stay in D1
 *   USAGE_COUNTER_ID_RETENTION_SECONDS how long a counter remembers recorded ids
 *   USAGE_RAW_QUEUES                   usage-raw queues, each tenant's shards spread over them
 *   USAGE_ARCHIVE_FILE_EVENTS          events per archive file (at most)
 *   USAGE_ARCHIVE_FILE_SPREAD          how much smaller a file may be (0-0.9)
 * Other options:
 *   --tenants, --eps         tenants and events/s of the whole platform
 *   --hot-share              the busiest tenant's share of all events
 *                            (default ten times the average, at most 1)
 *   --config FILE            the wrangler.toml whose [vars] are the defaults
 *   --envelope-events        events per queue message (100)
 *   --batch                  events per ingestion request (1000)
 *   --id-bytes               bytes of an eventId's index row (measured: 17.1)
 *   --distinct-values N      distinct values per window the busiest tenant's
 *                            counter keeps over its UNIQUE_COUNT features
 *                            (100000)
 *   --meter-groups N         meter group combinations per tenant window,
 *                            every tenant's (1000; a feature keeps at most
 *                            MAX_GROUP_COMBINATIONS apart)
 *   --measure                measure the costs on this machine and print them
 *                            (with a shard's cost curve from 0 to 10,000,000
 *                            stored ids: a few minutes)
 * Shorthands for settings: --shards, --hot-shards, --retention-days,
 * --flush-interval-ms, --flush-ids-seconds, --counter-id-seconds,
 * --raw-queues, --file-events.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { FILTERED_SECONDS, filterMemoryUse, shardCostFactor } from "./lib/capacity-growth.ts";
import {
  counterMeterBytes,
  d1MeterGroupBytes,
  METER_COSTS,
  meterNotes,
  windowsKept,
} from "./lib/capacity-meters.ts";
import { busiestRawQueueMessages } from "./lib/capacity-queues.ts";
import { readWranglerVars } from "./lib/wrangler-vars.ts";

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
  /** Meter state: distinct values, group rows, their placing (scripts/lib/capacity-meters.ts). */
  ...METER_COSTS,
} as const;

const DAY = 86_400;

export interface CapacityInput {
  tenants: number;
  eps: number;
  hotShare: number;
  retentionDays: number;
  /** Shards of every tenant but the busiest (USAGE_LOG_SHARDS). */
  shards: number;
  /** Shards of the busiest tenant (its USAGE_LOG_TENANT_SHARDS entry). */
  hotShards: number;
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

interface Term {
  limit: (input: CapacityInput) => string;
  use: (input: CapacityInput) => number;
  next: string;
}

const hotEps = (input: CapacityInput) => input.eps * input.hotShare;
const otherTenantEps = (input: CapacityInput) =>
  input.tenants > 1 ? (input.eps - hotEps(input)) / (input.tenants - 1) : 0;
type Tenant = "busiest" | "average";
const tenantEps = (input: CapacityInput, tenant: Tenant) =>
  tenant === "busiest" ? hotEps(input) : otherTenantEps(input);
const tenantShards = (input: CapacityInput, tenant: Tenant) =>
  tenant === "busiest" ? input.hotShards : input.shards;
const shardEps = (input: CapacityInput, tenant: Tenant = "busiest") =>
  tenantEps(input, tenant) / tenantShards(input, tenant);
const shardSetting = (tenant: Tenant) =>
  tenant === "busiest" ? "USAGE_LOG_TENANT_SHARDS" : "USAGE_LOG_SHARDS";
/**
 * The counter flush rounds per second of a tenant at `rate` (one D1 batch
 * each): one per interval while events come, more when an interval holds
 * more than a round takes, never more than one per event.
 */
const flushesPerSecond = (rate: number, input: CapacityInput) =>
  rate <= 0
    ? 0
    : Math.min(
        rate,
        Math.ceil((rate * input.flushSeconds) / COSTS.flushMaxEvents) / input.flushSeconds,
      );
/** Flush rounds per second of every tenant together: one D1 batch each. */
const allFlushesPerSecond = (input: CapacityInput) =>
  flushesPerSecond(hotEps(input), input) +
  (input.tenants - 1) * flushesPerSecond(otherTenantEps(input), input);
/** The busiest counter's remembered event ids, bytes. */
const counterIdsBytes = (input: CapacityInput) =>
  hotEps(input) * DAY * input.counterIdDays * COSTS.counterIdBytes;
/** The share of D1's single writer the flushes and their pruning take. */
const d1WriterUse = (input: CapacityInput) =>
  (allFlushesPerSecond(input) * (COSTS.d1MsPerFlush + COSTS.d1MsPerPrunedFlush)) / 1000;
/** Seconds an event stays in its shard's `events` table: through the pipeline, the settle time and until its file is due. */
const hotSeconds = (rate: number, input: CapacityInput) =>
  Math.min(input.fileEvents / Math.max(rate, 1e-9), COSTS.archiveHourSeconds) +
  COSTS.settleSeconds +
  COSTS.pipelineSeconds;
/** Archive files a shard writes per second: full files (of the mean size), or at least the closed hour's. */
const filesPerSecond = (rate: number, { fileEvents, fileSpread = 0 }: CapacityInput) =>
  Math.max(rate / (fileEvents * (1 - fileSpread / 2)), 1 / COSTS.archiveHourSeconds);
/** Queue messages per ingestion request of a tenant with `shards` shards (each shard sends its part in envelopes). */
const messagesPerRequest = (shards: number, input: CapacityInput) => {
  const touched = Math.min(shards, input.batch);
  return touched * Math.ceil(input.batch / touched / input.envelopeEvents);
};

/** The days of ids a shard keeps: the retention window, at least the validation window. */
const keptDays = (input: CapacityInput) => Math.max(input.retentionDays, COSTS.dedupDays);
/** The archived ids a shard of `tenant` keeps. */
const shardIdsKept = (input: CapacityInput, tenant: Tenant) =>
  shardEps(input, tenant) * DAY * keptDays(input);
/** A shard's cost per event relative to an empty one's, with the ids it keeps (scripts/lib/capacity-growth.ts). */
const shardCost = (input: CapacityInput, tenant: Tenant) =>
  shardCostFactor(shardEps(input, tenant), keptDays(input));

/** The limits of one tenant shard: its storage, its memory, its single writer, its request rate. */
function shardTerms(tenant: Tenant): Term[] {
  return [
    {
      limit: (input) =>
        `DO storage (10 GB per object): a shard of the ${tenant} tenant (hot events, eventIds for ${Math.max(input.retentionDays, COSTS.dedupDays)} days, file rows)`,
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
        `DO memory (128 MB): a shard of the ${tenant} tenant (the filters of the ${format(shardEps(input, tenant) * FILTERED_SECONDS)} ids of its current day)`,
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
      use: (input) => {
        const shards = tenantShards(input, tenant);
        const ingest =
          (tenantEps(input, tenant) / input.batch) * (Math.min(shards, input.batch) / shards);
        const validation = shardEps(input, tenant) / input.envelopeEvents;
        const claims = 2 * flushesPerSecond(tenantEps(input, tenant), input);
        return (ingest + validation + claims) / LIMITS.durableObjectRequestsPerSecond;
      },
      next: "larger ingestion batches (--batch); shards do not divide the per-request calls",
    },
  ];
}

/** Every limit the design's writes and requests count against. */
export const TERMS: Term[] = [
  ...shardTerms("busiest"),
  ...shardTerms("average"),
  {
    limit: () =>
      "DO ~1,000 requests/s: the busiest tenant's counter (one record call per envelope at most)",
    use: (input) => hotEps(input) / input.envelopeEvents / LIMITS.durableObjectRequestsPerSecond,
    next: "fuller envelopes (--envelope-events); then a counter per tenant and feature",
  },
  {
    limit: () => "DO single writer: the busiest tenant's counter (record, and forgetting ids)",
    use: (input) =>
      (hotEps(input) * (COSTS.counterMsPerEvent + COSTS.counterForgetMsPerEvent)) / 1000,
    next: "a counter per tenant and feature",
  },
  {
    limit: (input) =>
      `DO storage (10 GB per object): the busiest tenant's counter, event ids remembered ${duration(input.counterIdDays * DAY)}${input.distinctValues + input.meterGroups > 0 ? `, ${format(input.distinctValues)} distinct values and ${format(input.meterGroups)} meter groups a window for ${windowsKept(COSTS.meterRetentionDays).toFixed(2)} windows` : ""}`,
    use: (input) => (counterIdsBytes(input) + counterMeterBytes(input)) / LIMITS.durableObjectBytes,
    next: "remember recorded ids for less (USAGE_COUNTER_ID_RETENTION_SECONDS; the shard's claim refuses a second count whenever a repeat comes); for distinct values, a counter per tenant and feature",
  },
  {
    limit: (input) =>
      `D1 database size (10 GB): usage_flushes rows kept ${input.flushIdsHours >= input.retentionDays * 24 ? `for good (${input.retentionDays}-day horizon)` : duration(input.flushIdsHours * 3_600)} (and each tenant's latest)${input.meterGroups > 0 ? `, usage_meter_groups rows of ${format(input.meterGroups)} groups a tenant window over ${input.retentionDays} days` : ""}`,
    use: (input) => {
      const seconds = Math.min(input.flushIdsHours * 3_600, input.retentionDays * DAY);
      const flushRows = allFlushesPerSecond(input) * seconds + input.tenants;
      return (
        (flushRows * COSTS.d1FlushRowBytes + d1MeterGroupBytes(input)) / LIMITS.d1DatabaseBytes
      );
    },
    next: "keep usage_flushes rows for less (USAGE_FLUSH_IDS_RETENTION_SECONDS); usage_meter_groups rows stay for good: fewer groups a window, or older windows' rows moved out of D1",
  },
  {
    limit: () =>
      "D1 single writer: counter flushes (one batch per tenant per flush round) and their pruning",
    use: d1WriterUse,
    next: "a longer flush interval (USAGE_FLUSH_INTERVAL_MS; 202 -> AGGREGATED grows by as much)",
  },
  {
    limit: (input) =>
      input.rawQueues === 1
        ? "Queues: 5,000 messages/s per queue (usage-raw)"
        : "Queues: 5,000 messages/s per queue (the busiest usage-raw queue: its share of the busiest tenant's shards, with its hash share of the others')",
    use: (input) => {
      const requests = (rate: number) => rate / input.batch;
      const busiest = busiestRawQueueMessages({
        queues: input.rawQueues,
        hotMessages: requests(hotEps(input)) * messagesPerRequest(input.hotShards, input),
        hotShards: input.hotShards,
        otherMessages:
          requests(input.eps - hotEps(input)) * messagesPerRequest(input.shards, input),
        otherTenants: input.tenants - 1,
        otherShards: input.shards,
      });
      return busiest / LIMITS.queueMessagesPerSecond;
    },
    next: "more raw queues (USAGE_RAW_QUEUES), or fuller envelopes (--envelope-events; 128 KB holds about 400)",
  },
  {
    limit: () => "Queues: 250 concurrent consumer invocations (validation)",
    use: (input) =>
      ((input.eps / COSTS.validationBatchEvents) * COSTS.validationBatchSeconds) /
      (LIMITS.queueConsumerConcurrency * input.rawQueues),
    next: "more raw queues (USAGE_RAW_QUEUES), each with its own consumers",
  },
  {
    limit: () => "DO CPU per invocation (30 s): one archive alarm run of the busiest shard",
    use: (input) => {
      const files = Math.min(
        COSTS.archiveFilesPerRun,
        Math.max(
          1,
          Math.ceil(
            (Math.max(shardEps(input, "busiest"), shardEps(input, "average")) *
              COSTS.settleSeconds) /
              input.fileEvents,
          ),
        ),
      );
      return (files * input.fileEvents * COSTS.archiveMsPerEvent) / LIMITS.cpuMsPerInvocation;
    },
    next: "smaller files (--file-events) or fewer files per alarm run",
  },
  {
    limit: () => "Worker subrequests (10,000 per invocation): one ingestion request's shard calls",
    use: (input) =>
      Math.min(Math.max(input.shards, input.hotShards), input.batch) /
      LIMITS.subrequestsPerInvocation,
    next: "fewer shards per tenant (smaller index rows)",
  },
  {
    limit: () =>
      "DO subrequests (10,000 per invocation): one counter flush alarm's claim and finish calls to the shards",
    use: (input) => {
      const rounds = Math.min(
        COSTS.flushMaxRounds,
        Math.ceil((hotEps(input) * input.flushSeconds) / COSTS.flushMaxEvents),
      );
      const shardsPerRound = Math.min(input.hotShards, COSTS.flushMaxEvents);
      return (rounds * 2 * shardsPerRound) / LIMITS.subrequestsPerInvocation;
    },
    next: "a shorter flush interval for the tenant, or fewer shards (smaller index rows)",
  },
  {
    limit: () => "Worker CPU (30 s per invocation): one ingestion request",
    use: (input) => (input.batch * COSTS.ingestionMsPerEvent) / LIMITS.cpuMsPerInvocation,
    next: "smaller batches (the API takes at most 1,000 events per request)",
  },
  {
    limit: () => "R2: 1 write/s per key (archive files)",
    use: () => 0,
    next: "never binds: every file has its own key (shard and first event id)",
  },
];

function bisectMaxEps(term: Term, input: CapacityInput): number {
  const useAt = (eps: number) => term.use({ ...input, eps });
  if (useAt(1e12) < 1) return Number.POSITIVE_INFINITY;
  let low = 0;
  let high = 1e12;
  for (let step = 0; step < 200 && high - low > Math.max(1e-6, low * 1e-6); step++) {
    const middle = (low + high) / 2;
    if (useAt(middle) >= 1) high = middle;
    else low = middle;
  }
  return low;
}

export function capacityRows(input: CapacityInput): CapacityRow[] {
  return TERMS.map((term) => ({
    limit: term.limit(input),
    use: term.use(input),
    maxEps: bisectMaxEps(term, input),
    next: term.next,
  })).sort((a, b) => b.use - a.use || a.maxEps - b.maxEps);
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

/** Usage logs' and counters' storage over all tenants, bytes. */
export function totalDurableObjectBytes(input: CapacityInput): number {
  const ids = input.eps * DAY * Math.max(input.retentionDays, COSTS.dedupDays) * input.idBytes;
  const counters = input.eps * DAY * input.counterIdDays * COSTS.counterIdBytes;
  const files = archiveFilesPerSecond(input) * DAY * input.retentionDays * COSTS.fileRowBytes;
  // Every tenant's counter taken at the busiest's meter state: an upper bound.
  return ids + counters + files + input.tenants * counterMeterBytes(input);
}

/** D1 statements per event: each flush round is one batch of a statement per window, one for their hours and one for the flush id. */
export function d1StatementsPerEvent(input: CapacityInput): number {
  return (allFlushesPerSecond(input) * (COSTS.windowsPerFlush + 2)) / input.eps;
}

function format(value: number): string {
  if (!Number.isFinite(value)) return "-";
  if (value >= 100) return Math.round(value).toLocaleString("en-US");
  return value.toPrecision(3);
}

function percent(use: number): string {
  if (use <= 0) return "-";
  return `${(use * 100).toFixed(use < 0.01 ? 3 : 1)}%`;
}

/** A duration in words: seconds, minutes, hours or days. */
function duration(seconds: number): string {
  const short = (value: number) => String(Number(value.toPrecision(3)));
  if (seconds >= DAY) return `${short(seconds / DAY)} days`;
  if (seconds >= 3_600) return `${short(seconds / 3_600)} h`;
  if (seconds >= 60) return `${short(seconds / 60)} min`;
  return `${short(seconds)} s`;
}

/** The billing worker's settings the model reads, by their configuration names. */
export const SETTINGS = [
  "USAGE_LOG_SHARDS",
  "USAGE_LOG_TENANT_SHARDS",
  "USAGE_RETENTION_DAYS",
  "USAGE_FLUSH_INTERVAL_MS",
  "USAGE_FLUSH_IDS_RETENTION_SECONDS",
  "USAGE_COUNTER_ID_RETENTION_SECONDS",
  "USAGE_RAW_QUEUES",
  "USAGE_ARCHIVE_FILE_EVENTS",
  "USAGE_ARCHIVE_FILE_SPREAD",
] as const;
export type Setting = (typeof SETTINGS)[number];

/** Shorthand options for settings. */
const SHORTHANDS: Record<string, Setting> = {
  shards: "USAGE_LOG_SHARDS",
  "hot-shards": "USAGE_LOG_TENANT_SHARDS",
  "retention-days": "USAGE_RETENTION_DAYS",
  "flush-interval-ms": "USAGE_FLUSH_INTERVAL_MS",
  "flush-ids-seconds": "USAGE_FLUSH_IDS_RETENTION_SECONDS",
  "counter-id-seconds": "USAGE_COUNTER_ID_RETENTION_SECONDS",
  "raw-queues": "USAGE_RAW_QUEUES",
  "file-events": "USAGE_ARCHIVE_FILE_EVENTS",
  "file-spread": "USAGE_ARCHIVE_FILE_SPREAD",
};

const ROOT_CONFIG = path.join(import.meta.dirname, "../wrangler.toml");

/** The settings: wrangler.toml's [vars], then the shorthands, then each --set. */
function readSettings(
  text: (name: string) => string | undefined,
  assignments: string[],
): Record<Setting, string> {
  const vars = readWranglerVars(text("config") ?? ROOT_CONFIG);
  const settings = Object.fromEntries(SETTINGS.map((name) => [name, vars[name] ?? ""])) as Record<
    Setting,
    string
  >;
  // The busiest tenant's entry is a count here; an empty map means "as USAGE_LOG_SHARDS".
  if (settings.USAGE_LOG_TENANT_SHARDS.trim().startsWith("{"))
    settings.USAGE_LOG_TENANT_SHARDS = "";
  for (const [flag, name] of Object.entries(SHORTHANDS)) {
    const value = text(flag);
    if (value !== undefined) settings[name] = value;
  }
  for (const assignment of assignments) {
    const [name, ...rest] = assignment.split("=");
    if (!name || !(SETTINGS as readonly string[]).includes(name) || rest.length === 0) {
      throw new Error(`--set takes NAME=VALUE with NAME one of ${SETTINGS.join(", ")}`);
    }
    settings[name as Setting] = rest.join("=");
  }
  return settings;
}

function number(name: string, value: string | undefined): number {
  const parsed = Number(value);
  if (value === undefined || value === "" || !Number.isFinite(parsed) || parsed <= 0) {
    throw new Error(`${name} must be a positive number`);
  }
  return parsed;
}

/** A count that may be zero (a tenant without UNIQUE_COUNT features or groupBy). */
function atLeastZero(name: string, value: string | undefined): number {
  const parsed = Number(value);
  if (value === undefined || value === "" || !Number.isFinite(parsed) || parsed < 0) {
    throw new Error(`${name} must be zero or a positive number`);
  }
  return Math.floor(parsed);
}

export function parseInput(argv: string[]): {
  input: CapacityInput;
  settings: Record<Setting, string>;
  measure: boolean;
} {
  const { values } = parseArgs({
    args: argv,
    options: {
      tenants: { type: "string", default: "1000" },
      eps: { type: "string", default: "1000" },
      "hot-share": { type: "string" },
      config: { type: "string" },
      set: { type: "string", multiple: true },
      ...Object.fromEntries(Object.keys(SHORTHANDS).map((name) => [name, { type: "string" }])),
      "envelope-events": { type: "string", default: "100" },
      batch: { type: "string", default: "1000" },
      "id-bytes": { type: "string" },
      "distinct-values": { type: "string", default: "100000" },
      "meter-groups": { type: "string", default: "1000" },
      measure: { type: "boolean", default: false },
    },
  }) as { values: Record<string, string | string[] | boolean | undefined> };
  const text = (name: string) => values[name] as string | undefined;
  const settings = readSettings(text, (values.set as string[] | undefined) ?? []);
  const tenants = Math.floor(number("--tenants", text("tenants")));
  const retentionDays = number("USAGE_RETENTION_DAYS", settings.USAGE_RETENTION_DAYS);
  const hotShare =
    text("hot-share") === undefined
      ? Math.min(1, 10 / tenants)
      : number("--hot-share", text("hot-share"));
  if (hotShare > 1) throw new Error("--hot-share must be at most 1");
  const base = {
    idBytes:
      text("id-bytes") === undefined ? COSTS.eventIdBytes : number("--id-bytes", text("id-bytes")),
    tenants,
    eps: number("--eps", text("eps")),
    hotShare,
    retentionDays,
    flushSeconds: number("USAGE_FLUSH_INTERVAL_MS", settings.USAGE_FLUSH_INTERVAL_MS) / 1000,
    flushIdsHours:
      number("USAGE_FLUSH_IDS_RETENTION_SECONDS", settings.USAGE_FLUSH_IDS_RETENTION_SECONDS) /
      3_600,
    counterIdDays:
      number("USAGE_COUNTER_ID_RETENTION_SECONDS", settings.USAGE_COUNTER_ID_RETENTION_SECONDS) /
      DAY,
    rawQueues: Math.floor(number("USAGE_RAW_QUEUES", settings.USAGE_RAW_QUEUES)),
    envelopeEvents: Math.floor(number("--envelope-events", text("envelope-events"))),
    batch: Math.floor(number("--batch", text("batch"))),
    fileEvents: Math.floor(number("USAGE_ARCHIVE_FILE_EVENTS", settings.USAGE_ARCHIVE_FILE_EVENTS)),
    fileSpread: Math.min(
      0.9,
      number("USAGE_ARCHIVE_FILE_SPREAD", settings.USAGE_ARCHIVE_FILE_SPREAD),
    ),
    distinctValues: atLeastZero("--distinct-values", text("distinct-values")),
    meterGroups: atLeastZero("--meter-groups", text("meter-groups")),
  };
  const count = (name: string, value: string | undefined, tenant: Tenant) =>
    value === "auto" ? autoShards(base, tenant) : Math.min(4096, Math.floor(number(name, value)));
  const shards = count("USAGE_LOG_SHARDS", settings.USAGE_LOG_SHARDS, "average");
  const hotShards = count(
    "USAGE_LOG_TENANT_SHARDS",
    settings.USAGE_LOG_TENANT_SHARDS || settings.USAGE_LOG_SHARDS,
    "busiest",
  );
  return {
    input: { ...base, shards, hotShards },
    settings: {
      ...settings,
      USAGE_LOG_SHARDS: String(shards),
      USAGE_LOG_TENANT_SHARDS: String(hotShards),
    },
    measure: (values.measure as boolean | undefined) ?? false,
  };
}

/** The input as the billing worker's configuration (wrangler.toml [vars]). */
export function configurationOf(input: CapacityInput): Record<Setting, string> {
  return {
    USAGE_LOG_SHARDS: String(input.shards),
    USAGE_LOG_TENANT_SHARDS: `{"<busiest tenant>": ${input.hotShards}}`,
    USAGE_RETENTION_DAYS: String(input.retentionDays),
    USAGE_FLUSH_INTERVAL_MS: String(Math.round(input.flushSeconds * 1000)),
    USAGE_FLUSH_IDS_RETENTION_SECONDS: String(Math.round(input.flushIdsHours * 3_600)),
    USAGE_COUNTER_ID_RETENTION_SECONDS: String(Math.round(input.counterIdDays * DAY)),
    USAGE_RAW_QUEUES: String(input.rawQueues),
    USAGE_ARCHIVE_FILE_EVENTS: String(input.fileEvents),
    USAGE_ARCHIVE_FILE_SPREAD: String(input.fileSpread ?? 0),
  };
}

export function report(input: CapacityInput): string {
  const rows = capacityRows(input);
  const over = rows.filter((row) => row.use > 0.5);
  const first = [...rows].sort((a, b) => a.maxEps - b.maxEps)[0];
  return (
    `Usage pipeline capacity: ${input.tenants} tenants, ${format(input.eps)} events/s, busiest tenant ${(input.hotShare * 100).toFixed(1)}% (${format(hotEps(input))} events/s over ${input.hotShards} shard${input.hotShards === 1 ? "" : "s"}, ${format(shardEps(input, "busiest"))} each; the others ${format(otherTenantEps(input))} events/s over ${input.shards}), retention ${input.retentionDays} days\n` +
    `Configuration (the billing worker's vars): ${Object.entries(configurationOf(input))
      .map(([name, value]) => `${name}=${value}`)
      .join(" ")}\n` +
    `Model inputs: --id-bytes ${input.idBytes} --envelope-events ${input.envelopeEvents} --batch ${input.batch} --distinct-values ${input.distinctValues} --meter-groups ${input.meterGroups}\n\n` +
    "| limit | use at this rate | binds at (events/s) | above 50%: next step |\n|---|---|---|---|\n" +
    rows
      .map(
        (row) =>
          `| ${row.limit} | ${percent(row.use)}${row.use >= 1 ? " **over**" : row.use > 0.5 ? " **above half**" : ""} | ${format(row.maxEps)} | ${row.use > 0.5 ? row.next : ""} |`,
      )
      .join("\n") +
    `\n\nD1 statements per event: ${d1StatementsPerEvent(input).toPrecision(2)} (counter flushes only; no D1 write per event).\n` +
    `Archive files written: ${format(archiveFilesPerSecond(input))} per second (R2 Class A writes), each under its own key.\n` +
    `Durable Object storage, all tenants: ${format(totalDurableObjectBytes(input) / 1e12)} TB (usage logs and counters).\n` +
    meterNotes(input, {
      durableObjectBytes: LIMITS.durableObjectBytes,
      counterIdBytes: counterIdsBytes(input),
      hotEps: hotEps(input),
      counterMsPerEvent: COSTS.counterMsPerEvent + COSTS.counterForgetMsPerEvent,
      d1FlushesPerSecond: allFlushesPerSecond(input),
      d1WriterUse: d1WriterUse(input),
    }) +
    `First limit reached: ${first?.limit} at about ${format(first?.maxEps ?? 0)} events/s.\n` +
    (over.length === 0
      ? "Every limit is at or below 50% of its value.\n"
      : `${over.length} limit${over.length === 1 ? " is" : "s are"} above 50% of ${over.length === 1 ? "its" : "their"} value: see the next step in each row.\n`)
  );
}

async function main(): Promise<void> {
  const { input, measure } = parseInput(process.argv.slice(2));
  if (measure) {
    const { measureUsageLog } = await import("./lib/capacity-measure.ts");
    const { measureMeters } = await import("./lib/capacity-measure-meters.ts");
    const { measurePastDays, measureShardGrowth } = await import(
      "./lib/capacity-measure-growth.ts"
    );
    const measured = {
      ...(await measureUsageLog({ events: 100_000 })),
      meters: await measureMeters(),
      shardGrowth: await measureShardGrowth(),
      pastDays: await measurePastDays(),
    };
    process.stdout.write(`${JSON.stringify(measured, null, 2)}\n`);
    return;
  }
  process.stdout.write(report(input));
}

if (import.meta.main) await main();
