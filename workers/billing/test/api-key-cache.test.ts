import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import {
  API_KEY_CACHE_BOUND_MS,
  ApiKeyVerifier,
  LAST_USED_INTERVAL_MS,
} from "../src/platform/api-key-verification.ts";
import { type Account, call, db, expectError, readResult, register, request } from "./helpers.ts";

// API keys are verified from caches (isolate memory, then the Cache API,
// then D1). What a client sees: a revocation or a suspension works in the
// isolate that made it at once, and in any other within the documented
// bound; a new key works at once everywhere.

const K = "/api/v1/api-keys";

/** Another isolate: its own verifier (its own memory) with a clock the test moves. */
function otherIsolate(startMs = Date.now()) {
  let nowMs = startMs;
  const app = createApp({ apiKeyVerifier: new ApiKeyVerifier({ clock: () => nowMs }) });
  return {
    move(ms: number) {
      nowMs += ms;
    },
    async current(key: string) {
      const ctx = createExecutionContext();
      const response = await app.fetch(request(`${K}/current`, { token: key }), env, ctx);
      await waitOnExecutionContext(ctx);
      return readResult(response);
    },
  };
}

async function newKey(owner: Account, name = "server") {
  const created = await call(K, {
    token: owner.accessToken,
    tenant: owner.tenant.id,
    body: { name },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body as { id: string; key: string };
}

function revoke(owner: Account, id: string) {
  return call(`${K}/${id}`, {
    method: "DELETE",
    token: owner.accessToken,
    tenant: owner.tenant.id,
  });
}

describe("API key caching and revocation", () => {
  it("a revoked key is refused at once where it was revoked, and everywhere within the bound", async () => {
    const owner = await register();
    const { id, key } = await newKey(owner);
    const other = otherIsolate();
    expect((await call(`${K}/current`, { token: key })).status).toBe(200);
    expect((await other.current(key)).status).toBe(200);

    expect((await revoke(owner, id)).status).toBe(200);
    expectError(await call(`${K}/current`, { token: key }), 401, "API key not found or revoked");
    // The other isolate answers from its memory, read before the revocation...
    other.move(1_000);
    expect((await other.current(key)).status).toBe(200);
    // ...never once that read is the bound old.
    other.move(API_KEY_CACHE_BOUND_MS - 1_000);
    expectError(await other.current(key), 401, "API key not found or revoked");
  });

  it("re-reads a busy key in the background before the bound, so a revocation lands sooner", async () => {
    const owner = await register();
    const { id, key } = await newKey(owner);
    const other = otherIsolate();
    expect((await other.current(key)).status).toBe(200);
    expect((await revoke(owner, id)).status).toBe(200);
    other.move(API_KEY_CACHE_BOUND_MS - 5_000);
    // Served from memory while D1 is asked again after the response...
    expect((await other.current(key)).status).toBe(200);
    // ...so the next request already knows.
    expectError(await other.current(key), 401, "API key not found or revoked");
  });

  it("a suspended tenant's key is refused within the bound", async () => {
    const owner = await register();
    const { key } = await newKey(owner);
    const other = otherIsolate();
    expect((await other.current(key)).status).toBe(200);
    // Suspension is an operator's change in the database: no isolate hears of it.
    await db()
      .prepare("UPDATE tenants SET status = 'SUSPENDED' WHERE id = ?")
      .bind(owner.tenant.id)
      .run();
    other.move(API_KEY_CACHE_BOUND_MS);
    expectError(await other.current(key), 403, "Tenant is suspended");
  });

  it("a deleted tenant's keys are refused at once where it was deleted, and everywhere within the bound", async () => {
    const owner = await register();
    const { key } = await newKey(owner);
    const other = otherIsolate();
    expect((await call(`${K}/current`, { token: key })).status).toBe(200);
    expect((await other.current(key)).status).toBe(200);
    const deleted = await call(`/api/v1/tenants/${owner.tenant.id}`, {
      method: "DELETE",
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expectError(await call(`${K}/current`, { token: key }), 401, "API key not found or revoked");
    other.move(API_KEY_CACHE_BOUND_MS);
    expectError(await other.current(key), 401, "API key not found or revoked");
  });

  it("a rotated key works at once in every isolate, and the old one stops", async () => {
    const owner = await register();
    const old = await newKey(owner, "old");
    const other = otherIsolate();
    expect((await other.current(old.key)).status).toBe(200);
    const rotated = await newKey(owner, "rotated");
    expect((await revoke(owner, old.id)).status).toBe(200);
    expect((await call(`${K}/current`, { token: rotated.key })).body).toMatchObject({
      id: rotated.id,
    });
    expect((await other.current(rotated.key)).body).toMatchObject({ id: rotated.id });
    expect((await call(`${K}/current`, { token: old.key })).status).toBe(401);
  });

  it("does not serve an entry of the shared cache past the bound either", async () => {
    const owner = await register();
    const { id, key } = await newKey(owner);
    const startMs = Date.now();
    // The first isolate reads D1 and leaves the key in the data center's cache.
    const first = otherIsolate(startMs);
    expect((await first.current(key)).status).toBe(200);
    await db().prepare("UPDATE api_keys SET status = 'REVOKED' WHERE id = ?").bind(id).run();
    // A second isolate, later, finds it there: served while the read is fresh enough...
    const second = otherIsolate(startMs + 5_000);
    expect((await second.current(key)).status).toBe(200);
    // ...and a third, once the read is the bound old, goes to D1.
    const third = otherIsolate(startMs + API_KEY_CACHE_BOUND_MS);
    expectError(await third.current(key), 401, "API key not found or revoked");
  });
});

describe("lastUsedAt", () => {
  it("is written at most once per key per minute, not on every request", async () => {
    const owner = await register();
    const { id, key } = await newKey(owner);
    const isolate = otherIsolate();
    const lastUsedAt = async () =>
      (
        await db()
          .prepare("SELECT last_used_at FROM api_keys WHERE id = ?")
          .bind(id)
          .first<{ last_used_at: string | null }>()
      )?.last_used_at ?? null;

    expect((await isolate.current(key)).status).toBe(200);
    expect(await lastUsedAt()).toEqual(expect.any(String));
    // Cleared behind the isolate's back: any write from here on would show.
    await db().prepare("UPDATE api_keys SET last_used_at = NULL WHERE id = ?").bind(id).run();
    for (let request = 0; request < 5; request++) {
      isolate.move(10_000);
      expect((await isolate.current(key)).status).toBe(200);
    }
    expect(await lastUsedAt()).toBeNull();
    isolate.move(LAST_USED_INTERVAL_MS - 50_000);
    expect((await isolate.current(key)).status).toBe(200);
    expect(await lastUsedAt()).toEqual(expect.any(String));
  });
});
