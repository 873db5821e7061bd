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
 *   USAGE_COUNTER_SHARDS N | auto      counter shards (EntitlementCounter objects) of
 *                                      every tenant; auto: the fewest that keep an
 *                                      average tenant's at or below 50%
 *   USAGE_COUNTER_TENANT_SHARDS N | auto  the busiest tenant's entry (default as
 *                                      USAGE_COUNTER_SHARDS); auto: the fewest that
 *                                      keep its counter shards at or below 50%
 *                                      (at most 64, the code's bound)
 *   USAGE_COUNTER_LEASE_INTERVAL_MS    how often a counter shard asks shard 0 for a
 *                                      HARD limit's lease, at most
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
 *   --consumes, --checks     the busiest tenant's consumes (without an
 *                            Idempotency-Key) and entitlement checks per second (0)
 *   --envelope-events        events per queue message at most (100; a shard
 *                            sends its part of each request on its own, so
 *                            many shards send many small envelopes)
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
 * --raw-queues, --file-events, --counter-shards, --hot-counter-shards,
 * --lease-interval-ms.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import {
  allFlushesPerSecond,
  autoCounterShards,
  counterShardIdsBytes,
  counterShardsOf,
  counterTerms,
  duration,
  MAX_COUNTER_SHARDS,
} from "./lib/capacity-counter-shards.ts";
import { archiveFilesPerSecond, autoShards, shardTerms } from "./lib/capacity-log-shards.ts";
import { counterMeterBytes, d1MeterGroupBytes, meterNotes } from "./lib/capacity-meters.ts";
import {
  busiestRawQueueRate,
  type CapacityInput,
  type CapacityRow,
  COSTS,
  DAY,
  hotEps,
  LIMITS,
  otherTenantEps,
  shardEps,
  type Tenant,
  type Term,
  touchedShards,
  validationBatchesPerSecond,
} from "./lib/capacity-model.ts";
import { readWranglerVars } from "./lib/wrangler-vars.ts";

export { autoCounterShards } from "./lib/capacity-counter-shards.ts";
export { autoShards } from "./lib/capacity-log-shards.ts";
export { type CapacityInput, type CapacityRow, COSTS, LIMITS } from "./lib/capacity-model.ts";

/** The share of D1's single writer the flushes and their pruning take. */
const d1WriterUse = (input: CapacityInput) =>
  (allFlushesPerSecond(input) * (COSTS.d1MsPerFlush + COSTS.d1MsPerPrunedFlush)) / 1000;

/** Every limit the design's writes and requests count against. */
export const TERMS: Term[] = [
  ...shardTerms("busiest"),
  ...shardTerms("average"),
  ...counterTerms("busiest"),
  ...counterTerms("average"),
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
      "D1 single writer: counter flushes (one batch per counter shard per flush round) and their pruning",
    use: d1WriterUse,
    next: "a longer flush interval (USAGE_FLUSH_INTERVAL_MS; 202 -> AGGREGATED grows by as much)",
  },
  {
    limit: (input) =>
      input.rawQueues === 1
        ? "Queues: 5,000 messages/s per queue (usage-raw)"
        : `Queues: 5,000 messages/s per queue (the busiest usage-raw queue: its share of the busiest tenant's shards, with its hash share of the others'; a request reaches ${Math.round(touchedShards(input.hotShards, input.batch)).toLocaleString("en-US")} of the busiest tenant's shards, one envelope each at least)`,
    use: (input) => busiestRawQueueRate(input) / LIMITS.queueMessagesPerSecond,
    next: "more raw queues (USAGE_RAW_QUEUES); a fuller envelope cap (--envelope-events) helps only tenants whose shards get more than 100 events of a request",
  },
  {
    limit: () =>
      "Queues: 250 concurrent consumer invocations per queue (validation; a batch takes the 1,000-event batch's time at least, however few events its envelopes carry)",
    use: (input) => {
      const byEvents = input.eps / input.rawQueues / COSTS.validationBatchEvents;
      const batches = validationBatchesPerSecond(busiestRawQueueRate(input));
      return (
        (Math.max(byEvents, batches) * COSTS.validationBatchSeconds) /
        LIMITS.queueConsumerConcurrency
      );
    },
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
      touchedShards(Math.max(input.shards, input.hotShards), input.batch) /
      LIMITS.subrequestsPerInvocation,
    next: "fewer shards per tenant (smaller index rows)",
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
  const terms = TERMS.filter((term) => term.tenant !== "average" || input.tenants > 1);
  return terms
    .map((term) => ({
      limit: term.limit(input),
      use: term.use(input),
      maxEps: bisectMaxEps(term, input),
      next: term.next,
    }))
    .sort((a, b) => b.use - a.use || a.maxEps - b.maxEps);
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

/** The billing worker's settings the model reads, by their configuration names. */
export const SETTINGS = [
  "USAGE_LOG_SHARDS",
  "USAGE_LOG_TENANT_SHARDS",
  "USAGE_COUNTER_SHARDS",
  "USAGE_COUNTER_TENANT_SHARDS",
  "USAGE_COUNTER_LEASE_INTERVAL_MS",
  "USAGE_RETENTION_DAYS",
  "USAGE_FLUSH_INTERVAL_MS",
  "USAGE_FLUSH_IDS_RETENTION_SECONDS",
  "USAGE_COUNTER_ID_RETENTION_SECONDS",
  "USAGE_RAW_QUEUES",
  "USAGE_ARCHIVE_FILE_EVENTS",
  "USAGE_ARCHIVE_FILE_SPREAD",
] as const;
export type Setting = (typeof SETTINGS)[number];

/** The billing worker's defaults for settings a wrangler.toml may not name. */
const CODE_DEFAULTS: Partial<Record<Setting, string>> = {
  USAGE_COUNTER_SHARDS: "1",
  USAGE_COUNTER_LEASE_INTERVAL_MS: "1000",
};

/** Shorthand options for settings. */
const SHORTHANDS: Record<string, Setting> = {
  shards: "USAGE_LOG_SHARDS",
  "hot-shards": "USAGE_LOG_TENANT_SHARDS",
  "counter-shards": "USAGE_COUNTER_SHARDS",
  "hot-counter-shards": "USAGE_COUNTER_TENANT_SHARDS",
  "lease-interval-ms": "USAGE_COUNTER_LEASE_INTERVAL_MS",
  "retention-days": "USAGE_RETENTION_DAYS",
  "flush-interval-ms": "USAGE_FLUSH_INTERVAL_MS",
  "flush-ids-seconds": "USAGE_FLUSH_IDS_RETENTION_SECONDS",
  "counter-id-seconds": "USAGE_COUNTER_ID_RETENTION_SECONDS",
  "raw-queues": "USAGE_RAW_QUEUES",
  "file-events": "USAGE_ARCHIVE_FILE_EVENTS",
  "file-spread": "USAGE_ARCHIVE_FILE_SPREAD",
};

const ROOT_CONFIG = path.join(import.meta.dirname, "../wrangler.toml");

/**
 * The busiest tenant's entry of a per-tenant setting: a count, `auto`, or
 * an entry as the JSON holds it after a change (`{"shards": 4, "previous":
 * 1}`: the model takes the new count). A map of tenants (wrangler.toml's
 * `{}`) names no tenant of the model: "as the default".
 */
function tenantEntry(value: string): string {
  const text = value.trim();
  if (!text.startsWith("{")) return text;
  try {
    const shards = (JSON.parse(text) as { shards?: unknown }).shards;
    return shards === undefined ? "" : String(shards);
  } catch {
    return "";
  }
}

/** The settings: wrangler.toml's [vars] (or the code's defaults), then the shorthands, then each --set. */
function readSettings(
  text: (name: string) => string | undefined,
  assignments: string[],
): Record<Setting, string> {
  const vars = readWranglerVars(text("config") ?? ROOT_CONFIG);
  const settings = Object.fromEntries(
    SETTINGS.map((name) => [name, vars[name] ?? CODE_DEFAULTS[name] ?? ""]),
  ) as Record<Setting, string>;
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
  settings.USAGE_LOG_TENANT_SHARDS = tenantEntry(settings.USAGE_LOG_TENANT_SHARDS);
  settings.USAGE_COUNTER_TENANT_SHARDS = tenantEntry(settings.USAGE_COUNTER_TENANT_SHARDS);
  return settings;
}

function number(name: string, value: string | undefined): number {
  const parsed = Number(value);
  if (value === undefined || value === "" || !Number.isFinite(parsed) || parsed <= 0) {
    throw new Error(`${name} must be a positive number`);
  }
  return parsed;
}

/** A count that may be zero (a tenant without UNIQUE_COUNT features or groupBy, or without consumes). */
function atLeastZero(name: string, value: string | undefined): number {
  const parsed = Number(value);
  if (value === undefined || value === "" || !Number.isFinite(parsed) || parsed < 0) {
    throw new Error(`${name} must be zero or a positive number`);
  }
  return Math.floor(parsed);
}

type Text = (name: string) => string | undefined;

function readOptions(argv: string[]): { text: Text; assignments: string[]; measure: boolean } {
  const { values } = parseArgs({
    args: argv,
    options: {
      tenants: { type: "string", default: "1000" },
      eps: { type: "string", default: "1000" },
      "hot-share": { type: "string" },
      config: { type: "string" },
      set: { type: "string", multiple: true },
      ...Object.fromEntries(Object.keys(SHORTHANDS).map((name) => [name, { type: "string" }])),
      consumes: { type: "string", default: "0" },
      checks: { type: "string", default: "0" },
      "envelope-events": { type: "string", default: "100" },
      batch: { type: "string", default: "1000" },
      "id-bytes": { type: "string" },
      "distinct-values": { type: "string", default: "100000" },
      "meter-groups": { type: "string", default: "1000" },
      measure: { type: "boolean", default: false },
    },
  }) as { values: Record<string, string | string[] | boolean | undefined> };
  return {
    text: (name) => values[name] as string | undefined,
    assignments: (values.set as string[] | undefined) ?? [],
    measure: (values.measure as boolean | undefined) ?? false,
  };
}

type BaseInput = Omit<CapacityInput, "shards" | "hotShards" | "counterShards" | "hotCounterShards">;

/** Everything but the shard counts, which `auto` picks from the rest. */
function baseInput(text: Text, settings: Record<Setting, string>): BaseInput {
  const tenants = Math.floor(number("--tenants", text("tenants")));
  const hotShare =
    text("hot-share") === undefined
      ? Math.min(1, 10 / tenants)
      : number("--hot-share", text("hot-share"));
  if (hotShare > 1) throw new Error("--hot-share must be at most 1");
  return {
    idBytes:
      text("id-bytes") === undefined ? COSTS.eventIdBytes : number("--id-bytes", text("id-bytes")),
    tenants,
    eps: number("--eps", text("eps")),
    hotShare,
    retentionDays: number("USAGE_RETENTION_DAYS", settings.USAGE_RETENTION_DAYS),
    leaseSeconds:
      number("USAGE_COUNTER_LEASE_INTERVAL_MS", settings.USAGE_COUNTER_LEASE_INTERVAL_MS) / 1000,
    consumes: atLeastZero("--consumes", text("consumes")),
    checks: atLeastZero("--checks", text("checks")),
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
}

/** A count setting, at most `max`, or `auto`'s choice. */
function countOf(name: string, value: string, max: number, auto: () => number): number {
  return value === "auto" ? auto() : Math.min(max, Math.floor(number(name, value)));
}

/**
 * The shard counts: the log's first (a counter shard records log shards),
 * with the counters taken as one while an `auto` log count is chosen.
 */
function withShards(base: BaseInput, settings: Record<Setting, string>): CapacityInput {
  const hotCounterSetting = settings.USAGE_COUNTER_TENANT_SHARDS || settings.USAGE_COUNTER_SHARDS;
  const counters = (name: string, value: string) =>
    countOf(name, value, MAX_COUNTER_SHARDS, () => 1);
  const logBase = {
    ...base,
    counterShards: counters("USAGE_COUNTER_SHARDS", settings.USAGE_COUNTER_SHARDS),
    hotCounterShards: counters("USAGE_COUNTER_TENANT_SHARDS", hotCounterSetting),
  };
  const logShards = (name: string, value: string, tenant: Tenant) =>
    countOf(name, value, 4096, () => autoShards(logBase, tenant));
  const logged = {
    ...logBase,
    shards: logShards("USAGE_LOG_SHARDS", settings.USAGE_LOG_SHARDS, "average"),
    hotShards: logShards(
      "USAGE_LOG_TENANT_SHARDS",
      settings.USAGE_LOG_TENANT_SHARDS || settings.USAGE_LOG_SHARDS,
      "busiest",
    ),
  };
  const counterShards = countOf(
    "USAGE_COUNTER_SHARDS",
    settings.USAGE_COUNTER_SHARDS,
    MAX_COUNTER_SHARDS,
    () => autoCounterShards(logged, "average"),
  );
  const hotCounterShards = countOf(
    "USAGE_COUNTER_TENANT_SHARDS",
    hotCounterSetting,
    MAX_COUNTER_SHARDS,
    () => autoCounterShards({ ...logged, counterShards }, "busiest"),
  );
  return { ...logged, counterShards, hotCounterShards };
}

export function parseInput(argv: string[]): {
  input: CapacityInput;
  settings: Record<Setting, string>;
  measure: boolean;
} {
  const { text, assignments, measure } = readOptions(argv);
  const settings = readSettings(text, assignments);
  const input = withShards(baseInput(text, settings), settings);
  return {
    input,
    settings: {
      ...settings,
      USAGE_LOG_SHARDS: String(input.shards),
      USAGE_LOG_TENANT_SHARDS: String(input.hotShards),
      USAGE_COUNTER_SHARDS: String(input.counterShards),
      USAGE_COUNTER_TENANT_SHARDS: String(input.hotCounterShards),
    },
    measure,
  };
}

/** The input as the billing worker's configuration (wrangler.toml [vars]). */
export function configurationOf(input: CapacityInput): Record<Setting, string> {
  return {
    USAGE_LOG_SHARDS: String(input.shards),
    USAGE_LOG_TENANT_SHARDS: `{"<busiest tenant>": ${input.hotShards}}`,
    USAGE_COUNTER_SHARDS: String(input.counterShards),
    USAGE_COUNTER_TENANT_SHARDS: `{"<busiest tenant>": ${input.hotCounterShards}}`,
    USAGE_COUNTER_LEASE_INTERVAL_MS: String(Math.round(input.leaseSeconds * 1000)),
    USAGE_RETENTION_DAYS: String(input.retentionDays),
    USAGE_FLUSH_INTERVAL_MS: String(Math.round(input.flushSeconds * 1000)),
    USAGE_FLUSH_IDS_RETENTION_SECONDS: String(Math.round(input.flushIdsHours * 3_600)),
    USAGE_COUNTER_ID_RETENTION_SECONDS: String(Math.round(input.counterIdDays * DAY)),
    USAGE_RAW_QUEUES: String(input.rawQueues),
    USAGE_ARCHIVE_FILE_EVENTS: String(input.fileEvents),
    USAGE_ARCHIVE_FILE_SPREAD: String(input.fileSpread ?? 0),
  };
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;

/** The busiest tenant's load, and the others' when there are others. */
function loadLine(input: CapacityInput): string {
  const calls = [
    input.consumes > 0 ? `${format(input.consumes)} consumes/s` : "",
    input.checks > 0 ? `${format(input.checks)} checks/s` : "",
  ].filter(Boolean);
  const busiest = `${format(hotEps(input))} events/s over ${plural(input.hotShards, "shard")}, ${format(shardEps(input, "busiest"))} each, and ${plural(input.hotCounterShards, "counter shard")}${calls.length > 0 ? `; ${calls.join(", ")}` : ""}`;
  const others =
    input.tenants > 1
      ? `; the others ${format(otherTenantEps(input))} events/s over ${plural(input.shards, "shard")}, and ${plural(input.counterShards, "counter shard")}`
      : "";
  return `Usage pipeline capacity: ${plural(input.tenants, "tenant")}, ${format(input.eps)} events/s, busiest tenant ${(input.hotShare * 100).toFixed(1)}% (${busiest}${others}), retention ${input.retentionDays} days\n`;
}

/** The report's opening lines: the load, the configuration, the model's other inputs. */
function reportHead(input: CapacityInput): string {
  const hotCounters = counterShardsOf(input, "busiest");
  return (
    loadLine(input) +
    `Configuration (the billing worker's vars): ${Object.entries(configurationOf(input))
      .map(([name, value]) => `${name}=${value}`)
      .join(" ")}\n` +
    `Model inputs: --id-bytes ${input.idBytes} --envelope-events ${input.envelopeEvents} --batch ${input.batch} --consumes ${input.consumes} --checks ${input.checks} --distinct-values ${input.distinctValues} --meter-groups ${input.meterGroups}\n` +
    (hotCounters > 1
      ? `Counter shards: the busiest tenant's ${hotCounters} are taken to count a tenant without prepaid credits, UNIQUE_COUNT meters or group-by meters (those are counted by shard 0 alone); its meter state is charged to shard 0.\n`
      : "")
  );
}

export function report(input: CapacityInput): string {
  const rows = capacityRows(input);
  const over = rows.filter((row) => row.use > 0.5);
  const first = [...rows].sort((a, b) => a.maxEps - b.maxEps)[0];
  return (
    `${reportHead(input)}\n` +
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
      counterIdBytes: counterShardIdsBytes(input, "busiest"),
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
