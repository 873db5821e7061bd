/**
 * A shard's cost per event as its log grows: the product's store
 * (workers/billing/src/usage/log/storage.ts) on a file-backed node:sqlite
 * database in WAL mode, as a Durable Object's SQLite is, with SQLite's
 * default page cache (2,000 KiB). The shard is grown through its own
 * archived-id index (files of 10,000 ids, one day of receipt, as a burst
 * fills it) to each size; there, 1,000-event batches run the ingestion
 * cycle (insert with the duplicate guard, validation read, claim, finish)
 * and archive a file each 10,000.
 *
 * The machine's speed drifts (a shared 2-core VM), so each size is timed
 * in rounds alternating with a fresh, empty shard: the ratio of each pair
 * is what grows, its median the figure; the raw CPU time per event is
 * printed beside it.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import {
  archiveShardFile,
  runShardBatch,
  type ShardRun,
  type ShardStep,
  sqlStorage,
  stepTimer,
  transaction,
  type UsageLogStoreApi,
} from "./capacity-measure.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");
const FILE_IDS = 10_000;
const DAY = "2026-11-20";

interface IndexApi {
  addFile(fileId: number, day: string, eventIds: string[]): void;
}

async function modules() {
  const log = path.join(ROOT, "workers/billing/src/usage/log");
  const storage = (await import(path.join(log, "storage.ts"))) as {
    UsageLogStore: new (sql: unknown) => UsageLogStoreApi;
  };
  const index = (await import(path.join(log, "id-index.ts"))) as {
    EventIdIndex: new (sql: unknown, hash: unknown) => IndexApi;
    SEGMENT_IDS: number;
  };
  const hash = (await import(path.join(log, "event-id-hash.ts"))) as { eventIdHash: unknown };
  return { ...storage, ...index, ...hash };
}

export interface GrowthPoint {
  storedIds: number;
  /** The database file (WAL checkpointed), bytes. */
  fileBytes: number;
  /** CPU ms per event of each step at this size, median of the rounds. */
  msPerEvent: Record<ShardStep, number> & { total: number };
  /** The same for the empty shard in the same rounds. */
  emptyMsPerEvent: Record<ShardStep, number> & { total: number };
  /** Median over the passes of each pass's median round ratio (this size's total / the empty shard's). */
  ratio: number;
  /** Each pass's ratio. */
  passRatios: number[];
}

export interface GrowthMeasurement {
  cacheKiB: number;
  pageBytes: number;
  segmentIds: number;
  rounds: number;
  eventsPerRound: number;
  passes: number;
  points: GrowthPoint[];
}

type Modules = Awaited<ReturnType<typeof modules>>;

/** A shard on its own database file in `dir` (`prepare` runs before the store opens it). */
function openShard(
  dir: string,
  name: string,
  { UsageLogStore }: Modules,
  prepare: (db: DatabaseSync) => void = () => {},
) {
  const file = path.join(dir, `${name}.sqlite`);
  const db = new DatabaseSync(file);
  db.exec("PRAGMA journal_mode = WAL");
  prepare(db);
  const sql = sqlStorage(db, { cacheStatements: true });
  const store = new UsageLogStore(sql);
  const shard: ShardRun = {
    db,
    store,
    tenantId: crypto.randomUUID(),
    subscriptionId: crypto.randomUUID(),
    clock: Date.parse(`${DAY}T10:00:00.000Z`),
  };
  return { file, sql, shard };
}

/** Grows a shard's archived-id index by `ids` ids, in files of FILE_IDS, as its archive would. */
function grow(
  opened: ReturnType<typeof openShard>,
  ids: number,
  { EventIdIndex, eventIdHash }: Modules,
): void {
  if (ids <= 0) return;
  const { db } = opened.shard;
  const index = new EventIdIndex(opened.sql, eventIdHash);
  for (let done = 0; done < ids; done += FILE_IDS) {
    const fileId = Number(
      (
        db
          .prepare(
            `INSERT INTO files (key, status, day, first_id, last_id, first_received, last_received, events, created_ms)
             VALUES (?, 'DONE', ?, 'a', 'b', ?, ?, ?, 0) RETURNING id`,
          )
          .get(
            `grown-${crypto.randomUUID()}`,
            DAY,
            `${DAY}T00:00:00.000Z`,
            `${DAY}T00:00:00.000Z`,
            FILE_IDS,
          ) as {
          id: number;
        }
      ).id,
    );
    const eventIds = Array.from({ length: Math.min(FILE_IDS, ids - done) }, () =>
      crypto.randomUUID(),
    );
    transaction(db, () => index.addFile(fileId, DAY, eventIds));
  }
}

/** Runs `events` events through a shard (batches of 1,000, a file each FILE_IDS) and times each step. */
function timeShard(shard: ShardRun, events: number): Record<ShardStep, number> {
  const { time, timed } = stepTimer();
  for (let done = 0; done < events; done += 1_000) {
    runShardBatch(shard, 1_000, timed);
    const finished = (finishedEvents.get(shard) ?? 0) + 1_000;
    finishedEvents.set(shard, finished % FILE_IDS);
    if (finished >= FILE_IDS) archiveShardFile(shard, FILE_IDS, timed);
  }
  return time;
}

/** Events each shard has finished since its last archive file. */
const finishedEvents = new WeakMap<ShardRun, number>();

const addSteps = (a: Record<ShardStep, number>, b: Record<ShardStep, number>) =>
  Object.fromEntries(
    (Object.keys(a) as ShardStep[]).map((step) => [step, a[step] + b[step]]),
  ) as Record<ShardStep, number>;

/**
 * One round: the empty shard, the measured one, the measured one, the
 * empty one (half a round's events each), so that a drift of the
 * machine's speed within the round weighs on both alike.
 */
function timeRound(empty: ShardRun, measured: ShardRun, events: number) {
  const half = Math.max(1_000, Math.round(events / 2_000) * 1_000);
  const first = timeShard(empty, half);
  const measuredTime = addSteps(timeShard(measured, half), timeShard(measured, half));
  return { empty: addSteps(first, timeShard(empty, half)), measured: measuredTime };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

/** Each step's median over the rounds, per event, and their sum. */
function perEvent(rounds: Record<ShardStep, number>[], events: number) {
  const steps = Object.fromEntries(
    (Object.keys(rounds[0] ?? {}) as ShardStep[]).map((step) => [
      step,
      median(rounds.map((time) => time[step] / events)),
    ]),
  ) as Record<ShardStep, number>;
  return { ...steps, total: Object.values(steps).reduce((a, b) => a + b, 0) };
}

/**
 * The cost curve: for each size in `sizes` (ascending), `rounds` rounds of
 * `eventsPerRound` events on the grown shard and on an empty one, in turn.
 */
export async function measureShardGrowth(
  options: { sizes?: number[]; rounds?: number; eventsPerRound?: number; passes?: number } = {},
): Promise<GrowthMeasurement> {
  const sizes = options.sizes ?? [0, 500_000, 1_000_000, 2_000_000, 3_000_000, 10_000_000];
  const rounds = options.rounds ?? 9;
  const eventsPerRound = options.eventsPerRound ?? FILE_IDS;
  const passes = options.passes ?? 3;
  const mods = await modules();
  const samples = sizes.map(() => ({
    steps: [] as Steps[],
    empty: [] as Steps[],
    ratios: [] as number[],
  }));
  const fileBytes: number[] = [];
  let settings = { cacheKiB: 0, pageBytes: 0 };
  // Each pass grows a shard of its own from empty: passes differ by more than rounds do.
  for (let pass = 0; pass < passes; pass++) {
    const dir = mkdtempSync(path.join(tmpdir(), "shard-growth-"));
    try {
      const grown = openShard(dir, "grown", mods);
      settings = pageCache(grown.shard.db);
      let stored = 0;
      for (const [index, size] of sizes.entries()) {
        grow(grown, size - stored, mods);
        stored = Math.max(stored, size);
        grown.shard.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
        const sample = samples[index] as (typeof samples)[number];
        sample.ratios.push(
          timeRounds(openShard(dir, `empty-${size}`, mods).shard, grown.shard, {
            rounds,
            eventsPerRound,
            into: sample,
          }),
        );
        grown.shard.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
        fileBytes[index] = statSync(grown.file).size;
      }
      grown.shard.db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return {
    ...settings,
    segmentIds: mods.SEGMENT_IDS,
    rounds,
    eventsPerRound,
    passes,
    points: sizes.map((size, index) => {
      const sample = samples[index] as (typeof samples)[number];
      return {
        storedIds: size,
        fileBytes: fileBytes[index] ?? 0,
        msPerEvent: perEvent(sample.steps, eventsPerRound),
        emptyMsPerEvent: perEvent(sample.empty, eventsPerRound),
        ratio: median(sample.ratios),
        passRatios: sample.ratios,
      };
    }),
  };
}

type Steps = Record<ShardStep, number>;

function pageCache(db: DatabaseSync) {
  const pragma = (name: string) =>
    Number(Object.values(db.prepare(`PRAGMA ${name}`).get() ?? {})[0]);
  const cache = pragma("cache_size");
  const pageBytes = pragma("page_size");
  return { cacheKiB: cache < 0 ? -cache : (cache * pageBytes) / 1024, pageBytes };
}

/**
 * A round not counted (both shards' statements prepared and pages read
 * once), then `rounds` rounds; each round's steps go `into` the samples.
 * Returns the median of the rounds' ratios. Closes the empty shard.
 */
function timeRounds(
  empty: ShardRun,
  measured: ShardRun,
  options: { rounds: number; eventsPerRound: number; into?: { steps: Steps[]; empty: Steps[] } },
): number {
  const sum = (time: Steps) => Object.values(time).reduce((a, b) => a + b, 0);
  timeRound(empty, measured, options.eventsPerRound);
  const ratios: number[] = [];
  for (let round = 0; round < options.rounds; round++) {
    const times = timeRound(empty, measured, options.eventsPerRound);
    options.into?.steps.push(times.measured);
    options.into?.empty.push(times.empty);
    ratios.push(sum(times.measured) / sum(times.empty));
  }
  empty.db.close();
  return median(ratios);
}

export interface PastDaysMeasurement {
  days: number;
  idsPerDay: number;
  /** Median over the passes (a fresh shard each) of the median round ratio: the shard's total / an empty shard's. */
  ratio: number;
  /** What each merged past day adds, as a share of an empty shard's cost per event. */
  ratioPerDay: number;
  /** Each pass's ratio (a fresh shard each), of which `ratio` is the median. */
  passRatios: number[];
}

/**
 * A shard whose past days are merged (one table each, no filter: every
 * batch's ids are looked up in each), timed as the curve is.
 */
export async function measurePastDays(
  options: {
    days?: number;
    idsPerDay?: number;
    rounds?: number;
    eventsPerRound?: number;
    passes?: number;
  } = {},
): Promise<PastDaysMeasurement> {
  const days = options.days ?? 4;
  const idsPerDay = options.idsPerDay ?? 2_500_000;
  const rounds = options.rounds ?? 9;
  const eventsPerRound = options.eventsPerRound ?? FILE_IDS;
  const passes = options.passes ?? 3;
  const mods = await modules();
  const ratios: number[] = [];
  for (let pass = 0; pass < passes; pass++) {
    const dir = mkdtempSync(path.join(tmpdir(), "shard-past-days-"));
    try {
      // The merged tables as compaction leaves them: random 64-bit hashes in key order.
      const past = openShard(dir, "past", mods, (db) => {
        for (let day = 1; day <= days; day++) {
          const table = `event_ids_202611${String(20 - day).padStart(2, "0")}_all`;
          db.exec(`CREATE TABLE ${table} (
            h INTEGER NOT NULL, file_id INTEGER NOT NULL, PRIMARY KEY (h, file_id)
          ) WITHOUT ROWID`);
          db.exec(`INSERT INTO ${table} (h, file_id)
            WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < ${idsPerDay})
            SELECT random() AS h, 1 FROM c ORDER BY h ON CONFLICT DO NOTHING`);
        }
        db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      });
      ratios.push(
        timeRounds(openShard(dir, "empty", mods).shard, past.shard, { rounds, eventsPerRound }),
      );
      past.shard.db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const ratio = median(ratios);
  return { days, idsPerDay, ratio, ratioPerDay: (ratio - 1) / days, passRatios: ratios };
}
