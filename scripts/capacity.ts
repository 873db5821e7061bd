/**
 * `npm run capacity -- --tenants 1000 --eps 5000`: which Cloudflare limit
 * the usage pipeline reaches first for a number of tenants and a sustained
 * event rate, and at what rate each limit binds. The published limits are
 * Cloudflare's (sources in docs/capacity.md); the per-event costs are this
 * design's, measured on the local stack (docs/capacity.md, "Measured
 * costs"). Options: --tenants, --eps, --hot-share (share of all events
 * from the busiest tenant; default 10x the average, at most 1),
 * --retention-days (35), --batch (events per ingestion request, 1000).
 */
import { parseArgs } from "node:util";

/** Cloudflare's published limits (Workers Paid), see docs/capacity.md for sources. */
export const LIMITS = {
  d1DatabaseBytes: 10e9,
  queueMessagesPerSecond: 5_000,
  queueConsumerConcurrency: 250,
  durableObjectRequestsPerSecond: 1_000,
  durableObjectBytes: 10e9,
  workerCpuMsPerInvocation: 30_000,
  r2WritesPerKeyPerSecond: 1,
} as const;

/** This design's costs per event (docs/capacity.md, "Measured costs"). */
export const COSTS = {
  /** usage_events row with its four indexes (SQLite, measured on 20,000 aggregated rows). */
  d1BytesPerEvent: 689,
  /** The outbox row, kept 24 h. */
  d1OutboxBytesPerEvent: 302,
  /** D1 statement time per event across ingestion, validation and the flush (local, loaded machine). */
  d1MsPerEvent: 0.31,
  /** Events per queue message (envelopes). */
  eventsPerMessage: 100,
  /** Events per validation batch (10 envelopes) and its wall time (local). */
  eventsPerBatch: 1_000,
  batchSeconds: 0.07,
  /** The counter object's time per event in `record` and the flush (local). */
  counterMsPerEvent: 0.13,
  /** A remembered event id in the counter (35 days) or the archive index (for good). */
  doBytesPerEventId: 100,
  recordedEventRetentionDays: 35,
  /** Archive job: parts per Cron Trigger run (one a minute) times events per part. */
  archiveEventsPerMinute: 10 * 10_000,
} as const;

export interface CapacityInput {
  tenants: number;
  eps: number;
  hotShare: number;
  retentionDays: number;
  batch: number;
}

export interface CapacityRow {
  limit: string;
  /** Use of the limit at the input rate (1 = at the limit). */
  use: number;
  /** The event rate (all tenants) at which this limit binds, for the same mix. */
  maxEps: number;
  next: string;
}

const DAY = 86_400;

export function capacityRows(input: CapacityInput): CapacityRow[] {
  const { eps, hotShare, retentionDays, batch } = input;
  const hotEps = eps * hotShare;
  const d1Bytes = (rate: number) =>
    rate * DAY * (retentionDays * COSTS.d1BytesPerEvent + COSTS.d1OutboxBytesPerEvent);
  const rows: CapacityRow[] = [
    {
      limit: `D1 database size (10 GB): the raw event log for ${retentionDays} days`,
      use: d1Bytes(eps) / LIMITS.d1DatabaseBytes,
      maxEps: LIMITS.d1DatabaseBytes / d1Bytes(1),
      next: "shorten USAGE_RETENTION_DAYS (the archive keeps the log in R2); then the log per tenant in Durable Object storage or D1 per tenant group",
    },
    {
      limit: "D1 write throughput (one writer per database)",
      use: (eps * COSTS.d1MsPerEvent) / 1000,
      maxEps: 1000 / COSTS.d1MsPerEvent,
      next: "shard the event log: D1 databases per tenant group (aggregates and billing stay in one)",
    },
    {
      limit: "Queues: 5,000 messages/s per queue (usage-raw)",
      use: eps / COSTS.eventsPerMessage / LIMITS.queueMessagesPerSecond,
      maxEps: LIMITS.queueMessagesPerSecond * COSTS.eventsPerMessage,
      next: "more events per envelope (128 KB allows ~400), then several raw queues by tenant hash",
    },
    {
      limit: "Queues: 250 concurrent consumer invocations",
      use: ((eps / COSTS.eventsPerBatch) * COSTS.batchSeconds) / LIMITS.queueConsumerConcurrency,
      maxEps: (LIMITS.queueConsumerConcurrency * COSTS.eventsPerBatch) / COSTS.batchSeconds,
      next: "bounded by D1 long before: validation is D1-bound",
    },
    {
      limit: "Durable Object ~1,000 req/s: the busiest tenant's counter and dedup window",
      // At most one record call per envelope, two dedup-window calls per request.
      use:
        (hotEps / COSTS.eventsPerMessage + (2 * hotEps) / batch) /
        LIMITS.durableObjectRequestsPerSecond,
      maxEps:
        LIMITS.durableObjectRequestsPerSecond /
        (hotShare * (1 / COSTS.eventsPerMessage + 2 / batch)),
      next: "larger batches per call; a hot tenant's counter split by feature",
    },
    {
      limit: "Durable Object single thread: the busiest tenant's counter work",
      use: (hotEps * COSTS.counterMsPerEvent) / 1000,
      maxEps: 1000 / COSTS.counterMsPerEvent / hotShare,
      next: "split a hot tenant's counter by feature (one object per tenant and feature)",
    },
    {
      limit: "Durable Object: the one outbox publisher (one arm() per ingestion request)",
      use: eps / batch / LIMITS.durableObjectRequestsPerSecond,
      maxEps: LIMITS.durableObjectRequestsPerSecond * batch,
      next: "arm once per isolate per second; publishers per tenant hash",
    },
    {
      limit: `Durable Object storage (10 GB): the busiest tenant's event ids (${COSTS.recordedEventRetentionDays} days)`,
      use:
        (hotEps * DAY * COSTS.recordedEventRetentionDays * COSTS.doBytesPerEventId) /
        LIMITS.durableObjectBytes,
      maxEps:
        LIMITS.durableObjectBytes /
        (DAY * COSTS.recordedEventRetentionDays * COSTS.doBytesPerEventId) /
        hotShare,
      next: "remember event ids for the 7-day validation window only",
    },
    {
      limit: "Archive job (10 parts of 10,000 per Cron Trigger minute)",
      use: (eps * 60) / COSTS.archiveEventsPerMinute,
      maxEps: COSTS.archiveEventsPerMinute / 60,
      next: "more parts per run (cpu_ms up to 5 min), or a queue of tenant days archived in parallel",
    },
    {
      limit: "R2: 1 write/s per key; Class A writes per archive part",
      use: 0,
      maxEps: Number.POSITIVE_INFINITY,
      next: "never binds: one object per 10,000 events, every key distinct",
    },
    {
      limit: "Worker CPU (30 s per invocation by default)",
      use: 0,
      maxEps: Number.POSITIVE_INFINITY,
      next: "never binds per request: a 1,000-event request or batch is well under a second",
    },
  ];
  return rows.sort((a, b) => a.maxEps - b.maxEps);
}

function format(value: number): string {
  if (!Number.isFinite(value)) return "-";
  if (value >= 100) return Math.round(value).toLocaleString("en-US");
  return value.toPrecision(3);
}

function main(): void {
  const { values } = parseArgs({
    options: {
      tenants: { type: "string", default: "1000" },
      eps: { type: "string", default: "1000" },
      "hot-share": { type: "string" },
      "retention-days": { type: "string", default: "35" },
      batch: { type: "string", default: "1000" },
    },
  });
  const tenants = Number(values.tenants);
  const eps = Number(values.eps);
  const input: CapacityInput = {
    tenants,
    eps,
    hotShare: Number(values["hot-share"] ?? Math.min(1, 10 / tenants)),
    retentionDays: Number(values["retention-days"]),
    batch: Number(values.batch),
  };
  for (const [name, value] of Object.entries(input)) {
    if (!Number.isFinite(value) || value <= 0)
      throw new Error(`--${name} must be a positive number`);
  }
  const rows = capacityRows(input);
  process.stdout.write(
    `Usage pipeline capacity: ${tenants} tenants, ${eps} events/s, busiest tenant ${(input.hotShare * 100).toFixed(1)}% (${format(eps * input.hotShare)} events/s), retention ${input.retentionDays} days, ${input.batch} events per request\n\n` +
      `| limit | use at this rate | binds at (events/s) | then |\n|---|---|---|---|\n` +
      rows
        .map(
          (row) =>
            `| ${row.limit} | ${row.use > 0 ? `${(row.use * 100).toFixed(row.use < 0.01 ? 3 : 1)}%` : "-"}${row.use >= 1 ? " **over**" : ""} | ${format(row.maxEps)} | ${row.next} |`,
        )
        .join("\n") +
      `\n\nFirst limit reached: ${rows[0]?.limit} at about ${format(rows[0]?.maxEps ?? 0)} events/s.\n`,
  );
}

if (import.meta.main) main();
