/**
 * `npm run bench -- usage-log-growth`: one usage-log shard's cost per event
 * as its log grows, the same measurement as `npm run capacity -- --measure`
 * (scripts/lib/capacity-measure-growth.ts): the product's store on a
 * file-backed SQLite database (WAL, SQLite's default 2,000 KiB page cache),
 * grown through its own archived-id index to each size, then 1,000-event
 * batches of the ingestion cycle (insert with the duplicate guard,
 * validation read, claim, finish) and a file archived every 10,000. Each
 * size is timed in rounds alternating with a fresh empty shard in its own
 * database (the baseline shares no table or cache with the grown shard);
 * the figure is the median ratio, the raw CPU time per event beside it.
 * A second measurement merges past days into one table each, as the alarm
 * does two hours after a day ends, and gives what each costs.
 *
 * Environment: BENCH_GROWTH_SIZES (stored ids, comma-separated; default
 * 0,500000,1000000,2000000,3000000,10000000), BENCH_GROWTH_ROUNDS
 * (default 9), BENCH_GROWTH_PASSES (default 3: each grows a shard of its
 * own; the figure is the median of the passes), BENCH_PAST_DAYS and BENCH_PAST_DAY_IDS (default 4 days of
 * 2,500,000 ids). The target: at 3,000,000 stored ids within 1.1x of an
 * empty shard.
 */
import { measurePastDays, measureShardGrowth } from "../scripts/lib/capacity-measure-growth.ts";
import {
  atMost,
  type BenchmarkRow,
  count,
  startBenchmarkReport,
  times,
} from "./lib/benchmarks-doc.ts";

const SIZES = (process.env.BENCH_GROWTH_SIZES ?? "0,500000,1000000,2000000,3000000,10000000")
  .split(",")
  .map(Number);
const ROUNDS = Number(process.env.BENCH_GROWTH_ROUNDS ?? 9);
const PASSES = Number(process.env.BENCH_GROWTH_PASSES ?? 3);
const PAST_DAYS = Number(process.env.BENCH_PAST_DAYS ?? 4);
const PAST_DAY_IDS = Number(process.env.BENCH_PAST_DAY_IDS ?? 2_500_000);
const TARGET_RATIO = 1.1;
const TARGET_IDS = 3_000_000;

const report = startBenchmarkReport("usage-log-growth");
const growth = await measureShardGrowth({ sizes: SIZES, rounds: ROUNDS, passes: PASSES });
const past = await measurePastDays({
  days: PAST_DAYS,
  idsPerDay: PAST_DAY_IDS,
  rounds: ROUNDS,
  passes: PASSES,
});
const passes = (ratios: number[]) => ratios.map((ratio) => ratio.toFixed(2)).join(", ");

const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;
const rows: BenchmarkRow[] = growth.points.map((point) => ({
  benchmark: `one shard, ${count(point.storedIds)} ids stored (${(point.fileBytes / 1e6).toFixed(1)} MB file)`,
  figure: `${us(point.msPerEvent.total)}/event (insert ${us(point.msPerEvent.insert)}, archive ${us(point.msPerEvent.archive)})`,
  ratio: times(point.ratio),
  baseline: `an empty shard in the same rounds, ${us(point.emptyMsPerEvent.total)}/event; passes ${passes(point.passRatios)}`,
  ...(point.storedIds === TARGET_IDS ? { target: atMost(point.ratio, TARGET_RATIO) } : {}),
}));
rows.push({
  benchmark: `one shard with ${PAST_DAYS} past days of ${count(PAST_DAY_IDS)} ids, each merged into one table`,
  figure: `${times(past.ratioPerDay, 3)} of an empty shard's cost per day`,
  ratio: times(past.ratio),
  baseline: `an empty shard in the same rounds; passes ${passes(past.passRatios)}`,
});

report.record({
  title: "Usage log: a shard's cost per event as its log grows",
  method: `CPU time of the product's shard statements (workers/billing/src/usage/log/storage.ts) on node:sqlite, a file-backed database in WAL mode with SQLite's default page cache (${count(growth.cacheKiB)} KiB, ${count(growth.pageBytes)}-byte pages). The shard is grown through its archived-id index in files of 10,000 random UUID v4 eventIds of one day (segments of ${count(growth.segmentIds)} ids with filters), then ${growth.rounds} rounds of ${count(growth.eventsPerRound)} events each (1,000-event batches: insert with the duplicate guard, outbox send, validation read, claim, finish, and one archive file without its Parquet encoding) alternate with an empty shard on its own database (empty, grown, grown, empty, half a round each). Each of ${growth.passes} passes grows a shard of its own; a pass's ratio is the median of its rounds', the figure the median of the passes' (a shared machine's speed drifts, and passes differ by more than rounds do).`,
  rows,
  notes: [
    "The file size grows about 17 bytes per id (the segments) and 2 bytes per id of the current day's filters; the filters live in memory, so the capacity model bounds them per shard (docs/capacity.md).",
    "Past days are looked up without a filter: each adds the share above per batch, which the capacity model counts for every day of the retention window.",
  ],
});
