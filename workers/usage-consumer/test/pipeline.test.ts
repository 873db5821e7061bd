import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import {
  billing,
  counterFor,
  expectPipelineInvariant,
  pipelineTenant,
  storePending,
  usageEvent,
  usageLogOf,
  waitForFinalStatuses,
} from "./pipeline-helpers.ts";

// The whole pipeline in one Miniflare instance: ingestion in the billing
// worker (auxiliary), the real usage-raw and usage-validated queues, the
// stages of this worker, and the tenant's EntitlementCounter.

const DAY = 86_400_000;

describe("usage pipeline, end to end over the real queues", () => {
  it("takes a mixed batch to final statuses with the right reasons, counting each event once", async () => {
    const tenant = await pipelineTenant();
    const now = Date.now();
    const valid = Array.from({ length: 40 }, (_, i) =>
      usageEvent({ feature: i % 2 ? "api_calls" : "projects", amount: (i % 5) + 1 }),
    );
    const nonUuid = usageEvent({ eventId: `evt-${crypto.randomUUID()}` });
    const unknownFeature = usageEvent({ feature: "teleportation" });
    const booleanFeature = usageEvent({ feature: "sso" });
    const tooOld = usageEvent({ timestamp: new Date(now - 8 * DAY).toISOString() });
    const future = usageEvent({ timestamp: new Date(now + 10 * 60_000).toISOString() });
    // No amount: one use.
    const noAmount = {
      eventId: crypto.randomUUID(),
      feature: "api_calls",
      timestamp: new Date().toISOString(),
      properties: { region: "eu", tokens: 1200 },
    };
    const noFeature = { eventId: crypto.randomUUID(), timestamp: new Date().toISOString() };
    const batch = [
      ...valid,
      valid[0],
      nonUuid,
      unknownFeature,
      booleanFeature,
      tooOld,
      future,
      noAmount,
      noFeature,
      { ...usageEvent(), amount: 2.5 },
    ];
    const first = await billing("/usage/events", { token: tenant.apiKey, body: { events: batch } });
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    expect(first.body).toMatchObject({ accepted: 47, rejected: 2, duplicates: 1 });
    expect(first.body.events[40]).toEqual({ eventId: valid[0]?.eventId, status: "duplicate" });
    expect(first.body.events.at(-2)).toMatchObject({
      status: "rejected",
      reason: "MISSING_REQUIRED_FIELDS",
    });
    expect(first.body.events.at(-1)).toMatchObject({
      status: "rejected",
      reason: "INVALID_AMOUNT",
    });

    // The same batch again: nothing new is stored.
    const again = await billing("/usage/events", { token: tenant.apiKey, body: batch });
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ accepted: 47, rejected: 2, duplicates: 47 });

    await waitForFinalStatuses(tenant.tenantId);
    const expectRejected = async (eventId: string, reason: string) => {
      const event = await billing(`/usage/events/${encodeURIComponent(eventId)}`, {
        token: tenant.apiKey,
      });
      expect(event.status).toBe(200);
      expect(event.body).toMatchObject({ status: "REJECTED", reason });
    };
    await expectRejected(nonUuid.eventId, "INVALID_EVENT_ID");
    await expectRejected(unknownFeature.eventId, "FEATURE_NOT_ENTITLED");
    await expectRejected(booleanFeature.eventId, "BOOLEAN_FEATURE");
    await expectRejected(tooOld.eventId, "TIMESTAMP_TOO_OLD");
    await expectRejected(future.eventId, "TIMESTAMP_IN_FUTURE");
    const aggregatedEvent = await billing(`/usage/events/${valid[3]?.eventId}`, {
      token: tenant.apiKey,
    });
    expect(aggregatedEvent.body).toMatchObject({ status: "AGGREGATED", reason: null });
    const defaulted = await billing(`/usage/events/${noAmount.eventId}`, { token: tenant.apiKey });
    expect(defaulted.body).toMatchObject({
      status: "AGGREGATED",
      amount: 1,
      properties: noAmount.properties,
    });

    const { counts, aggregated } = await expectPipelineInvariant(tenant.tenantId);
    expect(counts).toEqual({ AGGREGATED: 41, REJECTED: 5 });
    const expectedApi =
      valid.filter((e) => e.feature === "api_calls").reduce((s, e) => s + (e.amount as number), 0) +
      1;
    const expectedProjects = valid
      .filter((e) => e.feature === "projects")
      .reduce((s, e) => s + (e.amount as number), 0);
    expect(aggregated).toEqual({ api_calls: expectedApi, projects: expectedProjects });

    // The tenant's view of its aggregates and the entitlement check agree exactly.
    const listed = await billing("/usage/aggregates", { token: tenant.apiKey });
    expect(listed.status).toBe(200);
    const sum = (feature: string) =>
      listed.body.data
        .filter((row: { feature: string }) => row.feature === feature)
        .reduce((s: number, row: { amount: number }) => s + row.amount, 0);
    expect(sum("api_calls")).toBe(expectedApi);
    expect(sum("projects")).toBe(expectedProjects);
    const check = await billing("/entitlements/api_calls/check", { token: tenant.apiKey });
    expect(check.body.used).toBe(expectedApi);

    // Every validation rejection left a dead letter with the stage and the reason.
    const { results } = await env.DB.prepare(
      "SELECT failure_stage, failure_reason FROM dead_letter_events WHERE tenant_id = ? ORDER BY failure_reason",
    )
      .bind(tenant.tenantId)
      .all<{ failure_stage: string; failure_reason: string }>();
    expect(results.map((row) => row.failure_stage)).toEqual(Array(5).fill("VALIDATION"));
    expect(results.map((row) => row.failure_reason.split(":")[0]).sort()).toEqual([
      "BOOLEAN_FEATURE",
      "FEATURE_NOT_ENTITLED",
      "INVALID_EVENT_ID",
      "TIMESTAMP_IN_FUTURE",
      "TIMESTAMP_TOO_OLD",
    ]);
  });

  it("isolates tenants: one tenant cannot read another's events", async () => {
    const [a, b] = [await pipelineTenant(), await pipelineTenant()];
    const event = usageEvent();
    expect((await billing("/usage/events", { token: a.apiKey, body: [event] })).status).toBe(202);
    expect((await billing(`/usage/events/${event.eventId}`, { token: b.apiKey })).status).toBe(404);
    // The same eventId is independent per tenant.
    const same = await billing("/usage/events", { token: b.apiKey, body: [event] });
    expect(same.body.events[0].status).toBe("accepted");
    await waitForFinalStatuses(a.tenantId);
    await waitForFinalStatuses(b.tenantId);
    await expectPipelineInvariant(a.tenantId);
    await expectPipelineInvariant(b.tenantId);
  });

  it("sends later, through the usage log's alarm, an event whose raw message never went out", async () => {
    const tenant = await pipelineTenant();
    // A stored PENDING event with no message on its way: the re-drive finds it.
    const [stranded] = await storePending(tenant, 1, () => ({ amount: 7 }));
    const swept = await usageLogOf(tenant.tenantId).redrive(Date.now() + 600_000);
    expect(swept).toEqual({ raw: 1, validated: 0, failed: 0 });
    await waitForFinalStatuses(tenant.tenantId);
    const event = await billing(`/usage/events/${stranded?.eventId}`, { token: tenant.apiKey });
    expect(event.body).toMatchObject({ status: "AGGREGATED", amount: 7 });
    expect((await expectPipelineInvariant(tenant.tenantId)).aggregated).toEqual({ api_calls: 7 });
  });

  it("lets a platform admin retry a rejected event once its cause is fixed, and discard another", async () => {
    const tenant = await pipelineTenant();
    const admin = await pipelineTenant();
    await env.DB.prepare(
      "UPDATE users SET is_platform_admin = 1 WHERE id = (SELECT user_id FROM memberships WHERE tenant_id = ?)",
    )
      .bind(admin.tenantId)
      .run();
    // The feature is not in the plan when the events are validated...
    const sentProperties = [
      { format: "csv", rows: 120 },
      { format: "pdf", rows: 9 },
    ];
    const events = [
      usageEvent({ feature: "exports", amount: 3, properties: sentProperties[0] }),
      usageEvent({ feature: "exports", amount: 4, properties: sentProperties[1] }),
    ];
    expect((await billing("/usage/events", { token: tenant.apiKey, body: events })).status).toBe(
      202,
    );
    await waitForFinalStatuses(tenant.tenantId);
    const list = await billing(
      `/admin/dead-letter?tenantId=${tenant.tenantId}&failureStage=VALIDATION`,
      {
        token: admin.ownerToken,
      },
    );
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.meta).toMatchObject({ total: 2, page: 1, limit: 50 });
    const [first, second] = list.body.data as {
      id: string;
      sourceEventId: string;
      originalPayload: { properties?: unknown };
    }[];
    if (!first || !second) throw new Error("expected two dead letters");
    // The raw messages carried the events' properties.
    const sent = sentProperties[events.findIndex((e) => e.eventId === first.sourceEventId)];
    expect(sent).toBeDefined();
    expect(first.originalPayload.properties).toEqual(sent);

    expect(
      (
        await billing(`/admin/dead-letter/${first.id}/retry`, {
          method: "POST",
          token: tenant.ownerToken,
        })
      ).status,
    ).toBe(403);

    // ...then it is added to the subscription, and the admin retries one.
    await env.DB.prepare(
      `INSERT INTO entitlement_snapshots (id, subscription_id, feature_lookup_key, feature_type, included_amount, overage_price, reset_period)
       VALUES (?, ?, 'exports', 'METERED', 0, 1, 'MONTHLY')`,
    )
      .bind(crypto.randomUUID(), tenant.subscriptionId)
      .run();
    const retried = await billing(`/admin/dead-letter/${first.id}/retry`, {
      method: "POST",
      token: admin.ownerToken,
    });
    expect(retried.status, JSON.stringify(retried.body)).toBe(201);
    expect(retried.body).toMatchObject({ status: "RETRYING", retryCount: 1 });
    const discarded = await billing(`/admin/dead-letter/${second.id}/discard`, {
      method: "POST",
      token: admin.ownerToken,
    });
    expect(discarded.status).toBe(201);
    expect(discarded.body.status).toBe("DISCARDED");
    expect(
      (
        await billing(`/admin/dead-letter/${second.id}/retry`, {
          method: "POST",
          token: admin.ownerToken,
        })
      ).body.message,
    ).toBe("Event was discarded - cannot retry");

    await vi.waitFor(
      async () => {
        const row = await billing(`/admin/dead-letter/${first.id}`, { token: admin.ownerToken });
        expect(row.body.status).toBe("RESOLVED");
      },
      { timeout: 10_000, interval: 100 },
    );
    await waitForFinalStatuses(tenant.tenantId);
    const retriedEvent = await billing(`/usage/events/${first.sourceEventId}`, {
      token: tenant.apiKey,
    });
    expect(retriedEvent.body).toMatchObject({ status: "AGGREGATED", properties: sent });
    const { counts } = await expectPipelineInvariant(tenant.tenantId);
    expect(counts).toEqual({ AGGREGATED: 1, REJECTED: 1 });
    expect((await counterFor(tenant.tenantId).check("exports")).used).toBe(
      retriedEvent.body.amount,
    );
  });

  it("writes to D1 per counter flush, never per event", async () => {
    const tenant = await pipelineTenant();
    const tables = (
      await env.DB.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name != 'd1_migrations'",
      ).all<{ name: string }>()
    ).results.map((row) => row.name);
    const rows = async () => {
      const counts: Record<string, number> = {};
      for (const name of tables) {
        const row = await env.DB.prepare(`SELECT count(*) AS n FROM "${name}"`).first<{
          n: number;
        }>();
        counts[name] = row?.n ?? 0;
      }
      return counts;
    };
    const flushStatements = async () =>
      (await env.DB.prepare(
        "SELECT count(*) AS flushes, coalesce(sum(json_array_length(deltas)), 0) AS windows FROM usage_flushes WHERE tenant_id = ?",
      )
        .bind(tenant.tenantId)
        .first<{ flushes: number; windows: number }>()) ?? { flushes: 0, windows: 0 };
    const before = await rows();
    const EVENTS = 1000;
    for (let sent = 0; sent < EVENTS; sent += 100) {
      const batch = Array.from({ length: 100 }, (_, i) =>
        usageEvent({ feature: i % 2 ? "api_calls" : "projects", amount: 1 }),
      );
      const answer = await billing("/usage/events", { token: tenant.apiKey, body: batch });
      expect(answer.body.accepted).toBe(100);
    }
    await waitForFinalStatuses(tenant.tenantId);
    const { counts } = await expectPipelineInvariant(tenant.tenantId);
    expect(counts).toEqual({ AGGREGATED: EVENTS });
    const after = await rows();
    const grown = Object.fromEntries(
      tables
        .map((name) => [name, (after[name] ?? 0) - (before[name] ?? 0)] as const)
        .filter(([, delta]) => delta !== 0),
    );
    // The only rows D1 gained: the counter's flush ledger, the aggregates
    // and their hours.
    const { flushes, windows } = await flushStatements();
    expect(Object.keys(grown).sort()).toEqual([
      "usage_aggregates",
      "usage_flushes",
      "usage_hourly",
    ]);
    expect(grown.usage_flushes).toBe(flushes);
    // Each flush is one D1 batch: an increment per window, one statement for
    // its hours and its ledger row.
    const statements = windows + 2 * flushes;
    const statementsPerEvent = statements / EVENTS;
    console.log(
      JSON.stringify({
        msg: "D1 write statements per event",
        events: EVENTS,
        flushes,
        statements,
        statementsPerEvent,
      }),
    );
    expect(statementsPerEvent).toBeLessThan(0.1);
  }, 60_000);
});
