import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import {
  envelopeItems,
  type RawUsageMessage,
  type ValidatedUsageMessage,
} from "@edge-platform/shared/queues/usage";
import { describe, expect, it } from "vitest";
import worker from "../src/index.ts";
import {
  counterFor,
  expectPipelineInvariant,
  listedEvents,
  type PipelineTenant,
  pipelineTenant,
  statusCounts,
  storePending,
} from "./pipeline-helpers.ts";

// The stages driven the way the queue drives them (batches, explicit acks
// and retries, redeliveries), with failures injected into their bindings:
// D1 batches, usage-log calls, queue sends and the counter object fail at
// random, and some calls fail after their work was done (a lost answer).

/** Deterministic pseudo-random numbers (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Delivery {
  id: string;
  body: unknown;
  attempts: number;
}

interface Faults {
  rng: () => number;
  /** Share of D1 batches, usage-log calls, queue sends and record calls that fail. */
  rate: number;
}

/**
 * The stage's env with failures injected; what it sends onward is captured.
 * `counterDown`: every counter call fails, so validation forwards all it
 * validated to usage-validated (its slow path) instead of counting it.
 */
function faultyEnv(faults: Faults | null, options: { counterDown?: boolean } = {}) {
  const fail = (what: string) => {
    if (faults && faults.rng() < faults.rate) throw new Error(`injected ${what} failure`);
  };
  const validated: ValidatedUsageMessage[] = [];
  const duplicates: unknown[] = [];
  const queue = (sink: unknown[]) =>
    ({
      // Envelopes are opened: what was sent onward, event by event.
      send: async (body: unknown) => {
        fail("queue send");
        sink.push(...envelopeItems(body));
      },
      sendBatch: async (messages: { body: unknown }[]) => {
        fail("queue send");
        sink.push(...messages.flatMap((message) => envelopeItems(message.body)));
      },
    }) as unknown as Queue;
  // Every statement the stage prepares, to tell which writes it does.
  const prepared: string[] = [];
  const db = new Proxy(env.DB, {
    get(target, property) {
      if (property === "prepare") {
        return (query: string) => {
          prepared.push(query);
          return target.prepare(query);
        };
      }
      if (property === "batch") {
        return async (statements: D1PreparedStatement[]) => {
          fail("D1 batch");
          return target.batch(statements);
        };
      }
      const value = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  // Every usage-log method the stage calls, to tell which status writes it does.
  const logCalls: string[] = [];
  const logs = env.USAGE_LOG as DurableObjectNamespace;
  const usageLog = {
    idFromName: (name: string) => logs.idFromName(name),
    get: (id: DurableObjectId) => {
      const stub = logs.get(id) as unknown as Record<string, (...args: unknown[]) => unknown>;
      return new Proxy(
        {},
        {
          get:
            (_target, method: string) =>
            async (...args: unknown[]) => {
              logCalls.push(method);
              fail(`usage log ${method}`);
              const result = await stub[method]?.(...args);
              fail(`usage log ${method} answer`);
              return result;
            },
        },
      );
    },
  };
  const namespace = env.ENTITLEMENT_COUNTER as DurableObjectNamespace;
  const counters = {
    idFromName: (name: string) => namespace.idFromName(name),
    get: (id: DurableObjectId) => {
      const stub = namespace.get(id) as unknown as { record(input: unknown): Promise<unknown> };
      return {
        record: async (input: unknown) => {
          if (options.counterDown) throw new Error("counter unavailable");
          fail("record");
          const result = await stub.record(input);
          fail("record answer"); // the work is done, the answer is lost
          return result;
        },
      };
    },
  };
  return {
    env: {
      ...env,
      DB: db,
      USAGE_VALIDATED_QUEUE: queue(validated),
      USAGE_DUPLICATES_QUEUE: queue(duplicates),
      ENTITLEMENT_COUNTER: counters,
      USAGE_LOG: usageLog,
    } as unknown as Env,
    validated,
    duplicates,
    prepared,
    logCalls,
  };
}

/**
 * Delivers messages in batches of up to 100 until every one is acked,
 * redelivering retried ones (attempts + 1) and, with `redeliverRate`, some
 * acked ones too. Checks that each message of a batch is settled on its
 * own: explicitly acked or retried, never left to a whole-batch outcome.
 */
async function deliverUntilAcked(
  queue: string,
  stageEnv: Env,
  messages: Delivery[],
  options: { rng?: () => number; redeliverRate?: number; batchSize?: number } = {},
) {
  const size = options.batchSize ?? 100;
  let pending = messages;
  let rounds = 0;
  let retries = 0;
  while (pending.length > 0) {
    if (++rounds > 60) throw new Error("messages never settled");
    const next: Delivery[] = [];
    for (let start = 0; start < pending.length; start += size) {
      const chunk = pending.slice(start, start + size);
      const batch = createMessageBatch<unknown>(
        queue,
        chunk.map((m) => ({ id: m.id, timestamp: new Date(), attempts: m.attempts, body: m.body })),
      );
      const ctx = createExecutionContext();
      await worker.queue(batch, stageEnv, ctx);
      const result = await getQueueResult(batch, ctx);
      expect(result.retryBatch.retry).toBe(false);
      expect(result.ackAll).toBe(false);
      const retried = new Set(result.retryMessages.map((r) => r.msgId));
      const acked = new Set(result.explicitAcks);
      for (const message of chunk) {
        expect(retried.has(message.id) !== acked.has(message.id)).toBe(true);
        if (retried.has(message.id)) {
          retries++;
          next.push({ ...message, attempts: message.attempts + 1 });
        } else if (options.rng && options.rng() < (options.redeliverRate ?? 0)) {
          next.push({ ...message, attempts: message.attempts + 1 });
        }
      }
    }
    pending = next;
  }
  return { rounds, retries };
}

/** Stored PENDING events (as ingestion leaves them), and their raw messages. */
const pendingEvents = (tenant: PipelineTenant, count: number, amount: (i: number) => number) =>
  storePending(tenant, count, (i) => ({
    feature: i % 3 === 0 ? "projects" : "api_calls",
    amount: amount(i),
  }));

const deliveries = (bodies: unknown[]) =>
  bodies.map((body) => ({ id: crypto.randomUUID(), body, attempts: 1 }));

async function settleCounter(tenantId: string) {
  const flushed = await counterFor(tenantId).flush();
  expect(flushed.pendingUnits).toBe(0);
}

/** `events` rows, all AGGREGATED once: the aggregates and the counter equal the units sent, per feature. */
async function expectExactTotals(tenantId: string, raw: RawUsageMessage[], events: number) {
  const { counts, aggregated } = await expectPipelineInvariant(tenantId);
  expect(counts).toEqual({ AGGREGATED: events });
  const sent = (feature: string) =>
    raw.filter((m) => m.feature === feature).reduce((sum, m) => sum + m.amount, 0);
  expect(aggregated).toEqual({ api_calls: sent("api_calls"), projects: sent("projects") });
  expect((await counterFor(tenantId).check("api_calls")).used).toBe(sent("api_calls"));
}

describe("pipeline stages under failure", () => {
  it("ends with exact totals when a share of D1 writes, sends and counter calls throw at random", async () => {
    const tenant = await pipelineTenant();
    const raw = await pendingEvents(tenant, 300, (i) => (i % 7) + 1);
    const rng = random(20261121);
    const validation = faultyEnv({ rng, rate: 0.25 }, { counterDown: true });
    const v = await deliverUntilAcked("usage-raw", validation.env, deliveries(raw), {
      rng,
      redeliverRate: 0.1,
    });
    expect(v.retries).toBeGreaterThan(0);
    expect(await statusCounts(tenant.tenantId)).toEqual({ VALIDATED: 300 });

    const aggregation = faultyEnv({ rng, rate: 0.25 });
    const a = await deliverUntilAcked(
      "usage-validated",
      aggregation.env,
      deliveries(validation.validated),
      {
        rng,
        redeliverRate: 0.1,
      },
    );
    expect(a.retries).toBeGreaterThan(0);
    await settleCounter(tenant.tenantId);

    await expectExactTotals(tenant.tenantId, raw, 300);
  });

  it("ends with exact totals when validation counts at once and D1, sends and counter calls throw at random", async () => {
    const tenant = await pipelineTenant();
    const raw = await pendingEvents(tenant, 300, (i) => (i % 7) + 1);
    const rng = random(20261123);
    // The counter is up: most events are counted at validation and stay
    // PENDING until its flush; a failed or unanswered record marks the
    // event VALIDATED and forwards it (the slow path).
    const validation = faultyEnv({ rng, rate: 0.25 });
    // Batches of 10: thirty record calls, so some fail before and some after their work.
    const v = await deliverUntilAcked("usage-raw", validation.env, deliveries(raw), {
      rng,
      redeliverRate: 0.1,
      batchSize: 10,
    });
    expect(v.retries).toBeGreaterThan(0);
    expect(validation.validated.length).toBeGreaterThan(0);
    const aggregation = faultyEnv({ rng, rate: 0.25 });
    await deliverUntilAcked("usage-validated", aggregation.env, deliveries(validation.validated), {
      rng,
      redeliverRate: 0.1,
    });
    await settleCounter(tenant.tenantId);

    await expectExactTotals(tenant.tenantId, raw, 300);
  });

  it("counts messages delivered twice once, and reports the repeats as duplicates", async () => {
    const tenant = await pipelineTenant();
    const raw = await pendingEvents(tenant, 20, () => 2);
    const stage = faultyEnv(null, { counterDown: true });
    const aggregation = faultyEnv(null);
    await deliverUntilAcked("usage-raw", stage.env, deliveries(raw));
    await deliverUntilAcked("usage-raw", stage.env, deliveries(raw));
    // The second delivery finds VALIDATED rows: forwarded again (the first
    // forward might have been lost) and reported as duplicates.
    expect(stage.duplicates).toHaveLength(20);
    expect(stage.validated).toHaveLength(40);
    await deliverUntilAcked("usage-validated", aggregation.env, deliveries(stage.validated));
    await deliverUntilAcked("usage-validated", aggregation.env, deliveries(stage.validated));
    await settleCounter(tenant.tenantId);
    // A third raw delivery after aggregation: duplicates only, nothing forwarded.
    await deliverUntilAcked("usage-raw", stage.env, deliveries(raw));
    expect(stage.validated).toHaveLength(40);
    const { counts, aggregated } = await expectPipelineInvariant(tenant.tenantId);
    expect(counts).toEqual({ AGGREGATED: 20 });
    expect(aggregated).toEqual({ api_calls: 26, projects: 14 });
  });

  it("dead-letters poison messages with their reason at once, without retrying them", async () => {
    const tenant = await pipelineTenant();
    const [good] = await pendingEvents(tenant, 1, () => 5);
    const stage = faultyEnv(null, { counterDown: true });
    const aggregationStage = faultyEnv(null);
    const unknownRow = { ...good, id: crypto.randomUUID(), eventId: crypto.randomUUID() };
    const partial = { id: crypto.randomUUID(), tenantId: tenant.tenantId };
    const { retries } = await deliverUntilAcked(
      "usage-raw",
      stage.env,
      deliveries(["garbage", partial, unknownRow, good]),
    );
    expect(retries).toBe(0);
    expect(stage.validated).toHaveLength(1);
    const poisonAggregate = { ...stage.validated[0], amount: -3 };
    const aggregation = await deliverUntilAcked(
      "usage-validated",
      aggregationStage.env,
      deliveries([{ nonsense: true }, poisonAggregate, stage.validated[0]]),
    );
    expect(aggregation.retries).toBe(0);
    await settleCounter(tenant.tenantId);

    const { results } = await env.DB.prepare(
      `SELECT failure_stage AS stage, failure_reason AS reason, topic FROM dead_letter_events
        WHERE original_payload IN (?, ?, ?, ?, ?) ORDER BY stage, reason`,
    )
      .bind(
        JSON.stringify("garbage"),
        JSON.stringify(partial),
        JSON.stringify(unknownRow),
        JSON.stringify({ nonsense: true }),
        JSON.stringify(poisonAggregate),
      )
      .all<{ stage: string; reason: string; topic: string }>();
    expect(results.map((row) => [row.stage, row.reason.split(":")[0], row.topic])).toEqual([
      ["AGGREGATION", "INVALID_MESSAGE", "usage-validated"],
      ["AGGREGATION", "INVALID_MESSAGE", "usage-validated"],
      ["VALIDATION", "EVENT_NOT_FOUND", "usage-raw"],
      ["VALIDATION", "MISSING_REQUIRED_FIELDS", "usage-raw"],
      ["VALIDATION", "MISSING_REQUIRED_FIELDS", "usage-raw"],
    ]);
    expect((await expectPipelineInvariant(tenant.tenantId)).aggregated).toEqual({ projects: 5 });
  });

  it("retries only the messages whose tenant's counter failed, and acks the rest", async () => {
    const [healthy, broken] = [await pipelineTenant(), await pipelineTenant()];
    const stage = faultyEnv(null, { counterDown: true });
    await deliverUntilAcked(
      "usage-raw",
      stage.env,
      deliveries([
        ...(await pendingEvents(healthy, 3, () => 1)),
        ...(await pendingEvents(broken, 2, () => 1)),
      ]),
    );
    const namespace = env.ENTITLEMENT_COUNTER as DurableObjectNamespace;
    const brokenId = namespace.idFromName(broken.tenantId).toString();
    const partial = {
      ...faultyEnv(null).env,
      ENTITLEMENT_COUNTER: {
        idFromName: (name: string) => namespace.idFromName(name),
        get: (id: DurableObjectId) =>
          id.toString() === brokenId
            ? { record: async () => Promise.reject(new Error("counter unavailable")) }
            : namespace.get(id),
      },
    } as unknown as Env;
    const batch = createMessageBatch<unknown>(
      "usage-validated",
      deliveries(stage.validated).map((d) => ({ ...d, timestamp: new Date() })),
    );
    const ctx = createExecutionContext();
    await worker.queue(batch, partial, ctx);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks).toHaveLength(3);
    expect(result.retryMessages).toHaveLength(2);
  });

  it("counts validated events through the counter at once, with no usage-validated hop", async () => {
    const tenant = await pipelineTenant();
    const raw = await pendingEvents(tenant, 150, (i) => (i % 5) + 1);
    const stage = faultyEnv(null);
    await deliverUntilAcked("usage-raw", stage.env, deliveries(raw));
    expect(stage.validated).toEqual([]);
    // One status write per event: validation writes none for events the
    // counter took; its flush moves them from PENDING to AGGREGATED.
    expect(stage.logCalls.filter((method) => method !== "rows")).toEqual([]);
    await settleCounter(tenant.tenantId);
    const { counts, aggregated } = await expectPipelineInvariant(tenant.tenantId);
    expect(counts).toEqual({ AGGREGATED: 150 });
    const unset = (await listedEvents(tenant.tenantId)).filter(
      (event) =>
        !event.subscriptionId || !event.periodKey || !event.validatedAt || !event.aggregatedAt,
    );
    expect(unset).toEqual([]);
    const expected = (feature: string) =>
      raw.filter((m) => m.feature === feature).reduce((sum, m) => sum + m.amount, 0);
    expect(aggregated).toEqual({
      api_calls: expected("api_calls"),
      projects: expected("projects"),
    });
  });
});
