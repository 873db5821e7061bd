import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { deadLetterIdFor, retryDelaySeconds } from "@edge-platform/shared/queues/usage";
import { describe, expect, it } from "vitest";
import worker from "../src/index.ts";

describe("dead-letter queue consumers", () => {
  it("stores each exhausted message with its stage and acknowledges the batch", async () => {
    const tag = crypto.randomUUID();
    const batch = createMessageBatch<unknown>("usage-raw-dlq", [
      {
        id: `msg-1-${tag}`,
        timestamp: new Date(),
        attempts: 6,
        body: { eventId: "evt-1", tenantId: "t-1", amount: 3 },
      },
      { id: `msg-2-${tag}`, timestamp: new Date(), attempts: 6, body: "not an object" },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env, ctx);
    const result = await getQueueResult(batch, ctx);
    expect(result.ackAll).toBe(true);

    const ids = [
      await deadLetterIdFor(`usage-raw-dlq:msg-1-${tag}`),
      await deadLetterIdFor(`usage-raw-dlq:msg-2-${tag}`),
    ];
    const { results } = await env.DB.prepare(
      "SELECT id, source_event_id, tenant_id, topic, failure_stage, original_payload, retry_count, status FROM dead_letter_events WHERE id IN (?, ?) ORDER BY original_payload",
    )
      .bind(...ids)
      .all();
    expect(results).toEqual([
      {
        id: ids[1],
        source_event_id: null,
        tenant_id: null,
        topic: "usage-raw",
        failure_stage: "VALIDATION",
        original_payload: JSON.stringify("not an object"),
        retry_count: 6,
        status: "FAILED",
      },
      {
        id: ids[0],
        source_event_id: "evt-1",
        tenant_id: "t-1",
        topic: "usage-raw",
        failure_stage: "VALIDATION",
        original_payload: JSON.stringify({ eventId: "evt-1", tenantId: "t-1", amount: 3 }),
        retry_count: 6,
        status: "FAILED",
      },
    ]);
  });

  it("names the stage of each queue: aggregation, monitoring", async () => {
    for (const [queue, stage] of [
      ["usage-validated-dlq", "AGGREGATION"],
      ["usage-duplicates-dlq", "MONITORING"],
    ] as const) {
      const id = `msg-${crypto.randomUUID()}`;
      const batch = createMessageBatch<unknown>(queue, [
        { id, timestamp: new Date(), attempts: 6, body: { eventId: "e" } },
      ]);
      const ctx = createExecutionContext();
      await worker.queue(batch, env, ctx);
      await getQueueResult(batch, ctx);
      const row = await env.DB.prepare(
        "SELECT failure_stage, topic FROM dead_letter_events WHERE id = ?",
      )
        .bind(await deadLetterIdFor(`${queue}:${id}`))
        .first();
      expect(row).toEqual({ failure_stage: stage, topic: queue.replace(/-dlq$/, "") });
    }
  });

  it("stores a redelivered dead letter once", async () => {
    const id = `msg-dup-${crypto.randomUUID()}`;
    for (let i = 0; i < 2; i++) {
      const batch = createMessageBatch<unknown>("usage-raw-dlq", [
        { id, timestamp: new Date(), attempts: 6, body: { eventId: "evt-dup" } },
      ]);
      const ctx = createExecutionContext();
      await worker.queue(batch, env, ctx);
      await getQueueResult(batch, ctx);
    }
    const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM dead_letter_events WHERE id = ?")
      .bind(await deadLetterIdFor(`usage-raw-dlq:${id}`))
      .first();
    expect(row).toEqual({ n: 1 });
  });

  it("backs retries off exponentially, up to a minute", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map(retryDelaySeconds)).toEqual([1, 2, 4, 8, 16, 32, 60, 60]);
  });
});
