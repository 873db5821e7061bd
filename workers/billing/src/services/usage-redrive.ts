import type { RawUsageMessage, ValidatedUsageMessage } from "@edge-platform/shared/queues/usage";
import { strandedEvents, touchUnfinishedEvents } from "../db/usage-redrive.ts";
import { redriveAfterSeconds, redriveOf, strandedBefore } from "../domain/usage-redrive.ts";
import { sendInChunks } from "./usage-publishing.ts";

/** Rows read per round, and rounds per sweep: at most 2,500 events re-driven per sweep. */
const REDRIVE_BATCH = 500;
const REDRIVE_MAX_ROUNDS = 5;

export interface RedriveResult {
  /** Sent again to usage-raw (PENDING rows). */
  raw: number;
  /** Sent again to usage-validated (VALIDATED rows). */
  validated: number;
  /** Could not be sent; the next sweep after the bound tries again. */
  failed: number;
}

/**
 * One re-drive sweep (domain/usage-redrive.ts): unfinished events untouched
 * for longer than the bound are touched (so an overlapping sweep leaves
 * them alone) and sent again from their rows, in bounded rounds.
 */
export async function redriveStrandedEvents(
  env: Pick<
    Env,
    "DB" | "USAGE_RAW_QUEUE" | "USAGE_VALIDATED_QUEUE" | "USAGE_REDRIVE_AFTER_SECONDS"
  >,
  nowMs: number = Date.now(),
): Promise<RedriveResult> {
  const result: RedriveResult = { raw: 0, validated: 0, failed: 0 };
  const before = strandedBefore(nowMs, redriveAfterSeconds(env.USAGE_REDRIVE_AFTER_SECONDS));
  const touchedAt = new Date(nowMs).toISOString();
  for (let round = 0; round < REDRIVE_MAX_ROUNDS; round++) {
    const rows = await strandedEvents(env.DB, before, REDRIVE_BATCH);
    if (rows.length === 0) break;
    await touchUnfinishedEvents(
      env.DB,
      rows.map((row) => row.id),
      touchedAt,
    );
    const raw: RawUsageMessage[] = [];
    const validated: ValidatedUsageMessage[] = [];
    for (const row of rows) {
      const redrive = redriveOf(row);
      if (redrive.queue === "raw") raw.push(redrive.message);
      else validated.push(redrive.message);
    }
    const [rawReport, validatedReport] = await Promise.all([
      sendInChunks(env.USAGE_RAW_QUEUE, raw),
      sendInChunks(env.USAGE_VALIDATED_QUEUE, validated),
    ]);
    result.raw += rawReport.sent.length;
    result.validated += validatedReport.sent.length;
    for (const failure of [...rawReport.failed, ...validatedReport.failed]) {
      result.failed += failure.ids.length;
      console.error(
        JSON.stringify({
          level: "warn",
          msg: "usage re-drive send failed; the next sweep retries",
          events: failure.ids.length,
          error: failure.error,
        }),
      );
    }
    if (rows.length < REDRIVE_BATCH) break;
  }
  if (result.raw + result.validated + result.failed > 0) {
    console.log(JSON.stringify({ level: "info", msg: "usage events re-driven", ...result }));
  }
  return result;
}
