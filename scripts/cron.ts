/**
 * `npm run cron`: runs the local stack's scheduled work once, now, the way
 * a Cron Trigger would; `npm run cron -- --at <ISO time>` runs it as if at
 * that time (the handler's scheduledTime), e.g. just after a billing period
 * ends, to see the period close without waiting for it. Fires every Cron
 * Trigger of the Workers' configs against the stack `npm run dev` runs
 * (same BILLING_PORT, AQI_PORT, PORTFOLIO_PORT and STATE_DIR), and prints
 * what each run did, read from the run log `npm run dev` keeps.
 */
import path from "node:path";
import { devServices, devStateDir, localWorkerProcesses } from "./lib/dev-services.ts";
import {
  cronTriggersOf,
  describeRun,
  fireTrigger,
  parseAt,
  RUN_LOG_FILE,
  runLogEnd,
  runRecordsSince,
  type ScheduledRunRecord,
} from "./lib/scheduled-work.ts";

const USAGE = "usage: npm run cron [-- --at <ISO time, e.g. 2026-12-01T00:01:00Z>]";
/** After a run's answer, how long its summary may take to reach the run log. */
const RUN_RECORD_WAIT_MS = 5000;

function parseArgs(args: string[]): { at: Date } {
  let at: Date | undefined;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index] as string;
    if (arg === "--help" || arg === "-h") {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    }
    const value = arg === "--at" ? args[++index] : arg.startsWith("--at=") ? arg.slice(5) : null;
    if (value === null) throw new Error(`unknown argument "${arg}"\n${USAGE}`);
    if (value === undefined || value === "") throw new Error(`--at needs a time\n${USAGE}`);
    if (at) throw new Error(`--at given twice\n${USAGE}`);
    at = parseAt(value);
  }
  return { at: at ?? new Date() };
}

async function recordOf(
  runLog: string,
  from: number,
  cron: string,
  at: Date,
): Promise<ScheduledRunRecord | undefined> {
  const deadline = Date.now() + RUN_RECORD_WAIT_MS;
  for (;;) {
    const record = runRecordsSince(runLog, from).find(
      (found) => found.cron === cron && found.scheduledTime === at.toISOString(),
    );
    if (record || Date.now() > deadline) return record;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function main() {
  const { at } = parseArgs(process.argv.slice(2));
  const runLog = path.join(devStateDir(), RUN_LOG_FILE);
  const triggers = await cronTriggersOf(localWorkerProcesses(devServices()));
  if (triggers.length === 0) {
    process.stdout.write("[cron] no Worker declares a Cron Trigger: nothing to run\n");
    return;
  }
  for (const trigger of triggers) {
    const from = runLogEnd(runLog);
    const started = Date.now();
    await fireTrigger(trigger, at);
    const record = await recordOf(runLog, from, trigger.cron, at);
    process.stdout.write(
      record
        ? `[cron] ${trigger.worker} ${describeRun(record)}\n`
        : `[cron] ${trigger.worker} ${at.toISOString()} "${trigger.cron}" ran in ${Date.now() - started} ms (no run summary in ${path.relative(process.cwd(), runLog)}: is the stack running under \`npm run dev\` with this STATE_DIR?)\n`,
    );
    if (record && record.failedTasks.length > 0) process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`npm run cron: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
