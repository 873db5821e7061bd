import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { envelopeItems, type ValidatedUsageMessage } from "@edge-platform/shared/queues/usage";
import { describe, expect, it } from "vitest";
import worker from "../src/index.ts";
import {
  counterFor,
  expectPipelineInvariant,
  type PipelineTenant,
  pipelineTenant,
  statusCounts,
  storePending,
  usageLogOf,
  waitForFinalStatuses,
} from "./pipeline-helpers.ts";

// The re-drive (billing: usage-log/usage-log.ts, run by each usage log's
// alarm) driven on demand: events whose messages were lost are
// sent again from their rows once they have been unfinished for longer than
// the bound (300 s here, the production default), and repeats of any kind
// are counted once.

const BOUND_MS = 300_000;

const strandedPending = (tenant: PipelineTenant, count: number) =>
  storePending(tenant, count, (i) => ({ amount: (i % 4) + 1 }));

/** Runs one queue batch through the consumer with `stageEnv`; every message must be acked. */
async function deliver(queue: string, stageEnv: Env, bodies: unknown[]) {
  for (let start = 0; start < bodies.length; start += 100) {
    const batch = createMessageBatch<unknown>(
      queue,
      bodies.slice(start, start + 100).map((body) => ({
        id: crypto.randomUUID(),
        timestamp: new Date(),
        attempts: 1,
        body,
      })),
    );
    const ctx = createExecutionContext();
    await worker.queue(batch, stageEnv, ctx);
    const result = await getQueueResult(batch, ctx);
    expect(result.retryMessages).toEqual([]);
  }
}

/**
 * The validation stage with its counter unavailable (so it forwards) and
 * its forward to usage-validated lost (captured, never delivered).
 */
function validationLosingForwards() {
  const lost: ValidatedUsageMessage[] = [];
  const keep = (body: unknown) => lost.push(...(envelopeItems(body) as ValidatedUsageMessage[]));
  const sink = {
    send: async (body: unknown) => {
      keep(body);
    },
    sendBatch: async (messages: { body: unknown }[]) => {
      for (const message of messages) keep(message.body);
    },
  } as unknown as Queue;
  const counterDown = {
    idFromName: (name: string) => env.ENTITLEMENT_COUNTER.idFromName(name),
    get: () => ({ record: async () => Promise.reject(new Error("counter unavailable")) }),
  };
  return {
    env: {
      ...env,
      USAGE_VALIDATED_QUEUE: sink,
      ENTITLEMENT_COUNTER: counterDown,
    } as unknown as Env,
    lost,
  };
}

const units = (messages: { amount: number }[]) =>
  messages.reduce((sum, message) => sum + message.amount, 0);

describe("re-driving stranded usage events", () => {
  it("leaves events alone inside the bound, then re-drives lost raw messages to AGGREGATED", async () => {
    const tenant = await pipelineTenant();
    const stranded = await strandedPending(tenant, 120);

    const early = await usageLogOf(tenant.tenantId).redrive(Date.now() + 1_000);
    expect(early.raw + early.validated).toBe(0);
    expect(await statusCounts(tenant.tenantId)).toEqual({ PENDING: 120 });

    const swept = await usageLogOf(tenant.tenantId).redrive(Date.now() + BOUND_MS + 1_000);
    expect(swept).toMatchObject({ raw: 120, validated: 0, failed: 0 });
    await waitForFinalStatuses(tenant.tenantId);
    const { counts, aggregated } = await expectPipelineInvariant(tenant.tenantId);
    expect(counts).toEqual({ AGGREGATED: 120 });
    expect(aggregated).toEqual({ api_calls: units(stranded) });
    expect((await counterFor(tenant.tenantId).check("api_calls")).used).toBe(units(stranded));
  });

  it("re-drives VALIDATED events whose forward was lost, counting repeats once", async () => {
    const tenant = await pipelineTenant();
    const stranded = await strandedPending(tenant, 150);
    const validation = validationLosingForwards();
    await deliver("usage-raw", validation.env, stranded);
    expect(await statusCounts(tenant.tenantId)).toEqual({ VALIDATED: 150 });
    expect(validation.lost).toHaveLength(150);

    // A third of the lost forwards does arrive after all (counted by the
    // counter object, flushed a moment later): the re-drive repeats them.
    await deliver("usage-validated", env, validation.lost.slice(0, 50));

    const now = Date.now();
    const first = await usageLogOf(tenant.tenantId).redrive(now + BOUND_MS + 1_000);
    // Two more sweeps, each past the bound of the one before, before the
    // pipeline has caught up: every unfinished event is sent again.
    const second = await usageLogOf(tenant.tenantId).redrive(now + 2 * BOUND_MS + 2_000);
    const third = await usageLogOf(tenant.tenantId).redrive(now + 3 * BOUND_MS + 3_000);
    expect(first.raw).toBe(0);
    expect(first.validated).toBeGreaterThanOrEqual(100);
    expect(first.validated + second.validated + third.validated).toBeGreaterThan(100);
    // And the lost messages themselves turn up late, once more.
    await deliver("usage-validated", env, validation.lost);

    await waitForFinalStatuses(tenant.tenantId);
    await counterFor(tenant.tenantId).flush();
    const { counts, aggregated } = await expectPipelineInvariant(tenant.tenantId);
    expect(counts).toEqual({ AGGREGATED: 150 });
    expect(aggregated).toEqual({ api_calls: units(stranded) });
    expect((await counterFor(tenant.tenantId).check("api_calls")).used).toBe(units(stranded));
    // Finished events are never picked up again.
    const after = await usageLogOf(tenant.tenantId).redrive(now + 10 * BOUND_MS);
    expect(after).toEqual({ raw: 0, validated: 0, failed: 0 });
  });
});
