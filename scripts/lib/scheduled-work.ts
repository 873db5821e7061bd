/**
 * The Workers' Cron Triggers on the local stack. `wrangler dev` never fires
 * them by itself; it only runs a worker's scheduled handler when asked at
 * `/cdn-cgi/local/scheduled`. `npm run dev` (scripts/dev.ts) fires every
 * trigger on its schedule with a CronRunner; `npm run cron`
 * (scripts/cron.ts) fires them once, now or as if at a given time.
 *
 * The triggers are read from the wrangler configs (as wrangler reads them),
 * never listed here. What a run did comes from the one "scheduled run" line
 * the billing worker logs per run (workers/billing/src/platform/domain/scheduled-run.ts).
 */
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { ROOT } from "./wrangler.ts";

/** One `wrangler dev` process of the local stack. */
export interface LocalWorkerProcess {
  name: string;
  /** Where it listens, e.g. http://127.0.0.1:8787. */
  url: string;
  /** Its wrangler configs, relative to the repository root; the first one's worker gets the requests. */
  configs: readonly string[];
}

export interface CronTrigger {
  /** The worker's name in its config. */
  worker: string;
  config: string;
  cron: string;
  schedule: CronSchedule;
  /** The `wrangler dev` process whose port reaches the worker. */
  url: string;
}

// --- cron expressions ----------------------------------------------------

export interface CronSchedule {
  minutes: ReadonlySet<number>;
  hours: ReadonlySet<number>;
  daysOfMonth: ReadonlySet<number>;
  months: ReadonlySet<number>;
  /** 0 = Sunday. */
  daysOfWeek: ReadonlySet<number>;
  /** Both day fields restricted: either may match (cron's rule). */
  eitherDay: boolean;
}

const MONTH_NAMES = [
  "JAN",
  "FEB",
  "MAR",
  "APR",
  "MAY",
  "JUN",
  "JUL",
  "AUG",
  "SEP",
  "OCT",
  "NOV",
  "DEC",
];
const DAY_NAMES = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  /** Value of a name such as JAN or MON, if the field takes names. */
  named?: (name: string) => number | undefined;
  /** Numbers are refused (the field takes names only). */
  namesOnly?: string;
}

const FIELDS: FieldSpec[] = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  {
    name: "month",
    min: 1,
    max: 12,
    named: (name) => {
      const index = MONTH_NAMES.indexOf(name);
      return index < 0 ? undefined : index + 1;
    },
  },
  {
    name: "day of week",
    min: 0,
    max: 6,
    named: (name) => {
      const index = DAY_NAMES.indexOf(name);
      return index < 0 ? undefined : index;
    },
    // Cron dialects number the weekdays differently (0 or 1 for Sunday).
    namesOnly: "write days of the week as SUN-SAT, since cron dialects number them differently",
  },
];

export class CronExpressionError extends Error {}

function fieldValue(text: string, spec: FieldSpec, expression: string): number {
  const upper = text.toUpperCase();
  if (/^\d+$/.test(text)) {
    if (spec.namesOnly)
      throw new CronExpressionError(`"${expression}": ${spec.name} "${text}": ${spec.namesOnly}`);
    const value = Number(text);
    if (value < spec.min || value > spec.max)
      throw new CronExpressionError(
        `"${expression}": ${spec.name} ${value} is outside ${spec.min}-${spec.max}`,
      );
    return value;
  }
  const named = spec.named?.(upper);
  if (named === undefined)
    throw new CronExpressionError(
      `"${expression}": "${text}" is not a ${spec.name} the local cron runner understands (numbers, *, ranges a-b, steps /n, lists a,b${spec.named ? ", names" : ""})`,
    );
  return named;
}

function parseField(text: string, spec: FieldSpec, expression: string): Set<number> {
  const values = new Set<number>();
  for (const part of text.split(",")) {
    const [range = "", stepText, ...extra] = part.split("/");
    if (extra.length > 0 || range === "")
      throw new CronExpressionError(`"${expression}": ${spec.name} "${text}" is malformed`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d+$/.test(stepText) || Number(stepText) < 1)
        throw new CronExpressionError(
          `"${expression}": ${spec.name} step "${stepText}" is not a positive number`,
        );
      step = Number(stepText);
    }
    let from: number;
    let to: number;
    if (range === "*") {
      from = spec.min;
      to = spec.max;
    } else if (range.includes("-")) {
      const [start = "", end = "", ...more] = range.split("-");
      if (more.length > 0)
        throw new CronExpressionError(`"${expression}": ${spec.name} "${range}" is malformed`);
      from = fieldValue(start, spec, expression);
      to = fieldValue(end, spec, expression);
      if (from > to)
        throw new CronExpressionError(
          `"${expression}": ${spec.name} range "${range}" runs backwards`,
        );
    } else {
      from = fieldValue(range, spec, expression);
      // "5/15": from 5 to the end of the field in steps of 15.
      to = stepText === undefined ? from : spec.max;
    }
    for (let value = from; value <= to; value += step) values.add(value);
  }
  return values;
}

/** Parses a five-field cron expression (minute hour day-of-month month day-of-week, UTC). */
export function parseCron(expression: string): CronSchedule {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5)
    throw new CronExpressionError(
      `"${expression}" has ${fields.length} fields; a Cron Trigger has 5 (minute hour day-of-month month day-of-week)`,
    );
  const [minutes, hours, daysOfMonth, months, daysOfWeek] = fields.map((field, index) =>
    parseField(field, FIELDS[index] as FieldSpec, expression),
  ) as [Set<number>, Set<number>, Set<number>, Set<number>, Set<number>];
  return {
    minutes,
    hours,
    daysOfMonth,
    months,
    daysOfWeek,
    eitherDay: fields[2] !== "*" && fields[4] !== "*",
  };
}

/** Whether the schedule fires in the UTC minute that contains `at`. */
export function cronMatches(schedule: CronSchedule, at: Date): boolean {
  if (!schedule.minutes.has(at.getUTCMinutes())) return false;
  if (!schedule.hours.has(at.getUTCHours())) return false;
  if (!schedule.months.has(at.getUTCMonth() + 1)) return false;
  const dayOfMonth = schedule.daysOfMonth.has(at.getUTCDate());
  const dayOfWeek = schedule.daysOfWeek.has(at.getUTCDay());
  return schedule.eitherDay ? dayOfMonth || dayOfWeek : dayOfMonth && dayOfWeek;
}

/** The start of the next whole UTC minute after `at`. */
export function nextMinute(at: Date): Date {
  return new Date(Math.floor(at.getTime() / 60_000) * 60_000 + 60_000);
}

// --- the triggers in the configs -------------------------------------------

interface WorkerConfig {
  name?: string;
  triggers?: { crons?: string[] };
}

type ConfigReader = (configPath: string) => WorkerConfig | Promise<WorkerConfig>;

/** The config as `wrangler dev` reads it (wrangler's own reader; no environment selected). */
async function readWithWrangler(configPath: string): Promise<WorkerConfig> {
  const { unstable_readConfig } = await import("wrangler");
  return unstable_readConfig({ config: configPath }, { hideWarnings: true });
}

/**
 * Every Cron Trigger the local stack's configs declare. Only the first
 * worker of a `wrangler dev` process answers on its port, so a trigger in
 * any other config of a process cannot be fired: that is an error, not
 * something to skip quietly.
 */
export async function cronTriggersOf(
  processes: readonly LocalWorkerProcess[],
  readConfig: ConfigReader = readWithWrangler,
): Promise<CronTrigger[]> {
  const triggers: CronTrigger[] = [];
  for (const process of processes) {
    for (const [index, config] of process.configs.entries()) {
      const read = await readConfig(path.resolve(ROOT, config));
      const crons = read.triggers?.crons ?? [];
      if (crons.length === 0) continue;
      const worker = read.name ?? config;
      if (index > 0)
        throw new Error(
          `${config} declares Cron Triggers (${crons.join(", ")}), but only the first worker of the "${process.name}" wrangler dev process (${process.configs[0]}) can be triggered locally: start ${worker} first or in its own process`,
        );
      for (const cron of crons)
        triggers.push({ worker, config, cron, schedule: parseCron(cron), url: process.url });
    }
  }
  return triggers;
}

// --- firing ------------------------------------------------------------------

export class StackNotRunningError extends Error {}

/** The local runtime's endpoint that runs a worker's scheduled handler. */
export function scheduledUrl(trigger: Pick<CronTrigger, "url" | "cron">, at: Date): string {
  const query = new URLSearchParams({
    cron: trigger.cron,
    time: String(at.getTime()),
    format: "json",
  });
  return `${trigger.url}/cdn-cgi/local/scheduled?${query}`;
}

/**
 * Runs the trigger's scheduled handler as if at `at` (the controller's
 * scheduledTime). The local runtime answers once the handler and its
 * waitUntil work are done; a handler that threw is an error here.
 */
export async function fireTrigger(
  trigger: Pick<CronTrigger, "url" | "cron" | "worker">,
  at: Date,
  fetchImpl: typeof fetch = fetch,
): Promise<void> {
  let response: Response;
  try {
    response = await fetchImpl(scheduledUrl(trigger, at), { method: "GET" });
  } catch (error) {
    throw new StackNotRunningError(
      `nothing answers on ${trigger.url} (${errorText(error)}): start the local stack with \`npm run dev\` first`,
    );
  }
  const body = await response.text();
  if (response.status === 200) return;
  if (response.status === 404)
    throw new StackNotRunningError(
      `${trigger.url} answered 404 to the local scheduled endpoint: is it the local stack (\`npm run dev\`)?`,
    );
  throw new Error(
    `the scheduled handler of ${trigger.worker} (${trigger.cron}) failed: ${response.status} ${body.slice(0, 300)}`,
  );
}

function errorText(error: unknown): string {
  const cause = (error as { cause?: { code?: string } })?.cause?.code;
  return cause ?? (error instanceof Error ? error.message : String(error));
}

// --- what a run did ------------------------------------------------------------

/** The billing worker's per-run log line (workers/billing/src/platform/domain/scheduled-run.ts). */
export interface ScheduledRunRecord {
  level: string;
  msg: "scheduled run";
  cron: string;
  scheduledTime: string;
  durationMs: number;
  failedTasks: string[];
  [count: string]: unknown;
}

/** The run record in a line of the runtime's output, if the line is one. */
export function runRecordIn(line: string): ScheduledRunRecord | undefined {
  const start = line.indexOf('{"');
  if (start < 0 || !line.includes('"msg":"scheduled run"')) return undefined;
  try {
    const record = JSON.parse(line.slice(start)) as Partial<ScheduledRunRecord>;
    if (
      record.msg !== "scheduled run" ||
      typeof record.cron !== "string" ||
      typeof record.scheduledTime !== "string"
    )
      return undefined;
    return { failedTasks: [], durationMs: 0, level: "info", ...record } as ScheduledRunRecord;
  } catch {
    return undefined;
  }
}

/** Always shown, zero or not: the work a reader looks for first. */
const MAIN_COUNTS: [string, string][] = [
  ["periodsClosed", "periods closed"],
  ["finalInvoices", "final invoices"],
  ["paymentsAttempted", "payments attempted"],
  ["tenantEventsSent", "events sent"],
  ["usageEventsArchived", "usage events archived"],
];

/** Shown when not zero. */
const OTHER_COUNTS: [string, string][] = [
  ["trialsEnded", "trials ended"],
  ["periodsRolled", "periods started"],
  ["subscriptionsEnded", "subscriptions ended"],
  ["paymentRetries", "payment retries"],
  ["paymentsReconciled", "payments reconciled"],
  ["invoicesWrittenOff", "invoices written off"],
  ["usageEventsDeleted", "archived events deleted from D1"],
  ["idempotencyKeysPruned", "idempotency keys pruned"],
  ["webhookHistoryPruned", "webhook history rows pruned"],
  ["periodCloseFailures", "period closes failed"],
  ["billingFailures", "billing steps failed"],
];

/** One human line for a run record. */
export function describeRun(record: ScheduledRunRecord): string {
  const count = (key: string) => (typeof record[key] === "number" ? (record[key] as number) : 0);
  const parts = MAIN_COUNTS.map(([key, label]) => `${label} ${count(key)}`);
  for (const [key, label] of OTHER_COUNTS) if (count(key) > 0) parts.push(`${label} ${count(key)}`);
  if (record.failedTasks.length > 0) parts.push(`FAILED: ${record.failedTasks.join(", ")}`);
  return `${record.scheduledTime} "${record.cron}" in ${record.durationMs} ms: ${parts.join(", ")}`;
}

/**
 * Run records seen in the runtime's output, for whoever fired the run and
 * waits to learn what it did.
 */
export class RunRecords {
  private readonly waiting = new Map<string, ((record: ScheduledRunRecord) => void)[]>();

  private static key(cron: string, scheduledTime: string): string {
    return `${cron}\u0000${scheduledTime}`;
  }

  /** Feeds one output line; returns the record if it is one. */
  see(line: string): ScheduledRunRecord | undefined {
    const record = runRecordIn(line);
    if (!record) return undefined;
    const key = RunRecords.key(record.cron, record.scheduledTime);
    const waiters = this.waiting.get(key) ?? [];
    this.waiting.delete(key);
    for (const resolve of waiters) resolve(record);
    return record;
  }

  /** The record of the run of `cron` at `at`, or undefined after `timeoutMs`. */
  waitFor(cron: string, at: Date, timeoutMs: number): Promise<ScheduledRunRecord | undefined> {
    const key = RunRecords.key(cron, at.toISOString());
    return new Promise((resolve) => {
      const done = (record: ScheduledRunRecord | undefined) => {
        clearTimeout(timer);
        const left = (this.waiting.get(key) ?? []).filter((waiter) => waiter !== done);
        if (left.length > 0) this.waiting.set(key, left);
        else this.waiting.delete(key);
        resolve(record);
      };
      const timer = setTimeout(() => done(undefined), timeoutMs);
      timer.unref?.();
      this.waiting.set(key, [...(this.waiting.get(key) ?? []), done]);
    });
  }
}

/**
 * The log of run records `npm run dev` keeps in its state directory, so
 * that `npm run cron`, a separate process, can tell what its run did.
 */
export const RUN_LOG_FILE = "scheduled-runs.ndjson";

/** Empties the run log: each `npm run dev` keeps only its own runs. */
export function startRunLog(file: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, "");
}

export function appendRunRecord(file: string, record: ScheduledRunRecord): void {
  appendFileSync(file, `${JSON.stringify(record)}\n`);
}

/** Where the run log ends now (read from there after firing). */
export function runLogEnd(file: string): number {
  return existsSync(file) ? statSync(file).size : 0;
}

/** The run records written to the log after byte `from`. */
export function runRecordsSince(file: string, from: number): ScheduledRunRecord[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file).subarray(from).toString("utf8");
  return text
    .split("\n")
    .map((line) => runRecordIn(line))
    .filter((record): record is ScheduledRunRecord => record !== undefined);
}

// --- on a schedule -----------------------------------------------------------------

export interface CronRunnerOptions {
  triggers: readonly CronTrigger[];
  fire: (trigger: CronTrigger, at: Date) => Promise<void>;
  log: (line: string) => void;
  now?: () => Date;
  setTimer?: (run: () => void, ms: number) => unknown;
  clearTimer?: (timer: unknown) => void;
}

/**
 * Fires each trigger at every whole UTC minute its schedule matches, with
 * that minute as the scheduled time, as Cloudflare does. One run at a time:
 * a minute that comes while a run is still going is skipped (and logged),
 * never fired alongside it.
 */
export class CronRunner {
  private timer: unknown;
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly now: () => Date;
  private readonly setTimer: NonNullable<CronRunnerOptions["setTimer"]>;
  private readonly clearTimer: NonNullable<CronRunnerOptions["clearTimer"]>;

  private readonly options: CronRunnerOptions;

  constructor(options: CronRunnerOptions) {
    this.options = options;
    this.now = options.now ?? (() => new Date());
    this.setTimer = options.setTimer ?? ((run, ms) => setTimeout(run, ms));
    this.clearTimer = options.clearTimer ?? ((timer) => clearTimeout(timer as NodeJS.Timeout));
  }

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** Stops firing; resolves once a run under way has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.clearTimer(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** True while a run is under way. */
  get busy(): boolean {
    return this.running !== undefined;
  }

  private schedule(): void {
    if (this.stopped) return;
    const now = this.now();
    const at = nextMinute(now);
    const timer = this.setTimer(() => this.tick(at), at.getTime() - now.getTime());
    // The stack's processes keep Node alive; the runner alone must not.
    (timer as { unref?: () => void }).unref?.();
    this.timer = timer;
  }

  /** The minute `at` has come: fire what is due unless a run is still going. */
  tick(at: Date): void {
    this.timer = undefined;
    if (this.stopped) return;
    const due = this.options.triggers.filter((trigger) => cronMatches(trigger.schedule, at));
    if (due.length > 0) {
      if (this.running) {
        this.options.log(
          `${at.toISOString()}: skipped, the previous run is still going (runs never overlap)`,
        );
      } else {
        this.running = this.runAll(due, at).finally(() => {
          this.running = undefined;
        });
      }
    }
    this.schedule();
  }

  private async runAll(due: readonly CronTrigger[], at: Date): Promise<void> {
    for (const trigger of due) {
      if (this.stopped) return;
      try {
        await this.options.fire(trigger, at);
      } catch (error) {
        // Stopping takes the stack down under a run: not a failure to report.
        if (this.stopped) return;
        this.options.log(
          `${at.toISOString()} "${trigger.cron}" on ${trigger.worker} failed: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
  }
}

/** DEV_CRON: on unless "off" (or "0", "false", "no"). */
export function devCronEnabled(value: string | undefined): boolean {
  if (value === undefined || value.trim() === "") return true;
  const normalized = value.trim().toLowerCase();
  if (["off", "0", "false", "no"].includes(normalized)) return false;
  if (["on", "1", "true", "yes"].includes(normalized)) return true;
  throw new Error(`DEV_CRON must be "on" or "off", not "${value}"`);
}

/**
 * The `--at` time of `npm run cron`: an ISO 8601 date and time with its
 * zone (Z or an offset), or a date alone (midnight UTC).
 */
export function parseAt(text: string): Date {
  const iso =
    /^\d{4}-\d{2}-\d{2}$|^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/i;
  const at = new Date(text);
  // A day the month does not have (2026-02-30) must not roll over into the next month.
  const [year, month, day] = text.slice(0, 10).split("-").map(Number) as [number, number, number];
  const calendarDay = new Date(Date.UTC(year, month - 1, day));
  if (
    !iso.test(text) ||
    Number.isNaN(at.getTime()) ||
    calendarDay.getUTCMonth() !== month - 1 ||
    calendarDay.getUTCDate() !== day
  )
    throw new Error(
      `--at "${text}" is not an ISO 8601 time with its zone, e.g. 2026-12-01T00:01:00Z or 2026-12-01`,
    );
  return at;
}
