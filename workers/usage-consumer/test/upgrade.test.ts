import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { LIFETIME_WINDOW_KEY } from "@edge-platform/shared/billing/billing-period";
import { describe, expect, it, vi } from "vitest";
import worker from "../src/index.ts";
import {
  billing,
  counterFor,
  expectPipelineInvariant,
  listedEvents,
  pipelineTenant,
  usageLogOf,
  waitForFinalStatuses,
} from "./pipeline-helpers.ts";

// The upgrade from the D1 log of earlier releases: a D1 holding PENDING,
// VALIDATED and AGGREGATED events (with the outbox row of the PENDING one
// and the aggregate of the AGGREGATED ones, as the earlier pipeline left
// them). The drop migration refuses to run while rows remain; the Cron
// Trigger moves them into the tenant's usage log and deletes them from D1;
// the drop then runs; the pipeline finishes the unfinished ones, and every
// event ends counted exactly once.

const migration = (name: string) => {
  const found = env.TEST_MIGRATIONS.find((m) => m.name.startsWith(name));
  if (!found) throw new Error(`migration ${name} not found`);
  return found.queries;
};

/** The D1 log's tables exactly as the earlier migrations created them (before 0015). */
async function recreateD1Log() {
  const creates = [
    ...migration("0003_").filter((q) => /CREATE TABLE `usage_(events|outbox)`/.test(q)),
    ...migration("0008_").filter((q) => /CREATE TABLE `usage_archive_parts`/.test(q)),
  ];
  expect(creates).toHaveLength(3);
  await env.DB.batch(creates.map((query) => env.DB.prepare(query)));
}

async function tableExists(name: string) {
  const row = await env.DB.prepare(
    "SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ?",
  )
    .bind(name)
    .first();
  return row !== null;
}

/** One Cron Trigger run of the billing worker; its work goes on after the call returns. */
async function runCron(until: () => Promise<boolean>) {
  const billingWorker = env.BILLING as unknown as {
    scheduled(options: { scheduledTime: number; cron: string }): Promise<unknown>;
  };
  await billingWorker.scheduled({ scheduledTime: Date.now(), cron: "* * * * *" });
  await vi.waitFor(async () => expect(await until()).toBe(true), { timeout: 10_000, interval: 50 });
}

const d1LogRows = async () =>
  (await env.DB.prepare("SELECT count(*) AS n FROM usage_events").first<{ n: number }>())?.n;

const applyDrop = () => env.DB.batch(migration("0018_").map((query) => env.DB.prepare(query)));

describe("upgrade: the D1 usage log moves into the usage log", () => {
  it("moves PENDING, VALIDATED and AGGREGATED events, then drops the tables, and counts each once", async () => {
    const tenant = await pipelineTenant();
    await recreateD1Log();
    const subscription = await env.DB.prepare(
      "SELECT started_at AS startedAt FROM subscriptions WHERE id = ?",
    )
      .bind(tenant.subscriptionId)
      .first<{ startedAt: string }>();
    const now = new Date().toISOString();
    const row = (status: string, amount: number, feature = "api_calls") => ({
      id: crypto.randomUUID(),
      eventId: crypto.randomUUID(),
      status,
      amount,
      feature,
    });
    const pending = [row("PENDING", 3), row("PENDING", 4)];
    const validated = [row("VALIDATED", 5, "projects"), row("VALIDATED", 6, "projects")];
    const aggregated = [row("AGGREGATED", 7), row("AGGREGATED", 8)];
    const statements = [...pending, ...validated, ...aggregated].map((event) => {
      const windowed = event.status !== "PENDING";
      return env.DB.prepare(
        `INSERT INTO usage_events (id, tenant_id, event_id, subscription_id, feature_lookup_key, amount,
            timestamp, received_at, status, period_key, period_start, period_end, validated_at, aggregated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`,
      ).bind(
        event.id,
        tenant.tenantId,
        event.eventId,
        windowed ? tenant.subscriptionId : null,
        event.feature,
        event.amount,
        now,
        now,
        event.status,
        windowed ? (event.feature === "projects" ? LIFETIME_WINDOW_KEY : "2026-11") : null,
        windowed ? subscription?.startedAt : null,
        windowed ? now : null,
        event.status === "AGGREGATED" ? now : null,
      );
    });
    // The outbox row of the first PENDING event was never published.
    statements.push(
      env.DB.prepare(
        `INSERT INTO usage_outbox (id, tenant_id, topic, next_attempt_at) VALUES (?, ?, 'usage-raw', ?)`,
      ).bind(pending[0]?.id, tenant.tenantId, now),
    );
    // What the earlier pipeline had counted for the AGGREGATED ones.
    statements.push(
      env.DB.prepare(
        `INSERT INTO usage_aggregates (id, tenant_id, subscription_id, feature_lookup_key, period_key,
            period_start, period_end, amount, last_event_at)
         VALUES (?, ?, ?, 'api_calls', '2026-11', ?, NULL, 15, ?)`,
      ).bind(crypto.randomUUID(), tenant.tenantId, tenant.subscriptionId, now, now),
    );
    await env.DB.batch(statements);

    // Until they have moved, their eventIds are still refused at ingestion.
    const early = await billing("/usage/events", {
      token: tenant.apiKey,
      body: [aggregated[1], validated[0]].map((event) => ({
        eventId: event?.eventId,
        feature: "api_calls",
        amount: 1,
        timestamp: now,
      })),
    });
    expect(early.body.duplicates).toBe(2);

    // The drop refuses while events remain, and changes nothing.
    await expect(applyDrop()).rejects.toThrow(/CHECK constraint failed/);
    expect(await tableExists("usage_events")).toBe(true);

    // The Cron Trigger moves them (the events keep their statuses).
    await runCron(async () => (await d1LogRows()) === 0);
    expect((await listedEvents(tenant.tenantId)).length).toBe(6);
    await applyDrop();
    expect(await tableExists("usage_events")).toBe(false);
    expect(await tableExists("usage_outbox")).toBe(false);
    // Once the tables are gone the run has nothing to move, and does not fail.
    await runCron(async () => true);

    // A raw message the earlier pipeline still had on its way, under the old id.
    const ctx = createExecutionContext();
    const stale = pending[1];
    const batch = createMessageBatch<unknown>("usage-raw", [
      {
        id: crypto.randomUUID(),
        timestamp: new Date(),
        attempts: 1,
        body: {
          id: stale?.id,
          tenantId: tenant.tenantId,
          eventId: stale?.eventId,
          feature: "api_calls",
          amount: stale?.amount,
          timestamp: now,
          receivedAt: now,
        },
      },
    ]);
    await worker.queue(batch, env, ctx);
    expect((await getQueueResult(batch, ctx)).retryMessages).toEqual([]);

    // In the log with their statuses; the unfinished ones re-driven after the bound.
    const moved = await listedEvents(tenant.tenantId);
    expect(moved.map((event) => [event.eventId, event.status]).sort()).toEqual(
      [...pending, ...validated, ...aggregated]
        .map((event) => [event.eventId, event.status])
        .sort(),
    );
    const swept = await usageLogOf(tenant.tenantId).redrive(Date.now() + 600_000);
    expect(swept).toEqual({ raw: 2, validated: 2, failed: 0 });
    await waitForFinalStatuses(tenant.tenantId);
    await counterFor(tenant.tenantId).flush();
    const { counts, aggregated: units } = await expectPipelineInvariant(tenant.tenantId);
    expect(counts).toEqual({ AGGREGATED: 6 });
    expect(units).toEqual({ api_calls: 3 + 4 + 7 + 8, projects: 5 + 6 });
    // Resent by the client now: refused, the log holds the ids.
    const resent = await billing("/usage/events", {
      token: tenant.apiKey,
      body: [aggregated[0], pending[0]].map((event) => ({
        eventId: event?.eventId,
        feature: "api_calls",
        amount: 1,
        timestamp: now,
      })),
    });
    expect(resent.body.duplicates).toBe(2);
  }, 30_000);
});
