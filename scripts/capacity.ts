/**
 * `npm run capacity -- --tenants 1000 --eps 1000000`: which Cloudflare limit
 * the usage pipeline reaches first for a number of tenants and a sustained
 * event rate, how close each limit is, and what configuration keeps every
 * one of them at or below half its value. The published limits are
 * Cloudflare's (sources in docs/capacity.md); the per-event costs are this
 * design's, measured (`npm run capacity -- --measure` measures them again
 * with the product's own statements) or fixed by its code.
 *
 * Options (defaults are what the code does today):
 *   --tenants, --eps         tenants and events/s of the whole platform
 *   --hot-share              the busiest tenant's share of all events
 *                            (default ten times the average, at most 1)
 *   --retention-days         USAGE_RETENTION_DAYS (35): how long the
 *                            eventId -> file index (and duplicate guard) is kept
 *   --shards N | auto        usage-log shards of every tenant
 *                            (USAGE_LOG_SHARDS); auto: the fewest that keep
 *                            an average tenant's shards at or below 50%
 *   --hot-shards N | auto    the busiest tenant's (USAGE_LOG_TENANT_SHARDS);
 *                            default as --shards
 *   --flush-seconds          the counters' flush interval (0.2)
 *   --flush-ids-hours        how long usage_flushes rows stay in D1
 *                            (default: for good, i.e. the whole horizon)
 *   --counter-id-days        how long a counter remembers recorded event ids (35)
 *   --raw-queues             usage-raw queues, tenants spread by hash (1)
 *   --envelope-events        events per queue message (100)
 *   --batch                  events per ingestion request (1000)
 *   --file-events            events per archive file (USAGE_ARCHIVE_FILE_EVENTS, 10000)
 *   --id-bytes               bytes of an eventId's index row (measured: 152)
 *   --measure                measure the costs on this machine and print them
 */
import { parseArgs } from "node:util";

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
  /** measured: an eventId's row in `event_ids` (duplicate guard and id -> file index) with its receipt-time index. */
  eventIdBytes: 152,
  /** measured: one archive file's row in `files` (kept for the retention window). */
  fileRowBytes: 444,
  /** measured: a counter's remembered event id (`recorded_events`). */
  counterIdBytes: 103,
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
  /** measured: one flush's D1 batch (two window increments and the flush row), SQLite CPU time (0.13 to 0.26). */
  d1MsPerFlush: 0.27,
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
  /** Bytes of an eventId's row in the duplicate guard and id -> file index. */
  idBytes: number;
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
  tenant === "busiest" ? "--hot-shards, USAGE_LOG_TENANT_SHARDS" : "--shards, USAGE_LOG_SHARDS";
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
/** Seconds an event stays in its shard's `events` table: through the pipeline, the settle time and until its file is due. */
const hotSeconds = (rate: number, input: CapacityInput) =>
  Math.min(input.fileEvents / Math.max(rate, 1e-9), COSTS.archiveHourSeconds) +
  COSTS.settleSeconds +
  COSTS.pipelineSeconds;
/** Archive files a shard writes per second: a full file, or at least the closed hour's. */
const filesPerSecond = (rate: number, input: CapacityInput) =>
  Math.max(rate / input.fileEvents, 1 / COSTS.archiveHourSeconds);
/** Queue messages per ingestion request of a tenant with `shards` shards (each shard sends its part in envelopes). */
const messagesPerRequest = (shards: number, input: CapacityInput) => {
  const touched = Math.min(shards, input.batch);
  return touched * Math.ceil(input.batch / touched / input.envelopeEvents);
};

/** The limits of one tenant shard: its storage, its single writer, its request rate. */
function shardTerms(tenant: Tenant): Term[] {
  return [
    {
      limit: (input) =>
        `DO storage (10 GB per object): a shard of the ${tenant} tenant (hot events, eventIds for ${Math.max(input.retentionDays, COSTS.dedupDays)} days, file rows)`,
      use: (input) => {
        const rate = shardEps(input, tenant);
        const bytes =
          rate * hotSeconds(rate, input) * COSTS.hotEventBytes +
          rate * DAY * Math.max(input.retentionDays, COSTS.dedupDays) * input.idBytes +
          filesPerSecond(rate, input) * DAY * input.retentionDays * COSTS.fileRowBytes;
        return bytes / LIMITS.durableObjectBytes;
      },
      next: `more shards (${shardSetting(tenant)}); smaller index rows (--id-bytes: an 8-byte eventId hash and the file, one table per day, measure 18 B); or a shorter USAGE_RETENTION_DAYS (at least 8)`,
    },
    {
      limit: () =>
        `DO single writer: a shard of the ${tenant} tenant (statements and Parquet encoding)`,
      use: (input) => (shardEps(input, tenant) * COSTS.shardMsPerEvent) / 1000,
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
    limit: () => "DO single writer: the busiest tenant's counter",
    use: (input) => (hotEps(input) * COSTS.counterMsPerEvent) / 1000,
    next: "a counter per tenant and feature",
  },
  {
    limit: (input) =>
      `DO storage (10 GB per object): the busiest tenant's counter, event ids remembered ${input.counterIdDays} days`,
    use: (input) =>
      (hotEps(input) * DAY * input.counterIdDays * COSTS.counterIdBytes) /
      LIMITS.durableObjectBytes,
    next: "remember recorded ids for an hour or less (--counter-id-days; the shard's claim already refuses a second count)",
  },
  {
    limit: (input) =>
      `D1 database size (10 GB): usage_flushes rows kept ${input.flushIdsHours >= input.retentionDays * 24 ? `for good (${input.retentionDays}-day horizon)` : `${input.flushIdsHours} h`}`,
    use: (input) => {
      const flushes =
        flushesPerSecond(hotEps(input), input) +
        (input.tenants - 1) * flushesPerSecond(otherTenantEps(input), input);
      const seconds = Math.min(input.flushIdsHours * 3_600, input.retentionDays * DAY);
      return (flushes * seconds * COSTS.d1FlushRowBytes) / LIMITS.d1DatabaseBytes;
    },
    next: "prune usage_flushes after an hour (--flush-ids-hours), or keep one applied-flush sequence per tenant",
  },
  {
    limit: () => "D1 single writer: counter flushes (one batch per tenant per flush round)",
    use: (input) => {
      const flushes =
        flushesPerSecond(hotEps(input), input) +
        (input.tenants - 1) * flushesPerSecond(otherTenantEps(input), input);
      return (flushes * COSTS.d1MsPerFlush) / 1000;
    },
    next: "a longer flush interval (--flush-seconds; 202 -> AGGREGATED grows by as much)",
  },
  {
    limit: () => "Queues: 5,000 messages/s per queue (usage-raw)",
    use: (input) => {
      const requests = (rate: number) => rate / input.batch;
      const messages =
        requests(hotEps(input)) * messagesPerRequest(input.hotShards, input) +
        requests(input.eps - hotEps(input)) * messagesPerRequest(input.shards, input);
      return messages / input.rawQueues / LIMITS.queueMessagesPerSecond;
    },
    next: "raw queues by tenant hash (--raw-queues), or fuller envelopes (--envelope-events; 128 KB holds about 400)",
  },
  {
    limit: () => "Queues: 250 concurrent consumer invocations (validation)",
    use: (input) =>
      ((input.eps / COSTS.validationBatchEvents) * COSTS.validationBatchSeconds) /
      (LIMITS.queueConsumerConcurrency * input.rawQueues),
    next: "more raw queues (--raw-queues), each with its own consumers",
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
  return ids + counters + files;
}

/** D1 statements per event: each flush round is one batch of a statement per window, one for their hours and one for the flush id. */
export function d1StatementsPerEvent(input: CapacityInput): number {
  const flushes =
    flushesPerSecond(hotEps(input), input) +
    (input.tenants - 1) * flushesPerSecond(otherTenantEps(input), input);
  return (flushes * (COSTS.windowsPerFlush + 2)) / input.eps;
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

export function parseInput(argv: string[]): { input: CapacityInput; measure: boolean } {
  const { values } = parseArgs({
    args: argv,
    options: {
      tenants: { type: "string", default: "1000" },
      eps: { type: "string", default: "1000" },
      "hot-share": { type: "string" },
      "retention-days": { type: "string", default: "35" },
      shards: { type: "string", default: "1" },
      "hot-shards": { type: "string" },
      "flush-seconds": { type: "string", default: "0.2" },
      "flush-ids-hours": { type: "string" },
      "counter-id-days": { type: "string", default: "35" },
      "raw-queues": { type: "string", default: "1" },
      "envelope-events": { type: "string", default: "100" },
      batch: { type: "string", default: "1000" },
      "file-events": { type: "string", default: "10000" },
      "id-bytes": { type: "string" },
      measure: { type: "boolean", default: false },
    },
  });
  const number = (name: string, value: string | undefined): number => {
    const parsed = Number(value);
    if (value === undefined || !Number.isFinite(parsed) || parsed <= 0) {
      throw new Error(`--${name} must be a positive number`);
    }
    return parsed;
  };
  const tenants = Math.floor(number("tenants", values.tenants));
  const retentionDays = number("retention-days", values["retention-days"]);
  const hotShare =
    values["hot-share"] === undefined
      ? Math.min(1, 10 / tenants)
      : number("hot-share", values["hot-share"]);
  if (hotShare > 1) throw new Error("--hot-share must be at most 1");
  const base = {
    idBytes:
      values["id-bytes"] === undefined
        ? COSTS.eventIdBytes
        : number("id-bytes", values["id-bytes"]),
    tenants,
    eps: number("eps", values.eps),
    hotShare,
    retentionDays,
    flushSeconds: number("flush-seconds", values["flush-seconds"]),
    flushIdsHours:
      values["flush-ids-hours"] === undefined
        ? retentionDays * 24
        : number("flush-ids-hours", values["flush-ids-hours"]),
    counterIdDays: number("counter-id-days", values["counter-id-days"]),
    rawQueues: Math.floor(number("raw-queues", values["raw-queues"])),
    envelopeEvents: Math.floor(number("envelope-events", values["envelope-events"])),
    batch: Math.floor(number("batch", values.batch)),
    fileEvents: Math.floor(number("file-events", values["file-events"])),
  };
  const count = (name: string, value: string | undefined, tenant: Tenant) =>
    value === "auto" ? autoShards(base, tenant) : Math.min(4096, Math.floor(number(name, value)));
  const shards = count("shards", values.shards, "average");
  const hotShards = count("hot-shards", values["hot-shards"] ?? values.shards, "busiest");
  return { input: { ...base, shards, hotShards }, measure: values.measure ?? false };
}

export function report(input: CapacityInput): string {
  const rows = capacityRows(input);
  const over = rows.filter((row) => row.use > 0.5);
  const first = [...rows].sort((a, b) => a.maxEps - b.maxEps)[0];
  return (
    `Usage pipeline capacity: ${input.tenants} tenants, ${format(input.eps)} events/s, busiest tenant ${(input.hotShare * 100).toFixed(1)}% (${format(hotEps(input))} events/s over ${input.hotShards} shard${input.hotShards === 1 ? "" : "s"}, ${format(shardEps(input, "busiest"))} each; the others ${format(otherTenantEps(input))} events/s over ${input.shards}), retention ${input.retentionDays} days\n` +
    `Configuration: --shards ${input.shards} --hot-shards ${input.hotShards} --id-bytes ${input.idBytes} --flush-seconds ${input.flushSeconds} --flush-ids-hours ${format(input.flushIdsHours)} --counter-id-days ${input.counterIdDays} --raw-queues ${input.rawQueues} --envelope-events ${input.envelopeEvents} --batch ${input.batch} --file-events ${input.fileEvents}\n\n` +
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
    process.stdout.write(
      `${JSON.stringify(await measureUsageLog({ events: 100_000 }), null, 2)}\n`,
    );
    return;
  }
  process.stdout.write(report(input));
}

if (import.meta.main) await main();
