import { describe, expect, it } from "vitest";
import { sha256Hex } from "../src/platform/domain/secrets.ts";
import { addMember, call, db, expectError, register } from "./helpers.ts";

const K = "/api/v1/api-keys";

describe("API keys", () => {
  it("create: 201 with the key once; only prefix and SHA-256 stored", async () => {
    const owner = await register();
    const created = await call(K, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { name: "ingest", expiresInDays: 30 },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      name: "ingest",
      key: expect.stringMatching(/^mk_[A-Za-z0-9_-]{43}$/),
      prefix: expect.any(String),
      status: "ACTIVE",
      expiresAt: expect.any(String),
      createdAt: expect.any(String),
    });
    const { key, prefix, expiresAt } = created.body;
    expect(prefix).toBe(key.slice(0, 7));
    const days = (Date.parse(expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);
    const row = await db()
      .prepare("SELECT * FROM api_keys WHERE id = ?")
      .bind(created.body.id)
      .first<Record<string, unknown>>();
    expect(row?.key_hash).toBe(await sha256Hex(key));
    expect(row?.key_prefix).toBe(prefix);
    expect(JSON.stringify(row)).not.toContain(key);

    const listed = await call(K, { token: owner.accessToken, tenant: owner.tenant.id });
    expect(listed.status).toBe(200);
    expect(listed.body.meta).toEqual({ total: 1, page: 1, limit: 20, totalPages: 1 });
    expect(listed.body.data[0]).toEqual({
      id: created.body.id,
      name: "ingest",
      prefix,
      status: "ACTIVE",
      expiresAt,
      lastUsedAt: null,
      revokedAt: null,
      createdByUserId: owner.user.id,
      createdAt: created.body.createdAt,
    });
    expect(JSON.stringify(listed.body)).not.toContain(key);
    expect(JSON.stringify(listed.body)).not.toContain(String(row?.key_hash));
  });

  it("validates name and expiresInDays (1..365 integer) and rejects unknown properties", async () => {
    const owner = await register();
    const attempt = (body: unknown) =>
      call(K, { token: owner.accessToken, tenant: owner.tenant.id, body });
    for (const body of [
      {},
      { name: "" },
      { name: "x", expiresInDays: 0 },
      { name: "x", expiresInDays: 366 },
      { name: "x", expiresInDays: 1.5 },
      { name: "x", expiresInDays: "7" },
      { name: "x", tenantId: owner.tenant.id },
    ]) {
      const result = await attempt(body);
      expectError(result, 400, (message) => expect(Array.isArray(message)).toBe(true));
    }
    expect((await attempt({ name: "x", expiresInDays: 365 })).status).toBe(201);
    expect((await attempt({ name: "x", expiresInDays: 1 })).status).toBe(201);
    expectError(
      await call(`${K}?limit=abc`, { token: owner.accessToken, tenant: owner.tenant.id }),
      400,
    );
  });

  it("key authentication: tenant from the key, lastUsedAt recorded; revoked/expired/unknown 401", async () => {
    const owner = await register();
    const other = await register();
    const created = await call(K, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { name: "s2s" },
    });
    const key = created.body.key as string;
    // A forged x-tenant-id header changes nothing: the tenant comes from the key.
    const me = await call(`${K}/current`, { token: key, tenant: other.tenant.id });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      id: created.body.id,
      tenantId: owner.tenant.id,
      status: "ACTIVE",
    });
    const listed = await call(K, { token: owner.accessToken, tenant: owner.tenant.id });
    expect(listed.body.data[0].lastUsedAt).toEqual(expect.any(String));

    expectError(await call(`${K}/current`), 401, "Authorization header is required");
    expectError(await call(`${K}/current`, { token: "mk_short" }), 401, "Invalid API key format");
    expectError(
      await call(`${K}/current`, { token: `mk_${"A".repeat(43)}` }),
      401,
      "API key not found or revoked",
    );
    // An access token is not an API key.
    expectError(await call(`${K}/current`, { token: owner.accessToken }), 401);

    // A key past its expiry (set here before its first use, which no route
    // allows: expiry is fixed at creation).
    const expiring = await call(K, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { name: "expiring", expiresInDays: 1 },
    });
    await db()
      .prepare("UPDATE api_keys SET expires_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), expiring.body.id)
      .run();
    expectError(
      await call(`${K}/current`, { token: expiring.body.key }),
      401,
      "API key has expired",
    );
    const expired = await call(K, { token: owner.accessToken, tenant: owner.tenant.id });
    expect(expired.body.data[0]).toMatchObject({ id: expiring.body.id, status: "EXPIRED" });
  });

  it("revoke: 200 then 409 forever; the key stops working", async () => {
    const owner = await register();
    const created = await call(K, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { name: "temp" },
    });
    const revoked = await call(`${K}/${created.body.id}`, {
      method: "DELETE",
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({
      id: created.body.id,
      status: "REVOKED",
      revokedAt: expect.any(String),
    });
    expectError(
      await call(`${K}/${created.body.id}`, {
        method: "DELETE",
        token: owner.accessToken,
        tenant: owner.tenant.id,
      }),
      409,
      "API key is already revoked",
    );
    expectError(
      await call(`${K}/current`, { token: created.body.key }),
      401,
      "API key not found or revoked",
    );
    expectError(
      await call(`${K}/00000000-0000-4000-8000-000000000000`, {
        method: "DELETE",
        token: owner.accessToken,
        tenant: owner.tenant.id,
      }),
      404,
    );
  });

  it("tenant isolation: tenant A's admin can neither list nor revoke tenant B's keys", async () => {
    const a = await register();
    const b = await register();
    const adminA = await addMember(a, "ADMIN");
    const keyB = await call(K, {
      token: b.accessToken,
      tenant: b.tenant.id,
      body: { name: "b-key" },
    });
    // Naming B's tenant: not a member.
    expectError(
      await call(K, { token: adminA.accessToken, tenant: b.tenant.id }),
      403,
      "You do not have access to this tenant",
    );
    expectError(
      await call(`${K}/${keyB.body.id}`, {
        method: "DELETE",
        token: adminA.accessToken,
        tenant: b.tenant.id,
      }),
      403,
    );
    // Naming their own tenant with B's key id: not found there, and B's key is untouched.
    expectError(
      await call(`${K}/${keyB.body.id}`, {
        method: "DELETE",
        token: adminA.accessToken,
        tenant: a.tenant.id,
      }),
      404,
    );
    const listA = await call(K, { token: a.accessToken, tenant: a.tenant.id });
    expect(listA.body.data).toEqual([]);
    expect((await call(`${K}/current`, { token: keyB.body.key })).status).toBe(200);
    // Nor can they read B's tenant, its members or change it.
    expectError(
      await call(`/api/v1/tenants/${b.tenant.id}`, {
        token: adminA.accessToken,
        tenant: b.tenant.id,
      }),
      403,
    );
    expectError(
      await call(`/api/v1/tenants/${b.tenant.id}/members`, {
        token: a.accessToken,
        tenant: b.tenant.id,
      }),
      403,
    );
    expectError(
      await call(`/api/v1/tenants/${b.tenant.id}`, {
        method: "PATCH",
        token: a.accessToken,
        tenant: a.tenant.id,
        body: { name: "pwned" },
      }),
      403,
    );
    const bTenant = await call(`/api/v1/tenants/${b.tenant.id}`, {
      token: b.accessToken,
      tenant: b.tenant.id,
    });
    expect(bTenant.body.name).toBe(b.tenant.name);
  });
});
