import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { ValidatedUsageMessage } from "@edge-platform/shared/queues/usage";
import { usageLogOfId } from "@edge-platform/shared/usage-log/client";
import { describe, expect, it } from "vitest";
import worker from "../src/index.ts";
import {
  billing,
  counterFor,
  expectPipelineInvariant,
  listedEvents,
  pipelineTenant,
  usageEvent,
  waitForFinalStatuses,
} from "./pipeline-helpers.ts";

// A usage-validated message can arrive long after its event was counted: a
// dead letter an administrator retries days later, a message that sat in a
// backed-up queue. By then the counter may have forgotten the event's id
// (USAGE_COUNTER_ID_RETENTION_SECONDS); the aggregation stage reads the
// event's status in its usage log and does not send a finished one to the
// counter at all.

describe("aggregation of events their usage log has finished", () => {
  it("acks a late repeat of an aggregated event without counting it, and reports it", async () => {
    const tenant = await pipelineTenant();
    const sent = await billing("/usage/events", {
      token: tenant.apiKey,
      body: { events: [usageEvent({ amount: 4 }), usageEvent({ amount: 6 })] },
    });
    expect(sent.status).toBe(202);
    await waitForFinalStatuses(tenant.tenantId);
    const [event] = await listedEvents(tenant.tenantId);
    if (!event) throw new Error("no event listed");
    const [row] = await usageLogOfId(env.USAGE_LOG, tenant.tenantId, event.id).rows([event.id]);
    expect(row?.status).toBe("AGGREGATED");
    const message: ValidatedUsageMessage = {
      id: event.id,
      tenantId: tenant.tenantId,
      eventId: event.eventId,
      subscriptionId: tenant.subscriptionId,
      feature: event.feature,
      amount: event.amount,
      timestamp: row?.timestamp ?? "",
      receivedAt: row?.receivedAt ?? "",
      window: {
        key: row?.periodKey ?? "",
        start: row?.periodStart ?? "",
        end: row?.periodEnd ?? null,
      },
      validatedAt: row?.validatedAt ?? "",
      retryOf: crypto.randomUUID(),
    };

    const recorded: unknown[] = [];
    const reported: unknown[] = [];
    const namespace = env.ENTITLEMENT_COUNTER as DurableObjectNamespace;
    const stageEnv = {
      ...env,
      ENTITLEMENT_COUNTER: {
        idFromName: (name: string) => namespace.idFromName(name),
        get: () => ({
          record: async (input: unknown) => {
            recorded.push(input);
            return { recorded: 0, duplicates: 0 };
          },
        }),
      },
      USAGE_DUPLICATES_QUEUE: {
        sendBatch: async (messages: { body: unknown }[]) => {
          reported.push(...messages.map((m) => m.body));
        },
      },
    } as unknown as Env;
    const batch = createMessageBatch<unknown>("usage-validated", [
      { id: `late-${event.id}`, timestamp: new Date(), attempts: 1, body: message },
    ]);
    const context = createExecutionContext();
    await worker.queue(batch, stageEnv, context);
    expect((await getQueueResult(batch, context)).explicitAcks).toEqual([`late-${event.id}`]);
    expect(recorded).toEqual([]);
    expect(reported).toEqual([
      expect.objectContaining({ id: event.id, status: "AGGREGATED", stage: "AGGREGATION" }),
    ]);

    // The same repeat through the real counter: still counted once.
    const realBatch = createMessageBatch<unknown>("usage-validated", [
      { id: `late-real-${event.id}`, timestamp: new Date(), attempts: 1, body: message },
    ]);
    const realContext = createExecutionContext();
    await worker.queue(realBatch, env, realContext);
    expect((await getQueueResult(realBatch, realContext)).explicitAcks).toHaveLength(1);
    await counterFor(tenant.tenantId).flush();
    const { aggregated } = await expectPipelineInvariant(tenant.tenantId);
    expect(aggregated).toEqual({ api_calls: 10 });
    expect((await counterFor(tenant.tenantId).check("api_calls")).used).toBe(10);
  });
});
