import {
  createExecutionContext,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import type { EntitlementCounter } from "../src/index.ts";
import type { AppEnv } from "../src/platform/app-env.ts";
import { IDEMPOTENCY_TTL_MS } from "../src/platform/domain/idempotency.ts";
import { idempotencyKeys, idempotent } from "../src/platform/idempotency.ts";
import { pruneIdempotencyKeys } from "../src/platform/idempotency-prune.ts";
import { buildPlan, createApiKey, platformAdmin, subscribe } from "./catalog-helpers.ts";
import { insertSubscription, insertTenant, snapshot } from "./entitlement-fixtures.ts";
import {
  type CallOptions,
  call,
  db,
  expectError,
  readResult,
  register,
  request,
  unique,
} from "./helpers.ts";

// Idempotency-Key over HTTP, as a retrying client sends it.

const keyed = (key: string, options: CallOptions = {}): CallOptions => ({
  ...options,
  headers: { ...options.headers, "Idempotency-Key": key },
});

async function subscribedTenant(limits: { hard?: number } = {}) {
  const admin = await platformAdmin();
  const plan = await buildPlan(admin, limits);
  const owner = await register();
  await subscribe(owner, plan.plan.id, plan.monthly.id);
  const apiKey = await createApiKey(owner);
  return { admin, plan, owner, apiKey };
}

async function usedOf(apiKey: string, feature: string): Promise<number> {
  const checked = await call(`/api/v1/entitlements/${feature}/check`, { token: apiKey });
  expect(checked.status).toBe(200);
  return checked.body.used;
}

function consume(apiKey: string, feature: string, amount: number, key?: string) {
  const options: CallOptions = { token: apiKey, body: { amount } };
  return call(`/api/v1/entitlements/${feature}/consume`, key ? keyed(key, options) : options);
}

describe("Idempotency-Key", () => {
  it("replays the first answer of a consume with the same key and counts once", async () => {
    const { plan, apiKey } = await subscribedTenant();
    const key = unique("consume");
    const first = await consume(apiKey, plan.keys.metered, 5, key);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.headers.get("Idempotent-Replayed")).toBeNull();
    const again = await consume(apiKey, plan.keys.metered, 5, key);
    expect(again.status).toBe(200);
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await usedOf(apiKey, plan.keys.metered)).toBe(5);
    // Without a key every call counts (the double count, still possible on purpose).
    await consume(apiKey, plan.keys.metered, 5);
    expect(await usedOf(apiKey, plan.keys.metered)).toBe(10);
  });

  it("answers 422 when the key comes back with another body, path or tenant", async () => {
    const { plan, apiKey } = await subscribedTenant();
    const key = unique("conflict");
    expect((await consume(apiKey, plan.keys.metered, 5, key)).status).toBe(200);
    const otherBody = await consume(apiKey, plan.keys.metered, 6, key);
    expectError(otherBody, 422, /used with other parameters/);
    const otherPath = await consume(apiKey, plan.keys.soft, 5, key);
    expectError(otherPath, 422, /used with other parameters/);
    expect(await usedOf(apiKey, plan.keys.metered)).toBe(5);
    expect(await usedOf(apiKey, plan.keys.soft)).toBe(0);
  });

  it("keeps keys per caller: another tenant's same key is its own request", async () => {
    const one = await subscribedTenant();
    const other = await register();
    const key = unique("shared");
    expect((await consume(one.apiKey, one.plan.keys.metered, 2, key)).status).toBe(200);
    const created = await call("/api/v1/api-keys", {
      ...keyed(key),
      token: other.accessToken,
      tenant: other.tenant.id,
      body: { name: "other" },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.headers.get("Idempotent-Replayed")).toBeNull();
  });

  it("answers 409 while the first request with the key is still running, and changes nothing", async () => {
    const { plan, owner, apiKey } = await subscribedTenant();
    // The tenant's counter reports the key's first request as still being
    // decided (the counter test below produces that state for real).
    const stillRunning = {
      idFromName: (name: string) => env.ENTITLEMENT_COUNTER.idFromName(name),
      get: () => ({ consumeKeyed: async () => ({ kind: "in_flight" }) }),
    };
    const ctx = createExecutionContext();
    const response = await createApp().fetch(
      request(`/api/v1/entitlements/${plan.keys.metered}/consume`, {
        ...keyed(unique("inflight")),
        token: apiKey,
        body: { amount: 3 },
      }),
      { ...env, ENTITLEMENT_COUNTER: stillRunning },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expectError(await readResult(response), 409, /still being processed; retry later/);
    expect(await usedOf(apiKey, plan.keys.metered)).toBe(0);
    const inD1 = await db()
      .prepare("SELECT count(*) AS n FROM idempotency_keys WHERE scope = ?")
      .bind(`tenant:${owner.tenant.id}`)
      .first<{ n: number }>();
    expect(inD1?.n).toBe(0);
  });

  it("a retry after the first answer was lost gets that answer, and the counter counts once", async () => {
    const { plan, owner, apiKey } = await subscribedTenant();
    const key = unique("lost");
    const body = JSON.stringify({ amount: 3 });
    const path = `/api/v1/entitlements/${plan.keys.metered}/consume`;
    // The first request reached the counter, which counted and kept the
    // answer; the client never received it.
    const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, owner.tenant.id);
    const first = await counter.consumeKeyed(plan.keys.metered, 3, {
      requestId: await sha256(`tenant:${owner.tenant.id}\n${key}`),
      requestHash: await sha256(["POST", path, "", body].join("\n")),
      atMs: Date.now(),
      correlationId: "first-request",
    });
    expect(first).toMatchObject({ kind: "answered", replayed: false });
    expect(await usedOf(apiKey, plan.keys.metered)).toBe(3);

    const retry = await call(path, { ...keyed(key), token: apiKey, rawBody: body });
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(retry.body).toMatchObject({ consumed: 3, used: 3 });
    expect(await usedOf(apiKey, plan.keys.metered)).toBe(3);
  });

  it("counts 20 parallel consumes with one key once", async () => {
    const { plan, apiKey } = await subscribedTenant();
    const key = unique("parallel");
    const results = await Promise.all(
      Array.from({ length: 20 }, () => consume(apiKey, plan.keys.metered, 1, key)),
    );
    const statuses = results.map((result) => result.status);
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((status) => status === 200 || status === 409)).toBe(true);
    const firsts = results.filter(
      (result) => result.status === 200 && !result.headers.get("Idempotent-Replayed"),
    );
    expect(firsts).toHaveLength(1);
    expect(await usedOf(apiKey, plan.keys.metered)).toBe(1);
  });

  it("replays a 403 quota refusal as 403", async () => {
    const { plan, apiKey } = await subscribedTenant({ hard: 2 });
    const key = unique("refused");
    const refused = await consume(apiKey, plan.keys.hard, 3, key);
    expectError(refused, 403, /quota/i);
    const replay = await consume(apiKey, plan.keys.hard, 3, key);
    expect(replay.status).toBe(403);
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect(replay.body).toEqual(refused.body);
    // The key's record lives in the tenant's counter, next to the count: no D1 write.
    const row = await db()
      .prepare("SELECT state FROM idempotency_keys WHERE key = ?")
      .bind(key)
      .first();
    expect(row).toBeNull();
  });

  it("rejects malformed keys with 400 and ignores keys on /auth routes", async () => {
    const { plan, apiKey } = await subscribedTenant();
    for (const bad of ["x".repeat(256), "bad\u0001key"]) {
      const response = await call(`/api/v1/entitlements/${plan.keys.metered}/consume`, {
        ...keyed(bad),
        token: apiKey,
        body: { amount: 1 },
      });
      expectError(response, 400, /Idempotency-Key must be 1 to 255 printable ASCII characters/);
    }
    expect(await usedOf(apiKey, plan.keys.metered)).toBe(0);
    const account = await register();
    const key = unique("login");
    const first = await call("/api/v1/auth/login", {
      ...keyed(key),
      body: { email: account.email, password: account.password },
    });
    const second = await call("/api/v1/auth/login", {
      ...keyed(key),
      body: { email: account.email, password: account.password },
    });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers.get("Idempotent-Replayed")).toBeNull();
    expect(second.body.refreshToken).not.toBe(first.body.refreshToken);
  });

  it("replays POST /api-keys with the same key id but never the raw key", async () => {
    const owner = await register();
    const key = unique("apikey");
    const create = () =>
      call("/api/v1/api-keys", {
        ...keyed(key),
        token: owner.accessToken,
        tenant: owner.tenant.id,
        body: { name: "retried" },
      });
    const first = await create();
    expect(first.status).toBe(201);
    expect(first.body.key).toMatch(/^mk_/);
    const replay = await create();
    expect(replay.status).toBe(201);
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    const { key: _raw, ...fields } = first.body;
    expect(replay.body).toEqual({
      ...fields,
      notice: expect.stringMatching(/shown only in the first response/),
    });
    const stored = await db()
      .prepare("SELECT response_body FROM idempotency_keys WHERE key = ?")
      .bind(key)
      .first<{ response_body: string }>();
    expect(stored?.response_body).not.toContain(first.body.key);
    const listed = await call("/api/v1/api-keys", {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(listed.body.data.filter((row: { name: string }) => row.name === "retried")).toHaveLength(
      1,
    );
  });

  it("expires after 24 hours: the same key then runs as a new request", async () => {
    const { plan, apiKey } = await subscribedTenant();
    let nowMs = Date.now();
    const app = createApp({ idempotencyClock: () => nowMs });
    const send = async () => {
      const ctx = createExecutionContext();
      const response = await app.fetch(
        request(`/api/v1/entitlements/${plan.keys.metered}/consume`, {
          ...keyed("same-key-next-day"),
          token: apiKey,
          body: { amount: 4 },
        }),
        env,
        ctx,
      );
      await waitOnExecutionContext(ctx);
      return readResult(response);
    };
    expect((await send()).status).toBe(200);
    nowMs += IDEMPOTENCY_TTL_MS - 1000;
    const within = await send();
    expect(within.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await usedOf(apiKey, plan.keys.metered)).toBe(4);
    nowMs += 2000;
    const after = await send();
    expect(after.status).toBe(200);
    expect(after.headers.get("Idempotent-Replayed")).toBeNull();
    expect(await usedOf(apiKey, plan.keys.metered)).toBe(8);
  });

  it("allows the header in CORS preflights and documents it in OpenAPI", async () => {
    const preflight = await exports.default.fetch(
      new Request("http://billing/api/v1/api-keys", {
        method: "OPTIONS",
        headers: {
          origin: "http://localhost:3000",
          "access-control-request-method": "POST",
          "access-control-request-headers": "idempotency-key",
        },
      }),
    );
    expect(preflight.headers.get("access-control-allow-headers")?.toLowerCase()).toContain(
      "idempotency-key",
    );
    const doc = await call("/api/docs-json");
    expect(doc.body.components.parameters.IdempotencyKey).toMatchObject({
      in: "header",
      name: "Idempotency-Key",
    });
    const consumeOp = doc.body.paths["/api/v1/entitlements/{featureKey}/consume"].post;
    expect(consumeOp.parameters).toContainEqual({ $ref: "#/components/parameters/IdempotencyKey" });
    const loginOp = doc.body.paths["/api/v1/auth/login"].post;
    expect(loginOp.parameters ?? []).not.toContainEqual({
      $ref: "#/components/parameters/IdempotencyKey",
    });
  });
});

describe("Idempotency-Key and answers that are not kept", () => {
  it("does not keep 5xx or 429 answers: a retry runs the handler again", async () => {
    const owner = await register();
    const answers = [503, 429, 201];
    let runs = 0;
    const app = new Hono<AppEnv>();
    app.use(idempotencyKeys({ prefix: "" }));
    app.post(
      "/things",
      async (c, next) => {
        c.set("user", { id: owner.user.id } as AppEnv["Variables"]["user"]);
        await idempotent(c, next);
      },
      (c) => {
        const status = answers[runs++] as 201 | 429 | 503;
        return c.json({ run: runs }, status);
      },
    );
    const key = unique("flaky");
    const send = () =>
      app.request(
        "/things",
        { method: "POST", headers: { "Idempotency-Key": key }, body: "{}" },
        env,
      );
    expect((await send()).status).toBe(503);
    expect((await send()).status).toBe(429);
    const done = await send();
    expect(done.status).toBe(201);
    expect(await done.json()).toEqual({ run: 3 });
    const replay = await send();
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await replay.json()).toEqual({ run: 3 });
    expect(runs).toBe(3);
  });
});

describe("EntitlementCounter keyed consumes", () => {
  const keyedInput = (tenantId: string, requestHash: string) => ({
    tenantId,
    featureKey: "calls",
    amount: 2,
    requestId: "caller-and-key",
    requestHash,
    atMs: Date.now(),
    correlationId: "first",
  });

  it("tells a repeat that arrives while the first is being decided, and refuses another request with the key", async () => {
    const tenantId = await insertTenant();
    await insertSubscription({ tenantId, snapshots: [snapshot.metered("calls", 100)] });
    const stub = env.ENTITLEMENT_COUNTER.get(env.ENTITLEMENT_COUNTER.idFromName(tenantId));
    await runInDurableObject(stub, async (counter: EntitlementCounter) => {
      // Nothing loaded yet: the first call waits for the subscription state.
      const first = counter.consumeKeyed(keyedInput(tenantId, "request-a"));
      expect(await counter.consumeKeyed(keyedInput(tenantId, "request-a"))).toEqual({
        kind: "in_flight",
      });
      expect(await counter.consumeKeyed(keyedInput(tenantId, "request-b"))).toEqual({
        kind: "key_reused",
      });
      expect(await first).toMatchObject({ kind: "answered", replayed: false });
      expect(await counter.consumeKeyed(keyedInput(tenantId, "request-a"))).toMatchObject({
        kind: "answered",
        replayed: true,
        correlationId: "first",
      });
      expect(await counter.consumeKeyed(keyedInput(tenantId, "request-b"))).toEqual({
        kind: "key_reused",
      });
    });
    expect((await entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId).check("calls")).used).toBe(
      2,
    );
  });
});

describe("EntitlementCounter request ids", () => {
  it("takes units once per request id, however many calls race", async () => {
    const tenantId = await insertTenant();
    await insertSubscription({ tenantId, snapshots: [snapshot.metered("calls", 100)] });
    const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => counter.consume("calls", 1, undefined, "request-1")),
    );
    expect(new Set(results.map((result) => JSON.stringify(result))).size).toBe(1);
    expect((await counter.check("calls")).used).toBe(1);
    await counter.consume("calls", 1, undefined, "request-2");
    expect((await counter.check("calls")).used).toBe(2);
  });
});

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

describe("Idempotency-Key retention", () => {
  it("the Cron Trigger prunes rows past 24 hours and keeps the rest", async () => {
    const nowMs = Date.now();
    const expired = unique("old");
    const fresh = unique("new");
    for (const [key, expiresAtMs] of [
      [expired, nowMs - 1],
      [fresh, nowMs + IDEMPOTENCY_TTL_MS],
    ] as const) {
      await db()
        .prepare(
          `INSERT INTO idempotency_keys (scope, key, request_hash, state, created_at_ms, expires_at_ms, locked_until_ms, response_status, response_body)
           VALUES ('user:prune-test', ?, 'h', 'COMPLETED', ?, ?, ?, 200, '{}')`,
        )
        .bind(key, nowMs - IDEMPOTENCY_TTL_MS, expiresAtMs, nowMs)
        .run();
    }
    expect(await pruneIdempotencyKeys(env, nowMs)).toBeGreaterThanOrEqual(1);
    const left = await db()
      .prepare("SELECT key FROM idempotency_keys WHERE scope = 'user:prune-test'")
      .all<{ key: string }>();
    expect(left.results.map((row) => row.key)).toEqual([fresh]);
  });
});
