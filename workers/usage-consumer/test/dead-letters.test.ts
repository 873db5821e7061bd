import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../src/index.ts";

describe("dead-letter queue consumer", () => {
  it("stores each exhausted message with its stage and acknowledges the batch", async () => {
    const batch = createMessageBatch<unknown>("usage-raw-dlq", [
      {
        id: "msg-1",
        timestamp: new Date(),
        attempts: 4,
        body: { eventId: "evt-1", tenantId: "t-1", amount: 3 },
      },
      { id: "msg-2", timestamp: new Date(), attempts: 4, body: "not an object" },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env, ctx);
    const result = await getQueueResult(batch, ctx);
    expect(result.ackAll).toBe(true);

    const { results } = await env.DB.prepare(
      "SELECT id, source_event_id, tenant_id, topic, failure_stage, original_payload, retry_count FROM dead_letter_events ORDER BY id",
    ).all();
    expect(results).toEqual([
      {
        id: "msg-1",
        source_event_id: "evt-1",
        tenant_id: "t-1",
        topic: "usage-raw",
        failure_stage: "VALIDATION",
        original_payload: JSON.stringify({ eventId: "evt-1", tenantId: "t-1", amount: 3 }),
        retry_count: 4,
      },
      {
        id: "msg-2",
        source_event_id: null,
        tenant_id: null,
        topic: "usage-raw",
        failure_stage: "VALIDATION",
        original_payload: JSON.stringify("not an object"),
        retry_count: 4,
      },
    ]);
  });

  it("stores a redelivered dead letter once", async () => {
    for (let i = 0; i < 2; i++) {
      const batch = createMessageBatch<unknown>("usage-raw-dlq", [
        { id: "msg-dup", timestamp: new Date(), attempts: 4, body: { eventId: "evt-dup" } },
      ]);
      const ctx = createExecutionContext();
      await worker.queue(batch, env, ctx);
      await getQueueResult(batch, ctx);
    }
    const row = await env.DB.prepare(
      "SELECT COUNT(*) AS n FROM dead_letter_events WHERE id = 'msg-dup'",
    ).first();
    expect(row).toEqual({ n: 1 });
  });
});
