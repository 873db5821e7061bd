import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type ArchivedUsageEvent, archiveObjectKey } from "../src/domain/usage-archive.ts";
import { runUsageArchive } from "../src/jobs/usage-archive.ts";
import { createApiKey } from "./catalog-helpers.ts";
import { insertSubscription, snapshot } from "./entitlement-fixtures.ts";
import { call, db, register } from "./helpers.ts";

// The raw event log's horizon (jobs/usage-archive.ts): events received
// before the retention window (35 days, whole UTC days) go to R2 per
// tenant, day and part, then leave D1; GET /usage/events/:eventId still
// answers for them from R2. The job is run the way the Cron Trigger runs
// it, with the clock passed in.

const DAY_MS = 86_400_000;
const NOW = new Date();
const dayAgo = (days: number) =>
  new Date(Math.floor((NOW.getTime() - days * DAY_MS) / DAY_MS) * DAY_MS + 3_600_000);

interface Customer {
  tenantId: string;
  subscriptionId: string;
  key: string;
}

async function customer(): Promise<Customer> {
  const owner = await register();
  const { subscriptionId } = await insertSubscription({
    tenantId: owner.tenant.id,
    snapshots: [snapshot.metered("api_calls", 100)],
    startedAt: new Date(NOW.getTime() - 60 * DAY_MS),
  });
  return { tenantId: owner.tenant.id, subscriptionId, key: await createApiKey(owner) };
}

/** Events as the pipeline leaves them (AGGREGATED unless said otherwise), received on `day`. */
async function storedEvents(
  who: Customer,
  receivedOn: Date,
  count: number,
  status: "AGGREGATED" | "REJECTED" | "PENDING" | "VALIDATED" = "AGGREGATED",
) {
  const events = Array.from({ length: count }, (_, i) => ({
    id: crypto.randomUUID(),
    eventId: crypto.randomUUID(),
    amount: i + 1,
    receivedAt: new Date(receivedOn.getTime() + i * 1000).toISOString(),
    timestamp: new Date(receivedOn.getTime() + i * 1000 - 500).toISOString(),
  }));
  await db()
    .prepare(
      `INSERT INTO usage_events
         (id, tenant_id, event_id, subscription_id, feature_lookup_key, amount, timestamp, received_at,
          status, rejection_code, period_key, validated_at, aggregated_at, metadata)
       SELECT json_extract(value, '$.id'), ?1, json_extract(value, '$.eventId'), ?2, 'api_calls',
              json_extract(value, '$.amount'), json_extract(value, '$.timestamp'),
              json_extract(value, '$.receivedAt'), ?3,
              CASE WHEN ?3 = 'REJECTED' THEN 'TIMESTAMP_TOO_OLD' END, 'p',
              json_extract(value, '$.receivedAt'),
              CASE WHEN ?3 = 'AGGREGATED' THEN json_extract(value, '$.receivedAt') END,
              json_object('source', 'archive-test')
         FROM json_each(?4)`,
    )
    .bind(who.tenantId, who.subscriptionId, status, JSON.stringify(events))
    .run();
  return events;
}

async function rowsInD1(tenantId: string): Promise<string[]> {
  const { results } = await db()
    .prepare("SELECT event_id AS eventId FROM usage_events WHERE tenant_id = ? ORDER BY event_id")
    .bind(tenantId)
    .all<{ eventId: string }>();
  return results.map((row) => row.eventId);
}

/** Every archived event of the tenant, read back from R2 (all parts). */
async function archivedInR2(tenantId: string) {
  const listed = await env.USAGE_ARCHIVE.list({ prefix: `usage-events/${tenantId}/` });
  const events: (ArchivedUsageEvent & { key: string })[] = [];
  for (const object of listed.objects) {
    const body = await env.USAGE_ARCHIVE.get(object.key);
    if (!body) throw new Error(`listed ${object.key} cannot be read`);
    const text = await new Response(body.body.pipeThrough(new DecompressionStream("gzip"))).text();
    for (const line of text.split("\n").filter(Boolean)) {
      events.push({ ...(JSON.parse(line) as ArchivedUsageEvent), key: object.key });
    }
  }
  return { keys: listed.objects.map((object) => object.key).sort(), events };
}

const sorted = (values: string[]) => [...values].sort();

describe("usage event archive", () => {
  it("moves whole old days to R2 in parts, deletes them from D1, and still answers lookups", async () => {
    const who = await customer();
    const aggregatesBefore = await call("/api/v1/usage/aggregates", { token: who.key });
    const older = await storedEvents(who, dayAgo(40), 22);
    const rejected = await storedEvents(who, dayAgo(40), 3, "REJECTED");
    const old = await storedEvents(who, dayAgo(38), 4);
    const recent = await storedEvents(who, dayAgo(34), 3);

    const report = await runUsageArchive(env, NOW, { partEvents: 10 });
    expect(report).toMatchObject({ uploaded: 4, finished: 4, events: 29, deleted: 29 });

    const day40 = dayAgo(40).toISOString().slice(0, 10);
    const day38 = dayAgo(38).toISOString().slice(0, 10);
    const { keys, events } = await archivedInR2(who.tenantId);
    expect(keys).toEqual(
      sorted([
        archiveObjectKey(who.tenantId, day38, 0),
        archiveObjectKey(who.tenantId, day40, 0),
        archiveObjectKey(who.tenantId, day40, 1),
        archiveObjectKey(who.tenantId, day40, 2),
      ]),
    );
    expect(sorted(events.map((e) => e.eventId))).toEqual(
      sorted([...older, ...rejected, ...old].map((e) => e.eventId)),
    );
    expect(await rowsInD1(who.tenantId)).toEqual(sorted(recent.map((e) => e.eventId)));
    const { results: manifest } = await db()
      .prepare("SELECT status, event_count AS n FROM usage_archive_parts WHERE tenant_id = ?")
      .bind(who.tenantId)
      .all<{ status: string; n: number }>();
    expect(manifest.map((m) => m.status)).toEqual(["DELETED", "DELETED", "DELETED", "DELETED"]);
    expect(manifest.reduce((sum, m) => sum + m.n, 0)).toBe(29);

    // Lookups: archived events from R2 with where they are, live ones from D1.
    const archived = older[3] as (typeof older)[number];
    const found = await call(`/api/v1/usage/events/${archived.eventId}`, { token: who.key });
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({
      id: archived.id,
      eventId: archived.eventId,
      feature: "api_calls",
      amount: archived.amount,
      receivedAt: archived.receivedAt,
      status: "AGGREGATED",
      metadata: { source: "archive-test" },
      archive: { bucket: "usage-archive" },
    });
    expect(keys).toContain(found.body.archive.key);
    expect(found.body.archive.archivedAt).toEqual(expect.any(String));
    const rejectedView = await call(`/api/v1/usage/events/${rejected[0]?.eventId}`, {
      token: who.key,
    });
    expect(rejectedView.body).toMatchObject({ status: "REJECTED", reason: "TIMESTAMP_TOO_OLD" });
    const live = await call(`/api/v1/usage/events/${recent[0]?.eventId}`, { token: who.key });
    expect(live.status).toBe(200);
    expect(live.body.archive).toBeUndefined();
    const unknown = await call(`/api/v1/usage/events/${crypto.randomUUID()}`, { token: who.key });
    expect(unknown.status).toBe(404);
    // Another tenant's key finds nothing of it.
    const other = await customer();
    expect(
      (await call(`/api/v1/usage/events/${archived.eventId}`, { token: other.key })).status,
    ).toBe(404);

    // Aggregates (what invoices read) are untouched.
    expect((await call("/api/v1/usage/aggregates", { token: who.key })).body).toEqual(
      aggregatesBefore.body,
    );

    // A repeated run finds nothing more to do and writes nothing.
    const again = await runUsageArchive(env, NOW, { partEvents: 10 });
    expect(again).toMatchObject({ uploaded: 0, finished: 0, events: 0, deleted: 0 });
    expect((await archivedInR2(who.tenantId)).keys).toEqual(keys);
  });

  for (const step of ["upload", "record", "index"] as const) {
    it(`loses and duplicates nothing when a run dies after the ${step}, before the delete`, async () => {
      const who = await customer();
      const stored = await storedEvents(who, dayAgo(45), 15);

      await expect(runUsageArchive(env, NOW, { partEvents: 10, crashAfter: step })).rejects.toThrow(
        /injected crash/,
      );
      // The object may be there; the rows are all still in D1.
      expect(await rowsInD1(who.tenantId)).toEqual(sorted(stored.map((e) => e.eventId)));
      expect((await archivedInR2(who.tenantId)).keys).toHaveLength(1);

      const resumed = await runUsageArchive(env, NOW, { partEvents: 10 });
      expect(resumed.deleted).toBe(15);
      const { keys, events } = await archivedInR2(who.tenantId);
      expect(keys).toHaveLength(2);
      // Each event exactly once across the parts.
      expect(sorted(events.map((e) => e.eventId))).toEqual(sorted(stored.map((e) => e.eventId)));
      expect(await rowsInD1(who.tenantId)).toEqual([]);
      const view = await call(`/api/v1/usage/events/${stored[14]?.eventId}`, { token: who.key });
      expect(view.status).toBe(200);
      expect(view.body.archive.key).toEqual(expect.stringContaining(who.tenantId));
    });
  }

  it("leaves a day alone while any of its events is unfinished", async () => {
    const who = await customer();
    const done = await storedEvents(who, dayAgo(50), 4);
    const [stuck] = await storedEvents(who, dayAgo(50), 1, "VALIDATED");

    const first = await runUsageArchive(env, NOW);
    expect(first.skippedDays).toBeGreaterThanOrEqual(1);
    expect((await archivedInR2(who.tenantId)).keys).toEqual([]);
    expect(await rowsInD1(who.tenantId)).toHaveLength(5);

    await db()
      .prepare("UPDATE usage_events SET status = 'AGGREGATED' WHERE id = ?")
      .bind(stuck?.id)
      .run();
    await runUsageArchive(env, NOW);
    expect(await rowsInD1(who.tenantId)).toEqual([]);
    expect(sorted((await archivedInR2(who.tenantId)).events.map((e) => e.eventId))).toEqual(
      sorted([...done.map((e) => e.eventId), stuck?.eventId ?? ""]),
    );
  });
});
