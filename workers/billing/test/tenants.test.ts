import { describe, expect, it } from "vitest";
import { addMember, call, db, expectError, register, uniqueSlug } from "./helpers.ts";

const T = "/api/v1/tenants";

describe("POST /tenants and GET /tenants", () => {
  it("creates a tenant with the caller as OWNER; 409 naming a taken slug", async () => {
    const owner = await register();
    const slug = uniqueSlug();
    const created = await call(T, {
      token: owner.accessToken,
      body: { name: "  Second Co ", slug, metadata: { plan: "pro" } },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: "Second Co",
      slug,
      status: "ACTIVE",
      role: "OWNER",
      metadata: { plan: "pro" },
    });
    expectError(
      await call(T, { token: owner.accessToken, body: { name: "Again", slug } }),
      409,
      `Tenant with slug "${slug}" already exists`,
    );
    expectError(await call(T, { body: { name: "x", slug: uniqueSlug() } }), 401);
    expectError(
      await call(T, { token: owner.accessToken, body: { name: "", slug: "A" } }),
      400,
      (message) =>
        expect(message).toEqual(
          expect.arrayContaining([
            "name should not be empty",
            "slug must be at least 3 characters",
          ]),
        ),
    );
  });

  it("lists only the caller's tenants, paginated, newest first", async () => {
    const owner = await register();
    await register(); // someone else's tenant never shows up
    for (let i = 0; i < 2; i++) {
      await call(T, { token: owner.accessToken, body: { name: `Extra ${i}`, slug: uniqueSlug() } });
    }
    const page1 = await call(`${T}?page=1&limit=2`, { token: owner.accessToken });
    expect(page1.status).toBe(200);
    expect(page1.body.meta).toEqual({ total: 3, page: 1, limit: 2, totalPages: 2 });
    expect(page1.body.data.map((t: { name: string }) => t.name)).toEqual(["Extra 1", "Extra 0"]);
    const page2 = await call(`${T}?page=2&limit=2`, { token: owner.accessToken });
    expect(page2.body.data).toHaveLength(1);
    expect(page2.body.data[0]).toMatchObject({ id: owner.tenant.id, role: "OWNER" });
    const defaults = await call(T, { token: owner.accessToken });
    expect(defaults.body.meta).toEqual({ total: 3, page: 1, limit: 20, totalPages: 1 });
  });

  it.each([
    ["page=0", "page must be at least 1"],
    ["page=-1", "page must be a positive integer"],
    ["page=abc", "page must be a positive integer"],
    ["limit=0", "limit must be at least 1"],
    ["limit=101", "limit must be at most 100"],
    ["limit=1.5", "limit must be a positive integer"],
    ["sort=name", "property sort should not exist"],
  ])("GET /tenants?%s is a 400", async (query, message) => {
    const owner = await register();
    expectError(await call(`${T}?${query}`, { token: owner.accessToken }), 400, (body) =>
      expect(body).toContain(message),
    );
  });
});

describe("GET /tenants/:id, /tenants/slug/:slug", () => {
  it("a member reads the tenant with their role; the header must match :id", async () => {
    const owner = await register();
    const read = await call(`${T}/${owner.tenant.id}`, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      id: owner.tenant.id,
      slug: owner.tenant.slug,
      role: "OWNER",
    });
    const other = await register();
    expectError(
      await call(`${T}/${other.tenant.id}`, { token: owner.accessToken, tenant: owner.tenant.id }),
      403,
      "URL tenant ID does not match x-tenant-id header",
    );
    expectError(
      await call(`${T}/${owner.tenant.id}`, { token: owner.accessToken }),
      400,
      "x-tenant-id header is required",
    );
    expectError(
      await call(`${T}/${owner.tenant.id}`, { token: owner.accessToken, tenant: "not-a-uuid" }),
      400,
      "x-tenant-id must be a valid UUID",
    );
    expectError(
      await call(`${T}/not-a-uuid`, { token: owner.accessToken, tenant: owner.tenant.id }),
      400,
      (message) => expect(message).toEqual(["id must be a valid UUID"]),
    );
  });

  it("slug lookup: full tenant for members, id/name/slug for others, 404 when unknown", async () => {
    const owner = await register();
    const stranger = await register();
    const mine = await call(`${T}/slug/${owner.tenant.slug}`, { token: owner.accessToken });
    expect(mine.body).toMatchObject({ id: owner.tenant.id, role: "OWNER", metadata: {} });
    const theirs = await call(`${T}/slug/${owner.tenant.slug}`, { token: stranger.accessToken });
    expect(theirs.status).toBe(200);
    expect(theirs.body).toEqual({
      id: owner.tenant.id,
      name: owner.tenant.name,
      slug: owner.tenant.slug,
    });
    const missing = uniqueSlug();
    expectError(
      await call(`${T}/slug/${missing}`, { token: owner.accessToken }),
      404,
      `Tenant with slug "${missing}" not found`,
    );
  });
});

describe("PATCH and DELETE /tenants/:id", () => {
  it("OWNER/ADMIN rename and replace metadata; status and slug cannot be patched", async () => {
    const owner = await register();
    const admin = await addMember(owner, "ADMIN");
    const patched = await call(`${T}/${owner.tenant.id}`, {
      method: "PATCH",
      token: admin.accessToken,
      tenant: owner.tenant.id,
      body: { name: "Renamed", metadata: { tier: "gold" } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      name: "Renamed",
      metadata: { tier: "gold" },
      status: "ACTIVE",
    });
    expectError(
      await call(`${T}/${owner.tenant.id}`, {
        method: "PATCH",
        token: owner.accessToken,
        tenant: owner.tenant.id,
        body: { status: "CANCELLED", slug: "other" },
      }),
      400,
      (message) =>
        expect(message).toEqual([
          "property status should not exist",
          "property slug should not exist",
        ]),
    );
  });

  it("OWNER cancels: CANCELLED, keys revoked, then readable but not changeable", async () => {
    const owner = await register();
    const key = await call("/api/v1/api-keys", {
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { name: "ci" },
    });
    expect(key.status).toBe(201);
    const cancelled = await call(`${T}/${owner.tenant.id}`, {
      method: "DELETE",
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ id: owner.tenant.id, status: "CANCELLED" });
    const keys = await call("/api/v1/api-keys", {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(keys.status).toBe(200);
    expect(keys.body.data[0]).toMatchObject({ id: key.body.id, status: "REVOKED" });
    expectError(
      await call("/api/v1/api-keys/current", { token: key.body.key }),
      401,
      "API key not found or revoked",
    );
    expect(
      (await call(`${T}/${owner.tenant.id}`, { token: owner.accessToken, tenant: owner.tenant.id }))
        .status,
    ).toBe(200);
    for (const attempt of [
      call(`${T}/${owner.tenant.id}`, {
        method: "PATCH",
        token: owner.accessToken,
        tenant: owner.tenant.id,
        body: { name: "x" },
      }),
      call(`${T}/${owner.tenant.id}`, {
        method: "DELETE",
        token: owner.accessToken,
        tenant: owner.tenant.id,
      }),
      call("/api/v1/api-keys", {
        token: owner.accessToken,
        tenant: owner.tenant.id,
        body: { name: "new" },
      }),
    ]) {
      expectError(await attempt, 403, "Tenant is cancelled: it can be read but not changed");
    }
  });

  it("a SUSPENDED tenant is read-only too", async () => {
    const owner = await register();
    await db()
      .prepare("UPDATE tenants SET status = 'SUSPENDED' WHERE id = ?")
      .bind(owner.tenant.id)
      .run();
    expect(
      (
        await call(`${T}/${owner.tenant.id}/members`, {
          token: owner.accessToken,
          tenant: owner.tenant.id,
        })
      ).status,
    ).toBe(200);
    expectError(
      await call(`${T}/${owner.tenant.id}`, {
        method: "PATCH",
        token: owner.accessToken,
        tenant: owner.tenant.id,
        body: { name: "x" },
      }),
      403,
      "Tenant is suspended: it can be read but not changed",
    );
  });
});

describe("memberships", () => {
  it("lists members; managers change roles; only an OWNER touches ownership", async () => {
    const owner = await register();
    const admin = await addMember(owner, "ADMIN");
    const dev = await addMember(owner, "DEVELOPER");
    const members = await call(`${T}/${owner.tenant.id}/members`, {
      token: dev.accessToken,
      tenant: owner.tenant.id,
    });
    expect(members.status).toBe(200);
    expect(members.body.data.map((m: { role: string }) => m.role)).toEqual([
      "OWNER",
      "ADMIN",
      "DEVELOPER",
    ]);

    const path = (userId: string) => `${T}/${owner.tenant.id}/members/${userId}`;
    const promoted = await call(path(dev.id), {
      method: "PATCH",
      token: admin.accessToken,
      tenant: owner.tenant.id,
      body: { role: "BILLING" },
    });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toEqual({ userId: dev.id, tenantId: owner.tenant.id, role: "BILLING" });
    expectError(
      await call(path(dev.id), {
        method: "PATCH",
        token: admin.accessToken,
        tenant: owner.tenant.id,
        body: { role: "OWNER" },
      }),
      403,
      "Only an OWNER can grant or take away ownership",
    );
    expectError(
      await call(path(owner.user.id), {
        method: "PATCH",
        token: admin.accessToken,
        tenant: owner.tenant.id,
        body: { role: "ADMIN" },
      }),
      403,
    );
    expectError(
      await call(path(admin.id), {
        method: "PATCH",
        token: dev.accessToken,
        tenant: owner.tenant.id,
        body: { role: "DEVELOPER" },
      }),
      403,
      "This action requires one of these roles: OWNER, ADMIN",
    );
    expectError(
      await call(path(dev.id), {
        method: "PATCH",
        token: owner.accessToken,
        tenant: owner.tenant.id,
        body: { role: "KING" },
      }),
      400,
    );
    const stranger = await register();
    expectError(
      await call(path(stranger.user.id), {
        method: "PATCH",
        token: owner.accessToken,
        tenant: owner.tenant.id,
        body: { role: "ADMIN" },
      }),
      404,
    );
  });

  it("the last OWNER can be neither demoted nor removed; with two owners one may go", async () => {
    const owner = await register();
    const path = (userId: string) => `${T}/${owner.tenant.id}/members/${userId}`;
    expectError(
      await call(path(owner.user.id), {
        method: "PATCH",
        token: owner.accessToken,
        tenant: owner.tenant.id,
        body: { role: "ADMIN" },
      }),
      409,
      "The last OWNER of a tenant cannot be demoted",
    );
    expectError(
      await call(path(owner.user.id), {
        method: "DELETE",
        token: owner.accessToken,
        tenant: owner.tenant.id,
      }),
      409,
      "The last OWNER of a tenant cannot be removed",
    );
    const second = await addMember(owner, "ADMIN");
    const made = await call(path(second.id), {
      method: "PATCH",
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { role: "OWNER" },
    });
    expect(made.body.role).toBe("OWNER");
    // Both owners demote each other at once: the tenant keeps at least one.
    const results = await Promise.all([
      call(path(second.id), {
        method: "PATCH",
        token: owner.accessToken,
        tenant: owner.tenant.id,
        body: { role: "ADMIN" },
      }),
      call(path(owner.user.id), {
        method: "PATCH",
        token: second.accessToken,
        tenant: owner.tenant.id,
        body: { role: "ADMIN" },
      }),
    ]);
    const owners = await db()
      .prepare("SELECT count(*) AS n FROM memberships WHERE tenant_id = ? AND role = 'OWNER'")
      .bind(owner.tenant.id)
      .first<{ n: number }>();
    expect(owners?.n).toBeGreaterThanOrEqual(1);
    expect(results.map((r) => r.status).sort()).toContain(200);
  });

  it("managers remove members, members may leave, and removed members lose access", async () => {
    const owner = await register();
    const dev = await addMember(owner, "DEVELOPER");
    const billing = await addMember(owner, "BILLING");
    const path = (userId: string) => `${T}/${owner.tenant.id}/members/${userId}`;
    expectError(
      await call(path(billing.id), {
        method: "DELETE",
        token: dev.accessToken,
        tenant: owner.tenant.id,
      }),
      403,
    );
    const removed = await call(path(dev.id), {
      method: "DELETE",
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(removed.status).toBe(200);
    expectError(
      await call(`${T}/${owner.tenant.id}`, { token: dev.accessToken, tenant: owner.tenant.id }),
      403,
    );
    const left = await call(path(billing.id), {
      method: "DELETE",
      token: billing.accessToken,
      tenant: owner.tenant.id,
    });
    expect(left.status).toBe(200);
    expectError(
      await call(path(billing.id), {
        method: "DELETE",
        token: owner.accessToken,
        tenant: owner.tenant.id,
      }),
      404,
    );
  });
});
