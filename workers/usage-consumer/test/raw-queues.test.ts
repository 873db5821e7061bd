import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { deadLetterIdFor, rawQueueIndex } from "@edge-platform/shared/queues/usage";
import { describe, expect, it } from "vitest";
import worker from "../src/index.ts";
import {
  billing,
  expectPipelineInvariant,
  type PipelineTenant,
  pipelineTenant,
  usageEvent,
  waitForFinalStatuses,
} from "./pipeline-helpers.ts";

// The billing worker of this project spreads tenants over two raw queues
// (USAGE_RAW_QUEUES = 2 in vitest.config.ts): usage-raw and usage-raw-1,
// each consumed by the validation stage with its own dead-letter queue.

describe("several usage-raw queues", () => {
  it("aggregates every event of tenants on either raw queue, once", async () => {
    // Tenants until each queue has one (ids are random: a few at most).
    const byQueue = new Map<number, PipelineTenant>();
    for (let attempt = 0; attempt < 20 && byQueue.size < 2; attempt++) {
      const tenant = await pipelineTenant();
      const queue = rawQueueIndex(tenant.tenantId, 2);
      if (!byQueue.has(queue)) byQueue.set(queue, tenant);
    }
    expect([...byQueue.keys()].sort()).toEqual([0, 1]);
    const tenants = [...byQueue.values()];
    await Promise.all(
      tenants.map(async (tenant) => {
        const events = Array.from({ length: 120 }, (_, i) => usageEvent({ amount: (i % 3) + 1 }));
        const sent = await billing("/usage/events", {
          token: tenant.apiKey,
          body: { events },
        });
        expect(sent.status, JSON.stringify(sent.body)).toBe(202);
        expect(sent.body).toMatchObject({ accepted: 120 });
      }),
    );
    for (const tenant of tenants) {
      await waitForFinalStatuses(tenant.tenantId, 20_000);
      const { counts, aggregated } = await expectPipelineInvariant(tenant.tenantId);
      expect(counts).toEqual({ AGGREGATED: 120 });
      expect(aggregated).toEqual({ api_calls: 240 });
    }
  });

  it("validates batches from usage-raw-1 and keeps its dead letters as usage-raw's", async () => {
    const tag = crypto.randomUUID();
    // A body that is not an event: validation dead-letters it as poison.
    const raw = createMessageBatch<unknown>("usage-raw-1", [
      { id: `raw-${tag}`, timestamp: new Date(), attempts: 1, body: { eventId: tag } },
    ]);
    const rawContext = createExecutionContext();
    await worker.queue(raw, env, rawContext);
    expect((await getQueueResult(raw, rawContext)).explicitAcks).toEqual([`raw-${tag}`]);
    const poison = await env.DB.prepare(
      "SELECT topic, failure_stage FROM dead_letter_events WHERE id = ?",
    )
      .bind(await deadLetterIdFor(`VALIDATION:message:raw-${tag}`))
      .first();
    expect(poison).toEqual({ topic: "usage-raw", failure_stage: "VALIDATION" });

    const exhausted = createMessageBatch<unknown>("usage-raw-1-dlq", [
      { id: `dlq-${tag}`, timestamp: new Date(), attempts: 6, body: { eventId: `evt-${tag}` } },
    ]);
    const context = createExecutionContext();
    await worker.queue(exhausted, env, context);
    expect((await getQueueResult(exhausted, context)).ackAll).toBe(true);
    const row = await env.DB.prepare(
      "SELECT topic, failure_stage, error_details FROM dead_letter_events WHERE id = ?",
    )
      .bind(await deadLetterIdFor(`usage-raw-1-dlq:dlq-${tag}`))
      .first();
    expect(row).toEqual({
      topic: "usage-raw",
      failure_stage: "VALIDATION",
      error_details: "moved to usage-raw-1-dlq after the source queue's max_retries",
    });
  });
});
