import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MAX_GROUP_COMBINATIONS as PRODUCT_MAX_GROUP_COMBINATIONS } from "../shared/src/billing/meter.ts";
import {
  autoShards,
  type CapacityInput,
  COSTS,
  capacityRows,
  d1StatementsPerEvent,
  LIMITS,
  parseInput,
  report,
} from "./capacity.ts";
import {
  allFlushesPerSecond,
  autoCounterShards,
  counterTerms,
  flushAlarmSubrequests,
  MAX_COUNTER_SHARDS,
  queuesOfCounterShard,
  recordCallsPerShard,
  shardZeroSyncRequests,
} from "./lib/capacity-counter-shards.ts";
import { measureUsageLog } from "./lib/capacity-measure.ts";
import { measureMeters } from "./lib/capacity-measure-meters.ts";
import { distinctValuesAt, MAX_GROUP_COMBINATIONS } from "./lib/capacity-meters.ts";
import {
  busiestRawQueueRate,
  messagesPerRequest,
  touchedShards,
  validationBatchesPerSecond,
} from "./lib/capacity-model.ts";

const DAY = 86_400;

function input(overrides: Partial<CapacityInput> = {}): CapacityInput {
  return {
    tenants: 1000,
    eps: 1_000_000,
    hotShare: 0.01,
    retentionDays: 35,
    shards: 1,
    hotShards: 1,
    counterShards: 1,
    hotCounterShards: 1,
    leaseSeconds: 1,
    consumes: 0,
    checks: 0,
    flushSeconds: 0.2,
    flushIdsHours: 1,
    counterIdDays: 1 / 24,
    rawQueues: 1,
    envelopeEvents: 100,
    batch: 1000,
    fileEvents: 10_000,
    idBytes: COSTS.eventIdBytes,
    // No meter state unless a test sets it: the pipeline's rows alone.
    distinctValues: 0,
    meterGroups: 0,
    ...overrides,
  };
}

/** The configuration docs/capacity.md runs its commands with. */
const SETTINGS_OF_DOCS = [
  "--set",
  "USAGE_LOG_SHARDS=auto",
  "--set",
  "USAGE_LOG_TENANT_SHARDS=auto",
  "--set",
  "USAGE_COUNTER_TENANT_SHARDS=auto",
  "--set",
  "USAGE_FLUSH_INTERVAL_MS=1000",
  "--set",
  "USAGE_RAW_QUEUES=40",
];
/** The commands docs/capacity.md runs (after `--`), with the busiest tenant's log and counter shards they print. */
const DOCUMENTED = [
  { args: ["--tenants", "1000", "--eps", "1000000", "--hot-share", "0.1"], shards: [1397, 8] },
  { args: ["--tenants", "1", "--eps", "100000"], shards: [1397, 8] },
  { args: ["--tenants", "1", "--eps", "100000", "--consumes", "10000"], shards: [1397, 30] },
].map(({ args, shards }) => ({ args: [...args, ...SETTINGS_OF_DOCS], shards }));

const row = (rows: ReturnType<typeof capacityRows>, start: string) => {
  const found = rows.find((candidate) => candidate.limit.startsWith(start));
  if (!found) throw new Error(`no row ${start}`);
  return found;
};

describe("usage pipeline capacity model", () => {
  it("counts a shard's eventIds for the retention window against the 10 GB of its object", () => {
    const rows = capacityRows(input({ eps: 100_000, hotShards: 4 }));
    const storage = row(rows, "DO storage (10 GB per object): a shard of the busiest tenant");
    const shardRate = (100_000 * 0.01) / 4;
    const ids = shardRate * DAY * 35 * COSTS.eventIdBytes;
    // Hot events and file rows add a little on top of the ids.
    expect(storage.use).toBeGreaterThan(ids / LIMITS.durableObjectBytes);
    expect(storage.use).toBeLessThan((ids / LIMITS.durableObjectBytes) * 1.05);
    // The rate at which it binds is where use reaches 1, for the same mix.
    const atLimit = capacityRows(input({ eps: storage.maxEps, hotShards: 4 }));
    expect(row(atLimit, "DO storage (10 GB per object): a shard of the busiest").use).toBeCloseTo(
      1,
      3,
    );
  });

  it("charges D1 one batch per tenant per flush round, and nothing per event", () => {
    const rows = capacityRows(input({ flushSeconds: 1 }));
    // 999 tenants at 991 events/s flush once a second; the busiest (10,000/s) twice (5,000 a round).
    const flushes = 999 + 2;
    // Each flush's row is pruned an hour later: a row deleted per flush.
    expect(row(rows, "D1 single writer").use).toBeCloseTo(
      (flushes * (COSTS.d1MsPerFlush + COSTS.d1MsPerPrunedFlush)) / 1000,
      6,
    );
    expect(d1StatementsPerEvent(input({ flushSeconds: 1 }))).toBeCloseTo(
      (flushes * (COSTS.windowsPerFlush + 2)) / 1_000_000,
      9,
    );
    const size = row(
      capacityRows(input({ flushSeconds: 1, flushIdsHours: 1 })),
      "D1 database size",
    );
    // An hour of flushes, and each tenant's latest whatever its age.
    expect(size.use).toBeCloseTo(
      ((flushes * 3600 + 1000) * COSTS.d1FlushRowBytes) / LIMITS.d1DatabaseBytes,
      6,
    );
  });

  it("sends one envelope per shard touched by a request, spread over the raw queues", () => {
    const one = capacityRows(input({ eps: 100_000, shards: 4, hotShards: 4 }));
    // 100 requests/s, each touching 4 shards of 250 events: 3 envelopes each.
    expect(row(one, "Queues: 5,000 messages/s").use).toBeCloseTo((100 * 4 * 3) / 5000, 9);
    // Two queues, four shards a tenant: each queue carries two shards of
    // every tenant, half of all messages.
    const two = capacityRows(input({ eps: 100_000, shards: 4, hotShards: 4, rawQueues: 2 }));
    expect(row(two, "Queues: 5,000 messages/s").use).toBeCloseTo((100 * 4 * 3) / 2 / 5000, 9);
    // Eight queues, one shard a tenant: the busiest tenant's queue takes all
    // of its messages, and its hash share of the others' (an eighth, plus two
    // standard deviations of the draw).
    const eight = capacityRows(input({ eps: 100_000, shards: 1, hotShards: 1, rawQueues: 8 }));
    const share = 1 / 8 + 2 * Math.sqrt((1 / 8 - 1 / 64) / 999);
    expect(row(eight, "Queues: 5,000 messages/s").use).toBeCloseTo(
      ((1 + 99 * share) * 10) / 5000,
      9,
    );
  });

  it("picks the fewest shards that keep a tenant's shards at or below half their limits", () => {
    const base = input({ eps: 100_000 });
    const shards = autoShards(base, "busiest");
    const shardRows = (count: number) =>
      capacityRows({ ...base, hotShards: count }).filter((r) =>
        r.limit.includes("shard of the busiest"),
      );
    expect(shardRows(shards).every((r) => r.use <= 0.5)).toBe(true);
    expect(shardRows(shards - 1).some((r) => r.use > 0.5)).toBe(true);
  });

  it("names the next step for every limit above half", () => {
    const text = report(input());
    const over = capacityRows(input()).filter((r) => r.use > 0.5);
    expect(over.length).toBeGreaterThan(0);
    for (const r of over) expect(text).toContain(`| ${r.limit} |`);
    expect(text).toMatch(/limits are above 50% of their value/);
  });

  it("keeps every limit at or below half for the configurations docs/capacity.md documents", () => {
    // A command may go on over lines ending in a backslash.
    const docs = readFileSync(
      path.join(import.meta.dirname, "../docs/capacity.md"),
      "utf8",
    ).replace(/ \\\n\s*/g, " ");
    for (const { args, shards } of DOCUMENTED) {
      expect(docs).toContain(`npm run capacity -- ${args.join(" ")}\n`);
      const { input: documented, settings } = parseInput(args);
      // The rest is wrangler.toml's: 35 days of eventIds, an hour of counter ids and flush ids.
      expect(documented.retentionDays).toBe(35);
      expect(settings.USAGE_COUNTER_ID_RETENTION_SECONDS).toBe("3600");
      expect(settings.USAGE_FLUSH_IDS_RETENTION_SECONDS).toBe("3600");
      expect([documented.hotShards, documented.hotCounterShards]).toEqual(shards);
      const rows = capacityRows(documented);
      expect(rows.filter((r) => r.use > 0.5).map((r) => r.limit)).toEqual([]);
      expect(report(documented)).toContain("Every limit is at or below 50% of its value.");
      expect(docs).toContain(
        `USAGE_COUNTER_TENANT_SHARDS={"<busiest tenant>": ${documented.hotCounterShards}}`,
      );
    }
  });

  it("refuses unusable options", () => {
    expect(() => parseInput(["--eps=-5"])).toThrow("--eps must be a positive number");
    expect(() => parseInput(["--hot-share=2"])).toThrow("--hot-share must be at most 1");
    expect(() => parseInput(["--shards=many"])).toThrow(
      "USAGE_LOG_SHARDS must be a positive number",
    );
    expect(() => parseInput(["--set=USAGE_UNKNOWN=1"])).toThrow("--set takes NAME=VALUE");
  });

  it("takes the design's settings from wrangler.toml, by the configuration's names", () => {
    const { input: defaults, settings } = parseInput(["--tenants=10", "--eps=100"]);
    expect(settings).toMatchObject({
      USAGE_LOG_SHARDS: "1",
      USAGE_FLUSH_INTERVAL_MS: "200",
      USAGE_RAW_QUEUES: "8",
    });
    expect(defaults).toMatchObject({
      shards: 1,
      hotShards: 1,
      flushSeconds: 0.2,
      flushIdsHours: 1,
      counterIdDays: 1 / 24,
      rawQueues: 8,
      fileEvents: 10_000,
    });
    const { input: set } = parseInput([
      "--set=USAGE_FLUSH_INTERVAL_MS=1000",
      "--set=USAGE_COUNTER_ID_RETENTION_SECONDS=86400",
      "--flush-ids-seconds=7200",
      "--raw-queues=3",
    ]);
    expect(set).toMatchObject({
      flushSeconds: 1,
      counterIdDays: 1,
      flushIdsHours: 2,
      rawQueues: 3,
    });
    expect(report(set)).toContain(
      "USAGE_FLUSH_INTERVAL_MS=1000 USAGE_FLUSH_IDS_RETENTION_SECONDS=7200 USAGE_COUNTER_ID_RETENTION_SECONDS=86400 USAGE_RAW_QUEUES=3",
    );
  });
});

describe("counter shards in the capacity model", () => {
  const REQUESTS = "DO ~1,000 requests/s: the busiest tenant's counter";
  const WRITER = "DO single writer: the busiest tenant's counter";
  const STORAGE = "DO storage (10 GB per object): the busiest tenant's counter";
  const FLUSH =
    "DO subrequests (10,000 per invocation): one flush alarm of the busiest tenant's counter";
  // 100,000 events/s of the busiest tenant over 64 log shards, an hour of ids, a 1-s flush.
  const sharded = (hotCounterShards: number, overrides: Partial<CapacityInput> = {}) =>
    input({
      tenants: 1,
      eps: 100_000,
      hotShare: 1,
      hotShards: 64,
      rawQueues: 8,
      flushSeconds: 1,
      leaseSeconds: 2,
      hotCounterShards,
      ...overrides,
    });
  const use = (value: CapacityInput, start: string) => row(capacityRows(value), start).use;

  it("gives each counter shard its part of the tenant's remembered ids and records", () => {
    const ids = (shards: number) => 100_000 / shards;
    for (const shards of [1, 4, 16]) {
      expect(use(sharded(shards), STORAGE)).toBeCloseTo(
        (ids(shards) * 3_600 * COSTS.counterIdBytes) / LIMITS.durableObjectBytes,
        9,
      );
    }
    // The thread's records split alike; shard 0 also answers the others' syncs.
    const records = (shards: number) =>
      (ids(shards) * (COSTS.counterMsPerEvent + COSTS.counterForgetMsPerEvent)) / 1000;
    expect(use(sharded(1), WRITER)).toBeCloseTo(records(1), 9);
    const sync = 15 * (1 / 1 + 1 / 2);
    expect(use(sharded(16), WRITER)).toBeCloseTo(
      records(16) + (sync * COSTS.counterMsPerConsume) / 1000,
      9,
    );
    // Log shard s is recorded by counter shard s mod N: past 64, the rest record nothing.
    expect(use(sharded(128), STORAGE)).toBeCloseTo(use(sharded(64), STORAGE), 9);
  });

  it("spreads consumes and checks over every counter shard", () => {
    const calls = (shards: number) =>
      use(sharded(shards, { consumes: 8_000, checks: 4_000 }), REQUESTS) -
      use(sharded(shards), REQUESTS);
    expect(calls(1)).toBeCloseTo(12_000 / 1000, 9);
    // With traffic of their own, the shards that record nothing sync with shard 0 too.
    const shards = 128;
    const extraSync = (shards - 64) * (1 / 1 + 1 / 2);
    expect(calls(shards)).toBeCloseTo((12_000 / shards + extraSync) / 1000, 9);
  });

  it("charges shard 0 a sync per flush interval and a lease per lease interval of every other shard", () => {
    for (const shards of [2, 10, 40]) {
      const value = sharded(shards);
      const sync = (shards - 1) * (1 / value.flushSeconds + 1 / value.leaseSeconds);
      expect(shardZeroSyncRequests(value, "busiest")).toBeCloseTo(sync, 9);
      expect(use(value, REQUESTS)).toBeCloseTo(
        (recordCallsPerShard(value, "busiest") + sync) / LIMITS.durableObjectRequestsPerSecond,
        9,
      );
    }
    expect(shardZeroSyncRequests(sharded(1), "busiest")).toBe(0);
    // A longer lease interval or flush interval takes load off shard 0.
    expect(shardZeroSyncRequests(sharded(10, { leaseSeconds: 10 }), "busiest")).toBeCloseTo(
      9 * (1 + 0.1),
      9,
    );
    expect(row(capacityRows(sharded(10)), REQUESTS).limit).toContain(
      "the busiest tenant's counter, shard 0 of 10",
    );
  });

  it("counts a record call per validation batch and counter shard, at most one per envelope", () => {
    // Counter shard c records log shards c, c + 7, ...: on all 8 raw queues, a call per batch of each.
    const value = sharded(7);
    const batches = validationBatchesPerSecond(busiestRawQueueRate(value));
    const envelopes = (100 * messagesPerRequest(64, value)) / 7;
    expect(8 * batches).toBeLessThan(envelopes);
    expect(recordCallsPerShard(value, "busiest")).toBeCloseTo(8 * batches, 9);
    // Few events: fewer envelopes than batches, a call per envelope at most.
    const quiet = sharded(64, { eps: 2_000 });
    const quietEnvelopes = (2 * messagesPerRequest(64, quiet)) / 64;
    expect(quietEnvelopes).toBeLessThan(validationBatchesPerSecond(busiestRawQueueRate(quiet)));
    expect(recordCallsPerShard(quiet, "busiest")).toBeCloseTo(quietEnvelopes, 9);
  });

  it("sends a counter shard's log shards to one raw queue when its count is a multiple of the queues'", () => {
    // Log shard s: queue (h + s) mod Q, counter shard s mod N.
    expect(queuesOfCounterShard(sharded(8), "busiest")).toBe(1);
    expect(queuesOfCounterShard(sharded(16), "busiest")).toBe(1);
    expect(queuesOfCounterShard(sharded(4), "busiest")).toBe(2);
    expect(queuesOfCounterShard(sharded(6), "busiest")).toBe(4);
    expect(queuesOfCounterShard(sharded(7), "busiest")).toBe(8);
    // Never more queues than the log shards it records.
    expect(queuesOfCounterShard(sharded(7, { rawQueues: 64 }), "busiest")).toBe(10);
    const batches = validationBatchesPerSecond(busiestRawQueueRate(sharded(8)));
    expect(recordCallsPerShard(sharded(8), "busiest")).toBeCloseTo(batches, 9);
    expect(recordCallsPerShard(sharded(7), "busiest")).toBeCloseTo(8 * batches, 9);
  });

  it("keeps the counter shard count within the code's bound", () => {
    // Read as text: the module needs the Workers runtime's types.
    const product = readFileSync(
      path.join(import.meta.dirname, "../shared/src/billing/counter-shards.ts"),
      "utf8",
    );
    expect(product).toContain(`export const MAX_COUNTER_SHARDS = ${MAX_COUNTER_SHARDS};`);
    expect(parseInput(["--hot-counter-shards=500"]).input.hotCounterShards).toBe(
      MAX_COUNTER_SHARDS,
    );
  });

  it("has each counter shard's flush claim only in the log shards it records", () => {
    // 100,000 events a second over one counter: 20 rounds of 5,000, each claiming in all 64 log shards.
    expect(flushAlarmSubrequests(sharded(1), "busiest")).toBe(20 * (2 * 64 + 1));
    // Over 16: 6,250 events a second each, 2 rounds over its 4 log shards, and its sync.
    expect(flushAlarmSubrequests(sharded(16), "busiest")).toBe(2 * (2 * 4 + 1) + 1);
    expect(use(sharded(16), FLUSH)).toBeCloseTo(19 / LIMITS.subrequestsPerInvocation, 9);
    // Every counter shard flushes to D1 on its own.
    expect(allFlushesPerSecond(sharded(1))).toBe(20);
    expect(allFlushesPerSecond(sharded(16))).toBe(32);
    expect(allFlushesPerSecond(sharded(64))).toBe(64);
  });

  it("picks the fewest counter shards that keep the busiest tenant's counter at or below half", () => {
    const base = sharded(1, { consumes: 5_000 });
    const shards = autoCounterShards(base, "busiest");
    const worst = (count: number) =>
      Math.max(
        ...counterTerms("busiest").map((term) => term.use({ ...base, hotCounterShards: count })),
      );
    expect(shards).toBeGreaterThan(1);
    expect(worst(shards)).toBeLessThanOrEqual(0.5);
    for (let fewer = 1; fewer < shards; fewer++) expect(worst(fewer)).toBeGreaterThan(0.5);
    // Shard 0's syncs grow with the count: with no count at half, the one with the lowest worst row.
    const crowded = { ...base, consumes: 30_000, flushSeconds: 0.1, leaseSeconds: 0.1 };
    const best = autoCounterShards(crowded, "busiest");
    const crowdedWorst = (count: number) =>
      Math.max(
        ...counterTerms("busiest").map((term) => term.use({ ...crowded, hotCounterShards: count })),
      );
    expect(best).toBeLessThan(MAX_COUNTER_SHARDS);
    expect(crowdedWorst(best)).toBeGreaterThan(0.5);
    for (let count = 1; count <= MAX_COUNTER_SHARDS; count++) {
      expect(crowdedWorst(best)).toBeLessThanOrEqual(crowdedWorst(count));
    }
  });

  it("reads the counter settings, auto and a tenant's entry after a change", () => {
    const { input: defaults } = parseInput(["--tenants=10", "--eps=100"]);
    expect(defaults).toMatchObject({
      counterShards: 1,
      hotCounterShards: 1,
      leaseSeconds: 1,
      consumes: 0,
      checks: 0,
    });
    const { input: set, settings } = parseInput([
      "--tenants=1",
      "--eps=100000",
      "--consumes=10000",
      "--checks=500",
      "--hot-shards=64",
      "--set=USAGE_COUNTER_TENANT_SHARDS=auto",
      "--set=USAGE_COUNTER_LEASE_INTERVAL_MS=5000",
    ]);
    expect(set).toMatchObject({ consumes: 10_000, checks: 500, leaseSeconds: 5 });
    expect(set.hotCounterShards).toBe(autoCounterShards(set, "busiest"));
    expect(settings.USAGE_COUNTER_TENANT_SHARDS).toBe(String(set.hotCounterShards));
    expect(report(set)).toContain(
      `USAGE_COUNTER_TENANT_SHARDS={"<busiest tenant>": ${set.hotCounterShards}}`,
    );
    expect(report(set)).toContain(`and ${set.hotCounterShards} counter shards`);
    const { input: changed } = parseInput([
      '--set=USAGE_COUNTER_TENANT_SHARDS={"shards": 4, "previous": 1}',
    ]);
    expect(changed.hotCounterShards).toBe(4);
    expect(() => parseInput(["--counter-shards=none"])).toThrow(
      "USAGE_COUNTER_SHARDS must be a positive number",
    );
    expect(() => parseInput(["--consumes=-1"])).toThrow(
      "--consumes must be zero or a positive number",
    );
  });
});

describe("envelopes of a tenant with many shards", () => {
  it("counts the shards a request reaches, one envelope each at least", () => {
    expect(touchedShards(1, 1000)).toBe(1);
    expect(touchedShards(4, 1000)).toBeCloseTo(4, 9);
    // 1,397 shards: a 1,000-event request reaches about 714 of them, 1.4 events each.
    expect(touchedShards(1397, 1000)).toBeCloseTo(1397 * (1 - (1 - 1 / 1397) ** 1000), 9);
    expect(Math.round(touchedShards(1397, 1000))).toBe(714);
    const value = input({ envelopeEvents: 100 });
    expect(messagesPerRequest(1397, value)).toBeCloseTo(touchedShards(1397, 1000), 9);
    // A fuller envelope cap does not merge one shard's 1.4 events with another's.
    expect(messagesPerRequest(1397, { ...value, envelopeEvents: 400 })).toBeCloseTo(
      messagesPerRequest(1397, value),
      9,
    );
    expect(messagesPerRequest(1, value)).toBe(10);
    expect(messagesPerRequest(1, { ...value, envelopeEvents: 400 })).toBe(3);
  });

  it("puts the busiest tenant's small envelopes on the raw queues", () => {
    const value = input({ tenants: 1, eps: 100_000, hotShare: 1, hotShards: 1397, rawQueues: 40 });
    const perShard = (100 * touchedShards(1397, 1000)) / 1397;
    // 35 of the 1,397 shards on the busiest queue.
    expect(busiestRawQueueRate(value)).toBeCloseTo(35 * perShard, 6);
    expect(row(capacityRows(value), "Queues: 5,000 messages/s").use).toBeCloseTo(
      (35 * perShard) / LIMITS.queueMessagesPerSecond,
      9,
    );
  });
});

describe("meter state in the capacity model", () => {
  const COUNTER_ROW = "DO storage (10 GB per object): the busiest tenant's counter";
  // The current monthly window and those ended within the 35-day sweep.
  const windows = 1 + 35 / 30;
  const docs = readFileSync(path.join(import.meta.dirname, "../docs/capacity.md"), "utf8");
  const millions = (values: number) => `${(values / 1e6).toPrecision(3)} million`;

  it("grows the busiest counter's storage linearly with its distinct values, over the windows it keeps", () => {
    const use = (distinctValues: number) =>
      row(capacityRows(input({ distinctValues, meterGroups: 1000 })), COUNTER_ROW).use;
    const step = use(2_000_000) - use(1_000_000);
    expect(use(1_000_000) - use(0)).toBeCloseTo(step, 9);
    expect(step).toBeCloseTo(
      (1_000_000 * windows * COSTS.meterValueBytes) / LIMITS.durableObjectBytes,
      9,
    );
    // The groups come on top of the remembered ids even without distinct values.
    const idsOnly = row(capacityRows(input()), COUNTER_ROW).use;
    expect(use(0) - idsOnly).toBeCloseTo(
      (1000 * windows * COSTS.meterGroupRowBytes) / LIMITS.durableObjectBytes,
      9,
    );
    expect(row(capacityRows(input({ distinctValues: 1 })), COUNTER_ROW).limit).toContain(
      "for 2.17 windows",
    );
  });

  it("reaches half the counter's 10 GB at the distinct-value count docs/capacity.md gives", () => {
    const groups = { tenants: 1000, retentionDays: 35, distinctValues: 0, meterGroups: 1000 };
    // Meter state alone: a counter that remembers its ids for next to no time.
    const alone = distinctValuesAt(0.5, LIMITS.durableObjectBytes, groups);
    const quiet = input({ counterIdDays: 1e-12, meterGroups: 1000 });
    expect(row(capacityRows({ ...quiet, distinctValues: alone }), COUNTER_ROW).use).toBeCloseTo(
      0.5,
      4,
    );
    expect(docs).toContain(`about ${millions(alone)} distinct values a window`);
    // Next to an hour of ids at 10,000 events/s (the documented configuration).
    const ids = 10_000 * 3_600 * COSTS.counterIdBytes;
    const busy = distinctValuesAt(0.5, LIMITS.durableObjectBytes, groups, ids);
    expect(
      row(capacityRows(input({ distinctValues: busy, meterGroups: 1000 })), COUNTER_ROW).use,
    ).toBeCloseTo(0.5, 4);
    expect(docs).toContain(`${millions(busy)} with the busiest tenant's hour of ids`);
  });

  it("adds to D1's size a usage_meter_groups row per group, window and tenant over the horizon", () => {
    const size = (meterGroups: number) =>
      row(capacityRows(input({ flushSeconds: 1, meterGroups })), "D1 database size").use;
    expect(size(1000) - size(0)).toBeCloseTo(
      (1000 * 1000 * windows * COSTS.d1MeterGroupRowBytes) / LIMITS.d1DatabaseBytes,
      9,
    );
  });

  it("states the bound on group combinations and where further ones count", () => {
    expect(MAX_GROUP_COMBINATIONS).toBe(PRODUCT_MAX_GROUP_COMBINATIONS);
    const text = report(input({ distinctValues: 100_000, meterGroups: 1000 }));
    expect(text).toContain("at most 1,000 (MAX_GROUP_COMBINATIONS) per feature and window");
    expect(text).toContain("in the overflow group '*'");
    expect(docs).toContain("`MAX_GROUP_COMBINATIONS`");
  });

  it("reads the meter inputs, zero included", () => {
    const { input: defaults } = parseInput([]);
    expect(defaults).toMatchObject({ distinctValues: 100_000, meterGroups: 1000 });
    const { input: none } = parseInput(["--distinct-values=0", "--meter-groups=0"]);
    expect(none).toMatchObject({ distinctValues: 0, meterGroups: 0 });
    expect(() => parseInput(["--meter-groups=-1"])).toThrow(
      "--meter-groups must be zero or a positive number",
    );
  });
});

describe("measured costs", () => {
  it("match what the usage log's own statements store today (dbstat)", async () => {
    const measured = await measureUsageLog({ events: 12_000, fileEvents: 4_000, d1Flushes: 400 });
    // Bytes depend on the schema, not on the machine: the model's inputs stay within a tenth of them.
    expect(measured.hotEventBytes).toBeGreaterThan(COSTS.hotEventBytes * 0.9);
    expect(measured.hotEventBytes).toBeLessThan(COSTS.hotEventBytes * 1.1);
    expect(measured.eventIdBytes).toBeGreaterThan(COSTS.eventIdBytes * 0.9);
    expect(measured.eventIdBytes).toBeLessThan(COSTS.eventIdBytes * 1.1);
    expect(measured.counterIdBytes).toBeGreaterThan(COSTS.counterIdBytes * 0.9);
    expect(measured.counterIdBytes).toBeLessThan(COSTS.counterIdBytes * 1.1);
    expect(measured.d1FlushRowBytes).toBeGreaterThan(COSTS.d1FlushRowBytes * 0.9);
    expect(measured.d1FlushRowBytes).toBeLessThan(COSTS.d1FlushRowBytes * 1.1);
    expect(measured.shardMsPerEvent.total).toBeGreaterThan(0);
    expect(measured.counterForgetMsPerEvent).toBeGreaterThan(0);
    expect(measured.d1MsPerPrunedFlush).toBeGreaterThan(0);
    expect(measured.parquetBytesPerEvent).toBeGreaterThan(10);
  }, 60_000);

  it("match what the counter's meter groups and D1's fold store today (dbstat)", async () => {
    const measured = await measureMeters({ values: 5_000, groupWindows: 2, d1Flushes: 3 });
    const near = (value: number, model: number) => {
      expect(value).toBeGreaterThan(model * 0.9);
      expect(value).toBeLessThan(model * 1.1);
    };
    near(measured.groupedValueBytes, COSTS.meterValueBytes);
    near(measured.groupRowBytes, COSTS.meterGroupRowBytes);
    near(measured.d1GroupRowBytes, COSTS.d1MeterGroupRowBytes);
    // The ungrouped key is shorter: its rows are smaller than the model's.
    expect(measured.valueBytes).toBeLessThan(measured.groupedValueBytes);
    expect(measured.maxGroupCombinations).toBe(MAX_GROUP_COMBINATIONS);
    expect(measured.placeMsPerEvent.newValue).toBeGreaterThan(measured.placeMsPerEvent.known);
    expect(measured.placeMsPerEvent.overflow).toBeGreaterThan(0);
  }, 60_000);
});
